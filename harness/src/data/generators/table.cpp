// The data generator table (data.h): each generator's descriptor comes from its own file in this
// folder; this list is the one place that names them all, in the order validation and the docs
// list them. Adding a generator: its file, one line here, one row of docs/scenarios.md's table
// (generator_docs_row says it; TablesTest checks it).
#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "making.h"
#include "distmetrics/runtime/text.h"

// X(name): the descriptor `DataGenerator name()` defined in name.cpp.
#define DISTMETRICS_EACH_GENERATOR(X) \
  X(binary)                           \
  X(multiclass)                       \
  X(multilabel)                       \
  X(regression)                       \
  X(segmentation)                     \
  X(scores)                           \
  X(values)                           \
  X(images)                           \
  X(retrieval)                        \
  X(text)                             \
  X(token_logits)                     \
  X(waveforms)                        \
  X(distributions)                    \
  X(fairness)                         \
  X(detection)

namespace distmetrics::harness {
namespace generators {
#define DISTMETRICS_DECLARE_GENERATOR(name) DataGenerator name();
DISTMETRICS_EACH_GENERATOR(DISTMETRICS_DECLARE_GENERATOR)
#undef DISTMETRICS_DECLARE_GENERATOR
}  // namespace generators

namespace {
namespace DISTMETRICS_UNITY_ID {

using nlohmann::json;

// A parameter's default as the docs show it, then its other choices: "0.5", "required", "[]",
// "probabilities; logits, labels".
std::string default_text(const runtime::ParamDecl& p) {
  if (p.required()) return "required";
  std::string text = p.default_value.is_string() ? p.default_value.get<std::string>() : p.default_value.dump();
  std::string others;
  for (const auto& choice : p.choices)
    if (choice != text) others += (others.empty() ? "; " : ", ") + choice;
  return text + others;
}

bool is_common(const runtime::ParamDecl& p) {
  const auto& common = common_generator_params();
  return std::any_of(common.begin(), common.end(), [&](const auto& c) { return c.name == p.name; });
}

}  // namespace DISTMETRICS_UNITY_ID
}  // namespace

const std::vector<runtime::ParamDecl>& common_generator_params() {
  using generators::drawn;
  using generators::param;
  static const std::vector<runtime::ParamDecl> params = {
      param("weights", "string",
            "per-sample weights: none, uniform (real, in [weight_low, weight_high]) or integers (whole numbers in "
            "[weight_low, weight_high])",
            "none", {"none", "uniform", "integers"}),
      drawn(param("weight_low", "float", "smallest weight", 1.0), {0.0, 1.0, 2.0}),
      drawn(param("weight_high", "float", "largest weight", 2.0), {2.0, 1e3, 4194304.0})};
  return params;
}

const std::vector<DataGenerator>& data_generators() {
#define DISTMETRICS_LIST_GENERATOR(name) generators::name(),
  static const std::vector<DataGenerator> table = {DISTMETRICS_EACH_GENERATOR(DISTMETRICS_LIST_GENERATOR)};
#undef DISTMETRICS_LIST_GENERATOR
  return table;
}

const DataGenerator* find_generator(const std::string& name) {
  for (const auto& g : data_generators())
    if (g.name == name) return &g;
  return nullptr;
}

std::vector<std::string> generator_names() {
  std::vector<std::string> names;
  for (const auto& g : data_generators()) names.push_back(g.name);
  return names;
}

nlohmann::json resolve_generator_params(const std::string& generator, const nlohmann::json& params) {
  using namespace DISTMETRICS_UNITY_ID;
  const auto* g = find_generator(generator);
  if (!g)
    throw runtime::FieldError("", "unknown data generator '" + generator + "'" +
                                      runtime::did_you_mean(generator, generator_names()) +
                                      " (known: " + runtime::quoted_list(generator_names()) + ")");
  const std::string owner = "generator '" + generator + "'";
  auto resolved = runtime::resolve_declared_params(owner, g->params, params);
  if (g->check) g->check(owner, resolved);
  if (!(resolved.at("weight_high").get<double>() >= resolved.at("weight_low").get<double>()))
    throw runtime::FieldError("weight_high", owner + ": weight_high must be >= weight_low");
  if (!std::isfinite(resolved.at("weight_low").get<double>()) || !std::isfinite(resolved.at("weight_high").get<double>()))
    throw runtime::FieldError("weight_low", owner + ": weights must be finite");
  return resolved;
}

std::int64_t generator_elements_per_sample(const std::string& generator, const nlohmann::json& params) {
  const auto* g = find_generator(generator);
  if (g && g->elements_per_sample) return g->elements_per_sample(params);
  return 2 * generators::size_param(params, "dims", 1) + 1;
}

std::string generator_docs_row(const DataGenerator& g) {
  using namespace DISTMETRICS_UNITY_ID;
  auto produced = [&](const std::string& name) {
    for (const auto& input : g.produces)
      if (input.name == name) return input.text;
    return std::string("none");
  };
  std::string params;
  for (const auto& p : g.params) {
    if (is_common(p)) continue;
    params += (params.empty() ? "" : ", ") + ("`" + p.name + "` (" + default_text(p) + ")");
  }
  return "| `" + g.name + "` | " + produced("input") + " | " + produced("target") + " | " + params + " |";
}

std::vector<std::string> generator_table_problems(const std::vector<DataGenerator>& table) {
  std::vector<std::string> problems;
  std::set<std::string> names;
  for (const auto& g : table) {
    auto problem = [&](const std::string& what) { problems.push_back("generator '" + g.name + "': " + what); };
    if (g.name.empty()) problem("no name");
    if (!names.insert(g.name).second) problem("its name is used twice");
    if (g.description.empty()) problem("no description");
    if (g.produces.empty()) problem("produces nothing (no InputDecl)");
    for (const auto& input : g.produces)
      if (input.name.empty() || input.shape.empty() || input.dtype.empty() || input.text.empty())
        problem("an input without its name, shape, dtype or text");
    if (g.carrier == DataCarrier::Tensors && !g.make) problem("makes tensors without a make function");
    if (g.carrier == DataCarrier::Structured && g.python.empty()) problem("structured samples without the Python that makes them");
    if (!g.class_count.empty() &&
        std::none_of(g.params.begin(), g.params.end(), [&](const auto& p) { return p.name == g.class_count && p.type == "int"; }))
      problem("class_count '" + g.class_count + "' is not an int parameter of it");
    for (const auto& p : g.params) {
      if ((p.min || p.max) && p.type != "int" && p.type != "float") problem("parameter '" + p.name + "' has a range but is no number");
      if (p.min && p.max && *p.min > *p.max) problem("parameter '" + p.name + "': its range is empty");
    }
    for (const auto& common : common_generator_params())
      if (std::none_of(g.params.begin(), g.params.end(), [&](const auto& p) { return p.name == common.name; }))
        problem("lacks the common parameter '" + common.name + "' (with_common)");
  }
  return problems;
}

}  // namespace distmetrics::harness
