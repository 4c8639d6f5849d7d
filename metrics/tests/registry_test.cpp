// The reference registry: names, parameter resolution and its error messages.
#include "distmetrics/metrics/registry.h"

#include <gtest/gtest.h>

#include "distmetrics/metrics/errors.h"
#include "test_support.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

namespace distmetrics::metrics {
namespace {

const MetricRegistry& registry() { return MetricRegistry::reference(); }

template <typename Fn>
std::string param_error(Fn&& fn) {
  try {
    fn();
  } catch (const ParamError& e) {
    return e.what();
  }
  return "";
}

TEST(RegistryTest, EveryMetricHasADescriptionAndDescribedParameters) {
  for (const std::string& name : registry().names()) {
    SCOPED_TRACE(name);
    const MetricSpec* spec = registry().find(name);
    ASSERT_NE(spec, nullptr);
    EXPECT_EQ(spec->name, name);
    EXPECT_FALSE(spec->description.empty());
    EXPECT_FALSE(spec->family.empty());
    for (const ParamSpec& p : spec->params) {
      EXPECT_FALSE(p.description.empty()) << p.name;
      EXPECT_FALSE(p.type.empty()) << p.name;
    }
  }
}

TEST(RegistryTest, KnowsEveryReferenceMetric) {
  const std::vector<std::string> expected = {
      "Accuracy", "AveragePrecision", "CohenKappa", "Composite", "ConfusionMatrix", "Dice", "F1", "Fbeta",
      "GeometricAverage", "IoU", "Loss", "MaximumAbsoluteError", "MeanAbsoluteError", "MeanIoU",
      "MeanPairwiseDistance", "MeanSquaredError", "PSNR", "PearsonCorrelation", "Precision", "R2Score", "Recall",
      "RocAuc", "RootMeanSquaredError", "RunningAverage", "TopKCategoricalAccuracy", "Average"};
  std::vector<std::string> sorted = expected;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(registry().names(), sorted);
  // Every registered metric has reference cases (tools/reference/generate_reference.py).
  EXPECT_EQ(testing::reference_metric_names(), sorted);
}

TEST(RegistryTest, ResolveFillsDefaults) {
  const auto p = registry().resolve_params("Precision", {{"task", "multiclass"}, {"num_classes", 4}});
  EXPECT_EQ(p.at("average"), "macro");
  EXPECT_EQ(p.at("threshold"), 0.5);
  EXPECT_EQ(p.at("zero_division"), 0.0);
  EXPECT_EQ(p.at("num_classes"), 4);
  // An integer given for a float parameter is a number like any other.
  EXPECT_TRUE(registry().resolve_params("Accuracy", {{"task", "binary"}, {"threshold", 1}}).at("threshold").is_number_float());
}

TEST(RegistryTest, UnknownNamesAreRejectedWithCloseNamesSuggested) {
  EXPECT_EQ(param_error([] { registry().resolve_params("Accuracy", {{"task", "binary"}, {"num_clases", 3}}); }),
            "metric 'Accuracy' has no parameter 'num_clases'; did you mean 'num_classes'? (it takes 'task', "
            "'num_classes', 'threshold', 'top_k')");
  const std::string unknown_metric = param_error([] { registry().make("Acuracy", {}); });
  EXPECT_EQ(unknown_metric.rfind("unknown metric 'Acuracy'; did you mean 'Accuracy'? (known: 'Accuracy', ", 0), 0u)
      << unknown_metric;
}

TEST(RegistryTest, TorchmetricsNamesAreAliases) {
  // torchmetrics' multilabel metrics say num_labels where these say num_classes.
  const auto p = registry().resolve_params("Precision", {{"task", "multilabel"}, {"num_labels", 5}});
  EXPECT_EQ(p.at("num_classes"), 5);
  EXPECT_FALSE(p.contains("num_labels"));
  EXPECT_EQ(param_aliases("num_classes"), std::vector<std::string>{"num_labels"});
  EXPECT_EQ(param_error([] {
              registry().resolve_params("Precision", {{"task", "multilabel"}, {"num_labels", 5}, {"num_classes", 5}});
            }),
            "Precision: parameter \"num_labels\": \"num_labels\" is another name for \"num_classes\", which is given "
            "too: give only one of them");
  // A metric without num_classes takes no num_labels either.
  EXPECT_NE(param_error([] { registry().resolve_params("MeanSquaredError", {{"num_labels", 5}}); }).find("has no parameter 'num_labels'"),
            std::string::npos);
}

TEST(RegistryTest, TypesChoicesAndRequiredParametersAreChecked) {
  EXPECT_EQ(param_error([] { registry().resolve_params("Accuracy", {{"task", "binary"}, {"top_k", 1.5}}); }),
            "metric 'Accuracy' parameter 'top_k': expected an integer, got 1.5");
  EXPECT_EQ(param_error([] { registry().resolve_params("Accuracy", {{"task", "multiclas"}}); }),
            "metric 'Accuracy' parameter 'task': 'multiclas' is not one of 'binary', 'multiclass', 'multilabel'; "
            "did you mean 'multiclass'?");
  EXPECT_EQ(param_error([] { registry().resolve_params("Accuracy", {{"num_classes", 3}}); }),
            "metric 'Accuracy' needs parameter 'task' (a string: binary, multiclass or multilabel (see the Batch "
            "layout of each))");
  EXPECT_EQ(param_error([] { registry().resolve_params("Accuracy", {{"task", 3}}); }),
            "metric 'Accuracy' parameter 'task': expected a string, got 3");
  EXPECT_EQ(param_error([] { registry().resolve_params("Accuracy", nlohmann::json::array()); }),
            "metric 'Accuracy': parameters must be a table, got []");
}

TEST(RegistryTest, ConstructorChecksBecomeParamErrors) {
  EXPECT_EQ(param_error([] { registry().make("Accuracy", {{"task", "multiclass"}}); }),
            "Accuracy: parameter \"num_classes\": expected at least 2 for task multiclass, got 0");
}

TEST(RegistryTest, MakesWorkingMetrics) {
  auto m = registry().make("Accuracy", {{"task", "binary"}});
  EXPECT_EQ(m->name(), "Accuracy");
  Batch b;
  b.input = at::tensor({0.9, 0.1}, at::kDouble);
  b.target = at::tensor({1, 1}, at::kLong);
  m->update(b);
  EXPECT_EQ(m->compute().scalar(), 0.5);
}

std::string read_file(const std::string& relative) {
  std::ifstream in(std::string(DISTMETRICS_SOURCE_DIR) + "/" + relative);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The rows of docs/metrics.md's registry table ("| metric | parameters ..."): metric name ->
// the backticked identifiers of its parameters column.
std::map<std::string, std::set<std::string>> documented_metrics(const std::string& doc) {
  std::map<std::string, std::set<std::string>> rows;
  std::istringstream in(doc);
  bool inside = false;
  const std::regex identifier("`([a-z_][a-z0-9_]*)`");
  for (std::string line; std::getline(in, line);) {
    if (!inside) {
      inside = line.rfind("| metric | parameters", 0) == 0;
      continue;
    }
    if (line.rfind("|", 0) != 0) break;
    if (line.rfind("| ---", 0) == 0) continue;
    const auto second = line.find('|', 1), third = line.find('|', second + 1);
    std::string name = line.substr(1, second - 1);
    name.erase(std::remove_if(name.begin(), name.end(), [](char c) { return c == '`' || c == ' '; }), name.end());
    const std::string params = line.substr(second + 1, third - second - 1);
    auto& names = rows[name];
    for (std::sregex_iterator it(params.begin(), params.end(), identifier), end; it != end; ++it) names.insert((*it)[1]);
  }
  return rows;
}

// docs/metrics.md lists exactly the registry's metrics, each with exactly its parameters;
// docs/writing-a-metric.md shows the example that example_metric_test.cpp compiles.
TEST(RegistryTest, DocumentationMatchesTheRegistryAndTheCompiledExample) {
  const auto documented = documented_metrics(read_file("docs/metrics.md"));
  std::map<std::string, std::set<std::string>> registered;
  for (const std::string& name : registry().names()) {
    auto& params = registered[name];
    for (const ParamSpec& p : registry().find(name)->params) params.insert(p.name);
  }
  EXPECT_EQ(documented, registered) << "docs/metrics.md's registry table and MetricRegistry::reference() differ";
  const std::string source = read_file("metrics/tests/example_metric_test.cpp");
  const std::string begin = "// --- begin example (docs/writing-a-metric.md) ---\n", end = "// --- end example ---";
  const std::size_t from = source.find(begin) + begin.size();
  const std::string example = source.substr(from, source.find(end) - from);
  ASSERT_GT(example.size(), 100u);
  EXPECT_NE(read_file("docs/writing-a-metric.md").find(example), std::string::npos)
      << "docs/writing-a-metric.md does not show the example of example_metric_test.cpp verbatim";
}

TEST(RegistryTest, DuplicateNamesAreRefused) {
  MetricRegistry r;
  MetricSpec spec{"X", "test", "a test metric", {}, [](const nlohmann::json&) { return std::unique_ptr<Metric>(); }};
  r.add(spec);
  EXPECT_THROW(r.add(spec), std::invalid_argument);
}

}  // namespace
}  // namespace distmetrics::metrics
