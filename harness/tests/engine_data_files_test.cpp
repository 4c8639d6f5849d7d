// A team's own data and reference in the scenario loader: a .pt file of tensors becomes the
// global data (dtypes, rows, num_samples, a scenario-relative path), every bad tensor dict is
// refused with what is wrong, and a [reference] or data.python needs both Python hooks (installed
// by a higher layer; faked here) and the command line's permission. The files torch.save and
// NumPy write, and the real Python, are tested end to end in pyhost/tests (pyhost_scenario_data).
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "distmetrics/harness/data_files.h"
#include "distmetrics/harness/scenario.h"
#include "distmetrics/harness/scenario_python.h"

namespace dh = distmetrics::harness;
namespace fs = std::filesystem;

namespace {

fs::path temp_folder(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("distmetrics-data-test-" + name + "-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

std::string diagnostics_text(const dh::LoadResult& r) {
  std::string out;
  for (const auto& d : r.diagnostics) out += d.to_string() + "\n";
  return out;
}

const char* kOnFile = R"(description = "MAE on a file"
[metric]
name = "MeanAbsoluteError"
[data]
file = "inputs/data.pt"
batch_size = 4
%s
[variants]
world_sizes = [1, 2]
backends = ["gloo"]
)";

std::string on_file(const std::string& extra, const std::string& metric = "MeanAbsoluteError") {
  std::string text = kOnFile;
  text.replace(text.find("%s"), 2, extra);
  text.replace(text.find("MeanAbsoluteError"), 17, metric);
  return text;
}

// Binary accuracy: probabilities and 0/1 labels.
const std::string kBinaryAccuracy = "Accuracy\"\nparams = { task = \"binary\" }\n#\"";

}  // namespace

TEST(DataFiles, APtFileBecomesTheGlobalDataRelativeToTheScenario) {
  const auto dir = temp_folder("pt");
  fs::create_directories(dir / "inputs");
  const auto input = at::arange(10, at::kDouble) * 0.1;
  const auto target = at::remainder(at::arange(10, at::kInt), 2);
  dh::write_tensor_file((dir / "inputs" / "data.pt").string(), {{"input", input}, {"target", target}});

  auto r = dh::load_scenario_text(on_file("", kBinaryAccuracy), (dir / "mae.toml").string(), "mae");
  ASSERT_TRUE(r.scenario) << diagnostics_text(r);
  EXPECT_EQ(r.scenario->data.file, (dir / "inputs" / "data.pt").string());
  EXPECT_EQ(r.scenario->data.num_samples, 10);
  EXPECT_EQ(r.scenario->data.source_text(), "file '" + (dir / "inputs" / "data.pt").string() + "'");
  const auto data = dh::generate_data(r.scenario->data);
  ASSERT_EQ(data.size(), 10);
  EXPECT_EQ(data.input.scalar_type(), at::kFloat);  // data.dtype, float32 by default
  EXPECT_EQ(data.target.scalar_type(), at::kLong);  // labels
  EXPECT_FLOAT_EQ(data.input[7].item<float>(), 0.7f);
  EXPECT_EQ(data.target[9].item<std::int64_t>(), 1);
  EXPECT_DOUBLE_EQ(data.sort_key[4], 0.0);  // the target, for the skewed shard policy
  EXPECT_DOUBLE_EQ(data.sort_key[5], 1.0);
  // The ranks receive the path and read it themselves.
  const auto back = dh::Scenario::from_json(r.scenario->to_json());
  EXPECT_EQ(back.data.file, r.scenario->data.file);

  // num_samples keeps the first rows; more than the file holds is an error on data.file.
  r = dh::load_scenario_text(on_file("num_samples = 6\ndtype = \"float64\"", kBinaryAccuracy), (dir / "mae.toml").string(), "mae");
  ASSERT_TRUE(r.scenario) << diagnostics_text(r);
  const auto first = dh::generate_data(r.scenario->data);
  EXPECT_EQ(first.size(), 6);
  EXPECT_EQ(first.input.scalar_type(), at::kDouble);
  r = dh::load_scenario_text(on_file("num_samples = 11", kBinaryAccuracy), (dir / "mae.toml").string(), "mae");
  ASSERT_EQ(r.diagnostics.size(), 1u) << diagnostics_text(r);
  EXPECT_EQ(r.diagnostics[0].line, 7);  // data.file
  EXPECT_EQ(r.diagnostics[0].field, "data.file");
  EXPECT_NE(r.diagnostics[0].message.find("has 10 samples, fewer than data.num_samples = 11"), std::string::npos);

  // A file takes no generator parameters; one source only.
  r = dh::load_scenario_text(on_file("[data.params]\nn = 3"), (dir / "mae.toml").string(), "mae");
  ASSERT_FALSE(r.scenario);
  EXPECT_NE(diagnostics_text(r).find("data.params: 'data.params' are a generator's parameters"), std::string::npos);
  std::string two = on_file("");
  two.replace(two.find("batch_size"), 0, "generator = \"regression\"\n");
  r = dh::load_scenario_text(two, (dir / "mae.toml").string(), "mae");
  EXPECT_NE(diagnostics_text(r).find("give one of 'data.generator', 'data.file' and 'data.python', not several"),
            std::string::npos);
  fs::remove_all(dir);
}

TEST(DataFiles, TensorDictsWithWrongKeysRowsOrKindsAreRefusedWithWhatIsWrong) {
  const auto x = at::zeros({5, 2});
  auto refused = [](const dh::TensorMap& tensors) {
    try {
      dh::dataset_from_tensors(tensors, "float32", -1, "file 'x.pt'");
    } catch (const dh::DataFileError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(refused({{"input", x}, {"targets", at::zeros({5})}}),
            "file 'x.pt' has 'targets', which is not a data key; did you mean 'target'? (known: 'input', 'target', 'weight')");
  EXPECT_EQ(refused({{"target", at::zeros({5})}}),
            "file 'x.pt' has no 'input' (it has 'target'): give 'input' (rows are samples), and 'target' and 'weight' "
            "if the metric takes them");
  EXPECT_EQ(refused({{"input", x}, {"target", at::zeros({4})}}),
            "file 'x.pt': 'target' is float32 [4] but 'input' has 5 rows; every tensor needs one row per sample");
  EXPECT_EQ(refused({{"input", x}, {"weight", at::ones({5, 1})}}),
            "file 'x.pt': 'weight' is float32 [5, 1]; it must be one number per sample, shaped [N]");
  EXPECT_EQ(refused({{"input", at::zeros({})}}),
            "file 'x.pt': 'input' is a scalar (float32 []); rows are samples: give at least one dimension");
  EXPECT_NE(refused({{"input", at::zeros({5}, at::kComplexFloat)}}).find("give real numbers"), std::string::npos);
  // Booleans are labels; the weights follow the floating-point dtype.
  const auto data = dh::dataset_from_tensors({{"input", at::ones({3}, at::kBool)}, {"weight", at::ones({3}, at::kDouble)}},
                                             "float32", -1, "x");
  EXPECT_EQ(data.input.scalar_type(), at::kLong);
  EXPECT_EQ(data.weight.scalar_type(), at::kFloat);
  EXPECT_FALSE(data.target.defined());
}

TEST(ScenarioPython, AReferenceNeedsPythonHooksAndTheCommandLinesPermission) {
  const auto dir = temp_folder("ref");
  fs::create_directories(dir / "inputs");
  const auto input = at::tensor({1.0, 2.0, 4.0, 8.0}, at::kDouble);
  const auto target = at::tensor({1.0, 1.0, 1.0, 1.0}, at::kDouble);
  dh::write_tensor_file((dir / "inputs" / "data.pt").string(), {{"input", input}, {"target", target}});
  const std::string path = (dir / "mae.toml").string();
  const std::string with_reference = on_file("[reference]\npython = \"refs:mae\"\nkwargs = { scale = 2.0 }");
  auto only_error = [&](const dh::LoadResult& r) {
    EXPECT_EQ(r.diagnostics.size(), 1u) << diagnostics_text(r);
    return r.diagnostics.empty() ? std::string() : r.diagnostics[0].to_string();
  };

  // Not built with Python: said on the field.
  EXPECT_EQ(only_error(dh::load_scenario_text(with_reference, path, "mae")),
            path + ":8: reference.python: this distmetrics was built without Python support (python3-dev, pybind11-dev, "
                   "python3-torch), so it cannot call the Python a scenario names");

  // Built (hooks of a higher layer, faked: the mean absolute error, times the `scale` keyword) but not allowed.
  int reference_calls = 0;
  dh::ScenarioPython hooks;
  hooks.check = [](const std::string& spec) {
    if (spec != "refs:mae") throw std::runtime_error("'" + spec + "': no such callable");
  };
  hooks.reference = [&reference_calls](const std::string&, const nlohmann::json& kwargs, const distmetrics::metrics::Batch& all) {
    ++reference_calls;
    return nlohmann::json((all.input - all.target).abs().mean().item<double>() * kwargs.at("scale").get<double>());
  };
  dh::install_scenario_python(hooks);
  EXPECT_EQ(only_error(dh::load_scenario_text(with_reference, path, "mae")),
            path + ":8: reference.python: a scenario file cannot make distmetrics run code: give --allow-python to let "
                   "scenario files call the Python they name (data.python, data.structured, reference.python)");

  dh::allow_scenario_python(true);
  auto r = dh::load_scenario_text(with_reference, path, "mae");
  ASSERT_TRUE(r.scenario) << diagnostics_text(r);
  EXPECT_EQ(r.scenario->reference->python, "refs:mae");
  EXPECT_EQ(r.scenario->reference->kwargs, (nlohmann::json{{"scale", 2.0}}));
  EXPECT_TRUE(r.scenario->checks("agrees_with_reference"));  // by default, when a [reference] is given
  EXPECT_TRUE(r.scenario->names_python());
  EXPECT_EQ(dh::Scenario::from_json(r.scenario->to_json()).reference->kwargs, r.scenario->reference->kwargs);
  // Called once on the whole data while validating, then from memory.
  EXPECT_EQ(reference_calls, 1);
  EXPECT_DOUBLE_EQ(dh::python_reference_value(*r.scenario, dh::generate_data(r.scenario->data)).get<double>(), 5.5);
  EXPECT_EQ(reference_calls, 1);

  // A bad name, a callable the hooks refuse, a reference without its property or the reverse.
  EXPECT_EQ(only_error(dh::load_scenario_text(on_file("[reference]\npython = \"refs.mae\""), path, "mae")),
            path + ":8: reference.python: 'refs.mae' is not a Python callable's name: write 'module:attribute', e.g. "
                   "'sklearn.metrics:f1_score'");
  EXPECT_EQ(only_error(dh::load_scenario_text(on_file("[reference]\npython = \"refs:nope\""), path, "mae")),
            path + ":8: reference.python: 'refs:nope': no such callable");
  std::string listed = "properties = [\"ranks_agree\"]\n" + with_reference;
  EXPECT_NE(only_error(dh::load_scenario_text(listed, path, "mae"))
                .find("reference: a [reference] is given but 'agrees_with_reference' is not in 'properties'"),
            std::string::npos);
  listed = "properties = [\"agrees_with_reference\"]\n" + on_file("");
  EXPECT_NE(only_error(dh::load_scenario_text(listed, path, "mae"))
                .find("properties: 'agrees_with_reference' needs a [reference] table with the value"),
            std::string::npos);
  fs::remove_all(dir);
}
