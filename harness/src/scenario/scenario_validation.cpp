#include "scenario_validation.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "distmetrics/harness/input_dtype.h"
#include "distmetrics/harness/data.h"
#include "distmetrics/harness/data_files.h"
#include "distmetrics/harness/scenario_python.h"
#include "distmetrics/harness/metric_catalog.h"
#include "distmetrics/harness/placement.h"
#include "distmetrics/harness/property.h"
#include "distmetrics/harness/shard.h"
#include "distmetrics/metrics/errors.h"
#include "distmetrics/runtime/backends.h"
#include "distmetrics/runtime/params.h"
#include "distmetrics/runtime/text.h"

namespace distmetrics::harness::detail {
namespace {

using nlohmann::json;

std::vector<metrics::ParamSpec> metric_param_specs(const metrics::MetricRegistry& registry, const std::string& name) {
  const auto* spec = registry.find(name);
  return spec ? spec->params : std::vector<metrics::ParamSpec>{};
}

}  // namespace

void validate_metric(ScenarioReader& reader, const toml::table& root, Scenario& s, const toml::table* metric_table,
                     bool& metric_ok) {
  metric_ok = false;
  if (!metric_table) return;
  reader.open_table(*metric_table, "metric", s);
  const auto name = reader.read_string(*metric_table, "metric.name", metric_table);
  const toml::table* params_table = reader.table_field(*metric_table, "params", "metric.params", false, metric_table);
  if (!name) return;
  s.metric = *name;
  const metrics::MetricRegistry* registry = nullptr;
  try {
    registry = MetricCatalog::instance().registry_for(*name);
  } catch (const std::exception& e) {  // a plugin name that is not allowed, or cannot be loaded
    reader.error_at(reader.line_of(metric_table, "name"), "metric.name", e.what());
    return;
  }
  if (!registry) {
    const auto names = MetricCatalog::instance().metric_names();
    const std::string where_listed =
        "`distmetrics metrics` lists the reference and plugin metrics, a --python source its registrations";
    reader.error_at(reader.line_of(metric_table, "name"), "metric.name",
                    "unknown metric '" + *name + "'" + runtime::did_you_mean(*name, names) + " (known: " +
                        runtime::known_list(names, where_listed) + ")");
    return;
  }
  json given = params_table ? toml_to_json(*params_table) : json::object();
  // Unknown parameter names first, with their own lines and close names.
  std::vector<std::string> known;
  for (const auto& p : metric_param_specs(*registry, *name)) known.push_back(p.name);
  bool unknown = false;
  if (params_table) {
    for (auto&& [key, value] : *params_table) {
      const std::string k(key.str());
      if (std::find(known.begin(), known.end(), k) != known.end()) continue;
      unknown = true;
      reader.error_at(static_cast<int>(key.source().begin.line), "metric.params." + k,
                 runtime::unknown_param_message("metric '" + *name + "'", k, known));
    }
  }
  if (unknown) return;
  try {
    s.metric_params = registry->resolve_params(*name, given);
    // A class count sizes a metric's state up to C x C (a confusion matrix): checked here, before
    // the dry run below builds the metric, so that validating never allocates what it checks.
    for (const char* count : {"num_classes", "num_labels"}) {
      if (!s.metric_params.contains(count) || !s.metric_params.at(count).is_number_integer()) continue;
      const std::int64_t c = s.metric_params.at(count).get<std::int64_t>();
      if (c <= 0 || c <= kMaxElements / c) continue;  // a count that is not positive is the metric's to refuse
      reader.error_at(params_table && params_table->contains(count) ? reader.line_of(params_table, count) : reader.line_of(metric_table, "name"),
                 std::string("metric.params.") + count,
                 std::string(count) + " = " + std::to_string(c) + " would give the metric a state of up to " + count +
                     "² numbers (limit " + std::to_string(kMaxElements) + ", about " +
                     std::to_string(static_cast<std::int64_t>(std::sqrt(double(kMaxElements)))) + " classes): use fewer");
      return;
    }
    metric_ok = true;
  } catch (const std::exception& e) {
    // Point at the parameter the error names (ParamError::field, e.g. "operands.p"), else at the
    // one its message quotes, else at the parameter table.
    std::string field;
    if (const auto* pe = dynamic_cast<const metrics::ParamError*>(&e)) field = pe->field();
    if (field.empty()) {
      const std::string message = e.what();
      for (const auto& k : known)
        if (message.find("'" + k + "'") != std::string::npos || message.find("\"" + k + "\"") != std::string::npos) field = k;
    }
    int line = params_table ? reader.line_of(params_table, "") : reader.line_of(metric_table, "name");
    // Walk the dotted field as deep as the TOML goes.
    const toml::table* t = params_table;
    std::stringstream parts(field);
    for (std::string part; t && std::getline(parts, part, '.');) {
      if (!t->contains(part)) break;
      line = reader.line_of(t, part);
      t = t->get(part)->as_table();
    }
    reader.error_at(line, field.empty() ? "metric.params" : "metric.params." + field, e.what());
  }
  (void)root;
}

namespace {

// data.file, relative to the scenario file's folder; read here (and kept: the engine and the
// ranks of this process read it from memory).
bool read_data_file(ScenarioReader& reader, Scenario& s, const toml::table* data, const std::string& file) {
  try {
    if (file.empty() || file.find('\0') != std::string::npos)
      throw DataFileError("'data.file' must name a .pt or .npz file, got '" + runtime::first_line(file) + "'");
    std::filesystem::path path(file);
    if (path.is_relative()) path = std::filesystem::path(s.file).parent_path() / path;
    s.data.file = std::filesystem::absolute(path).lexically_normal().string();
    if (s.data.structured) {
      if (const auto why = scenario_python_unavailable(); !why.empty()) throw std::runtime_error(why);
      const std::int64_t rows = scenario_python().structured_rows(s.data.file);
      if (s.data.num_samples > rows)
        throw DataFileError("file '" + s.data.file + "' has " + std::to_string(rows) + " samples, fewer than data.num_samples = " +
                            std::to_string(s.data.num_samples) + " (leave num_samples out to use them all)");
      if (s.data.num_samples < 0) s.data.num_samples = rows;
      return true;
    }
    s.data.num_samples = load_data_file(s.data).size();
  } catch (const std::exception& e) {
    reader.error_at(reader.line_of(data, "file"), "data.file", e.what());
    return false;
  }
  return true;
}

// data.python: called once, when the command line allows it, and written to a file the ranks read.
bool run_data_generator(ScenarioReader& reader, Scenario& s, const toml::table* data, const std::string& python) {
  s.data.python = python;
  if (const auto problem = python_callable_spec_problem(python); !problem.empty()) {
    reader.error_at(reader.line_of(data, "python"), "data.python", problem);
    return false;
  }
  try {
    if (const auto why = scenario_python_unavailable(); !why.empty()) throw std::runtime_error(why);
    scenario_python().check(python);
    materialize_python_data(s.data);
  } catch (const std::exception& e) {
    reader.error_at(reader.line_of(data, "python"), "data.python", e.what());
    return false;
  }
  return true;
}

}  // namespace

namespace {

// What [data] gives, read with its fields' checks: the source, the sizes, the dtype; `ok` when
// the sizes, the dtype and the choice of one source are good.
struct DataTable {
  std::optional<std::string> generator, file, python, dtype;
  const toml::table* params = nullptr;
  std::optional<std::int64_t> seed, num_samples, batch_size;
  bool structured = false;
  bool ok = false;
};

// One source (generator, file, python): said when none or several are given.
int count_sources(ScenarioReader& reader, const toml::table& data) {
  const int sources = (data.contains("generator") ? 1 : 0) + (data.contains("file") ? 1 : 0) + (data.contains("python") ? 1 : 0);
  if (sources != 1)
    reader.error(&data, "data",
                 sources == 0 ? "missing required field 'data.generator' (a string): give a generator, or data.file (a .pt "
                                "or .npz file) or data.python (a Python generator)"
                              : "give one of 'data.generator', 'data.file' and 'data.python', not several");
  return sources;
}

// data.structured: the file holds samples of any structure, read by Python (docs/scenarios.md).
bool read_structured(ScenarioReader& reader, const toml::table& data, DataTable& d) {
  const auto* node = data.get("structured");
  if (!node) return true;
  const auto value = reader.read(data, reader.field("data.structured"), &data);
  if (!value) return false;
  d.structured = value->get<bool>();
  if (d.structured && !d.file) {
    reader.error(node, "data.structured",
                 "'data.structured' says how to read data.file; a Python generator's samples are structured when it "
                 "returns lists of them (and a built-in generator's never are)");
    return false;
  }
  return true;
}

DataTable read_data_table(ScenarioReader& reader, const toml::table& data) {
  DataTable d;
  d.generator = reader.read_string(data, "data.generator", &data);
  d.file = reader.read_string(data, "data.file", &data);
  d.python = reader.read_string(data, "data.python", &data);
  const int sources = count_sources(reader, data);
  const bool generated = data.contains("generator") || sources != 1;
  d.params = reader.table_field(data, "params", "data.params", false, &data);
  // The seed and the size are the generator's; a file has its own samples (num_samples keeps the first).
  d.seed = reader.int_field(data, "seed", "data.seed", generated, &data, 0, INT64_MAX);
  d.num_samples = reader.int_field(data, "num_samples", "data.num_samples", generated, &data, 0,
                                   generated ? kMaxGeneratedSamples : kMaxSamples);
  if (auto batch = reader.read(data, reader.field("data.batch_size"), &data)) d.batch_size = batch->get<std::int64_t>();
  d.dtype = reader.read_string(data, "data.dtype", &data);
  const bool dtype_refused = !d.dtype && data.get("dtype") && data.get("dtype")->is_string();  // not a choice
  d.ok = (d.seed || !generated) && (d.num_samples || !generated) && d.batch_size && sources == 1 && !dtype_refused;
  if (!read_structured(reader, data, d)) d.ok = false;
  return d;
}

// A built-in generator of structured samples (strings, lists of dicts): the descriptor's Python
// makes them from the seed and the resolved parameters (and num_samples, which it is given), as a
// data.python generator is called; the ranks then index its file (docs/scenarios.md, "Data generators").
bool make_structured_generator_data(ScenarioReader& reader, Scenario& s, const toml::table& data, const DataTable& d,
                                    const DataGenerator& made) {
  if (s.data.params.at("weights") != "none") {
    reader.error_at(d.params ? reader.line_of(d.params, "weights") : reader.line_of(&data, "generator"), "data.params.weights",
                    "generator '" + *d.generator + "' makes structured samples, which carry no per-sample weight");
    return false;
  }
  // The spec keeps its generator (what `explore` draws parameters for and writes back); the
  // maker also gets num_samples, only while it is called.
  s.data.generator = *d.generator;
  s.data.python = made.python;
  s.data.params["num_samples"] = *d.num_samples;
  try {
    materialize_python_data(s.data, /*builtin=*/true);
  } catch (const std::exception& e) {
    reader.error_at(reader.line_of(&data, "generator"), "data.generator",
                    "generator '" + *d.generator + "' (" + made.python + "): " + e.what());
    return false;
  }
  s.data.params.erase("num_samples");
  return true;
}

// Past kWholeDataElements numbers the data are generated batch by batch: then the batch must fit.
bool check_generated_size(ScenarioReader& reader, const Scenario& s, const toml::table& data, std::int64_t num_samples) {
  const std::int64_t per_sample = generator_elements_per_sample(s.data.generator, s.data.params);
  const std::int64_t elements = num_samples * per_sample;
  if (elements > kMaxGeneratedElements) {
    reader.error_at(reader.line_of(&data, "num_samples"), "data.num_samples",
                    "the data would hold about " + std::to_string(elements) + " numbers (limit " +
                        std::to_string(kMaxGeneratedElements) + ", generated batch by batch): use fewer or smaller samples");
    return false;
  }
  if (generated_lazily(s.data) && s.batch_size * per_sample > kMaxElements) {
    reader.error_at(reader.line_of(&data, "batch_size"), "data.batch_size",
                    "a batch would hold about " + std::to_string(s.batch_size * per_sample) + " numbers (limit " +
                        std::to_string(kMaxElements) + " for data generated batch by batch, which these " +
                        std::to_string(num_samples) + " samples are): use smaller batches");
    return false;
  }
  return true;
}

// data.generator: known, its parameters resolved, then its samples made (structured) or their size checked.
bool resolve_generator(ScenarioReader& reader, Scenario& s, const toml::table& data, const DataTable& d) {
  const auto* made = find_generator(*d.generator);
  if (!made) {
    reader.error_at(reader.line_of(&data, "generator"), "data.generator",
                    "unknown data generator '" + *d.generator + "'" + runtime::did_you_mean(*d.generator, generator_names()) +
                        " (known: " + runtime::quoted_list(generator_names()) + ")");
    return false;
  }
  try {
    s.data.params = resolve_generator_params(*d.generator, d.params ? toml_to_json(*d.params) : json::object());
  } catch (const runtime::FieldError& e) {
    const int line = d.params && !e.field().empty() && d.params->contains(e.field()) ? reader.line_of(d.params, e.field())
                     : d.params                                                        ? reader.line_of(d.params, "")
                                                                                       : reader.line_of(&data, "generator");
    reader.error_at(line, e.field().empty() ? "data.params" : "data.params." + e.field(), e.what());
    return false;
  }
  if (!d.ok) return false;
  if (made->carrier == DataCarrier::Structured) return make_structured_generator_data(reader, s, data, d, *made);
  s.data.generator = *d.generator;
  return check_generated_size(reader, s, data, *d.num_samples);
}

}  // namespace

void validate_data(ScenarioReader& reader, Scenario& s, const toml::table* data, bool& data_ok) {
  data_ok = false;
  if (!data) return;
  reader.open_table(*data, "data", s);
  const DataTable d = read_data_table(reader, *data);
  const bool params_refused = d.file && d.params;  // said, and the file is still read (every error in one run)
  if (params_refused)
    reader.error_at(reader.line_of(data, "params"), "data.params", "'data.params' are a generator's parameters; a data file takes none");
  if (d.ok) {
    s.data.seed = static_cast<std::uint64_t>(d.seed.value_or(0));
    s.data.num_samples = d.num_samples.value_or(-1);
    s.data.dtype = d.dtype.value_or("float32");
    s.batch_size = *d.batch_size;
  }
  if (d.file) {
    s.data.structured = d.structured;
    data_ok = d.ok && read_data_file(reader, s, data, *d.file) && !params_refused;
  } else if (d.python) {
    s.data.params = d.params ? toml_to_json(*d.params) : json::object();
    data_ok = d.ok && run_data_generator(reader, s, data, *d.python);
  } else if (d.generator) {
    data_ok = resolve_generator(reader, s, *data, d);
  }
}

bool check_structured_data_for_metric(ScenarioReader& reader, const Scenario& s, const toml::table* data) {
  if (!s.data.structured) return true;
  const auto* registry = MetricCatalog::instance().registry_for(s.metric);
  const auto* spec = registry ? registry->find(s.metric) : nullptr;
  if (spec && spec->family == "python") return true;
  const std::string field = data && data->contains("file") ? "file" : "python";
  reader.error_at(reader.line_of(data, field), "data." + field,
             s.data.source_text() + " gives structured samples (sequences of objects, not tensors), which only a Python "
             "metric takes, and metric '" + s.metric + "' is a C++ metric that takes tensors: return tensors or NumPy "
             "arrays (rows are samples), or check a Python metric with `distmetrics conform --python SOURCE` "
             "(docs/scenarios.md, \"Structured data for Python metrics\")");
  return false;
}

void dry_run(ScenarioReader& reader, const Scenario& s, const toml::table* metric_table) {
  if (s.data.num_samples == 0) {
    // No samples to feed, but the factory still judges the parameters (every rank builds the
    // metric before its script starts).
    try {
      MetricCatalog::instance().registry_for(s.metric)->make(s.metric, s.metric_params, c10::Device(c10::kCPU));
    } catch (const std::exception& e) {
      std::string message = e.what();
      if (message.size() > 600) message = message.substr(0, 600) + "...";
      reader.error_at(reader.line_of(metric_table, "name"), "metric",
                 "metric '" + s.metric + "' cannot be built with parameters " + s.metric_params.dump() + ": " + message);
    }
    return;
  }
  DataSpec small = s.data;
  small.num_samples = std::min<std::int64_t>(s.data.num_samples, std::max<std::int64_t>(s.batch_size, 2));
  try {
    // A file's data are read whole (once per process); a generator makes only the first samples.
    const auto data = generate_data(s.data.file.empty() ? small : s.data);
    const auto* registry = MetricCatalog::instance().registry_for(s.metric);
    auto metric = registry->make(s.metric, s.metric_params, c10::Device(c10::kCPU));
    std::vector<std::int64_t> rows(static_cast<std::size_t>(small.num_samples));
    for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<std::int64_t>(i);
    metric->update(data.rows(rows));
  } catch (const std::exception& e) {
    std::string message = e.what();
    if (message.size() > 600) message = message.substr(0, 600) + "...";
    reader.error_at(reader.line_of(metric_table, "name"), "metric",
               "metric '" + s.metric + "' rejects the data of " + s.data.source_text() +
                   " (first " + std::to_string(small.num_samples) + " samples): " + message);
  }
}

void validate_reference(ScenarioReader& reader, Scenario& s, const toml::table& root, bool data_ok) {
  const auto* table = reader.table_field(root, "reference", "reference", false, nullptr);
  if (!table) return;
  reader.open_table(*table, "reference", s);
  const auto python = reader.read_string(*table, "reference.python", table);
  const auto* kwargs = reader.table_field(*table, "kwargs", "reference.kwargs", false, table);
  if (!python) return;
  PythonReference reference{*python, kwargs ? toml_to_json(*kwargs) : json::object()};
  if (const auto problem = python_callable_spec_problem(*python); !problem.empty()) {
    reader.error_at(reader.line_of(table, "python"), "reference.python", problem);
    return;
  }
  if (const auto why = scenario_python_unavailable(); !why.empty()) {
    reader.error_at(reader.line_of(table, "python"), "reference.python", why);
    return;
  }
  try {
    scenario_python().check(*python);
  } catch (const std::exception& e) {
    reader.error_at(reader.line_of(table, "python"), "reference.python", e.what());
    return;
  }
  s.reference = reference;
  if (!s.checks("agrees_with_reference") && root.get("properties"))
    reader.error(table, "reference", "a [reference] is given but 'agrees_with_reference' is not in 'properties'");
  if (!data_ok) return;
  if (generated_lazily(s.data)) {  // never held whole, so no callable can take them
    try {
      generate_lazy_data(s.data).require_whole("reference.python");
    } catch (const std::exception& e) {
      reader.error_at(reader.line_of(table, "python"), "reference.python", e.what());
    }
    return;
  }
  // Once on the whole data here, so that a callable that does not take them fails validation.
  try {
    python_reference_value(s, generate_data(s.data));
  } catch (const std::exception& e) {
    reader.error_at(reader.line_of(table, "python"), "reference.python",
               *python + " cannot judge the data of " + s.data.source_text() + ": " + e.what());
  }
}

int count_computes(const std::vector<Step>& script) {
  return static_cast<int>(std::count_if(script.begin(), script.end(),
                                         [](const Step& step) { return step.op == Step::Op::Compute; }));
}

void validate_variants(ScenarioReader& reader, Scenario& s, const toml::table* variants) {
  s.world_sizes = {1, 2, 3, 4};
  s.backends = runtime::default_backend_names();
  s.shards = {"even"};
  s.placements = {"cpu"};
  if (!variants) return;
  reader.open_table(*variants, "variants", s);  // every field of [variants] is plain
  if (s.data.structured) {
    // Structured samples reach the C++ side as their indices only: it cannot order them by label
    // nor cast the tensors inside them.
    if (std::find(s.shards.begin(), s.shards.end(), "skewed") != s.shards.end())
      reader.error_at(reader.line_of(variants, "shards"), "variants.shards",
                 "shard 'skewed' orders samples by their label, which structured samples (" + s.data.source_text() +
                     ") do not expose: use the other shard policies");
    if (!s.dtypes.empty())
      reader.error_at(reader.line_of(variants, "dtypes"), "variants.dtypes",
                 "input dtypes cast the tensors of the data, and the data of " + s.data.source_text() +
                     " are structured samples: leave 'variants.dtypes' out, or make the dtypes in the generator");
  }
}

void validate_expectations(ScenarioReader& reader, Scenario& s, const toml::table& root, const toml::table* expect,
                           const toml::table* variants) {
  if (!expect) return;
  reader.open_table(*expect, "expect", s);  // expect.reason is plain
  if (auto given = reader.read(*expect, reader.field("expect.error"), expect)) {
    const std::string error = given->get<std::string>();
    const auto known = reader.field("expect.error").known();
    if (std::find(known.begin(), known.end(), error) == known.end()) {
      reader.error_at(reader.line_of(expect, "error"), "expect.error",
                 "unknown error type '" + error + "'" + runtime::did_you_mean(error, known) + " (known: " + runtime::quoted_list(known) + ")");
    } else {
      s.expect.error = error;
    }
  }
  const int computes = count_computes(s.script);
  if (auto given = reader.read(*expect, reader.field("expect.compute"), expect)) {
    const std::int64_t compute = given->get<std::int64_t>();
    if (s.expect.error.empty())
      reader.error_at(reader.line_of(expect, "compute"), "expect.compute",
                      "'expect.compute' says which compute raises 'expect.error': give the error too");
    if (compute > computes)
      reader.error_at(reader.line_of(expect, "compute"), "expect.compute",
                 "'expect.compute' is " + std::to_string(compute) + " but the script has " + std::to_string(computes) +
                     " compute step(s)");
    s.expect.compute = static_cast<int>(compute) - 1;
  }
  if (auto given = reader.read(*expect, reader.field("expect.fail"), expect)) {
    const auto fail = given->get<std::vector<std::string>>();
    for (const auto& p : fail) {
      if (p == "no_hang")
        reader.error_at(reader.line_of(expect, "fail"), "expect.fail", "'no_hang' cannot be an expected failure: a hang is never a pass");
      else if (!s.checks(p))
        reader.error_at(reader.line_of(expect, "fail"), "expect.fail",
                   "'" + p + "' is expected to fail but is not checked: add it to 'properties'");
    }
    s.expect.fail = fail;
  }
  if (!s.expect.fail.empty() && s.expect.reason.empty())
    reader.error_at(reader.line_of(expect, "fail"), "expect.reason", "an expected failure needs 'expect.reason': say why it must fail");
  // padded shards duplicate samples only when the world size does not divide num_samples.
  if (s.expects_failure_of("equal_to_single") &&
      std::find(s.shards.begin(), s.shards.end(), "padded") != s.shards.end()) {
    for (int ws : s.world_sizes) {
      if (s.data.num_samples > 0 && s.data.num_samples % ws == 0)
        reader.error_at(reader.line_of(variants, "world_sizes"), "variants.world_sizes",
                   "shard 'padded' adds no duplicate at world size " + std::to_string(ws) + " (" +
                       std::to_string(s.data.num_samples) + " samples divide evenly), so 'equal_to_single' cannot "
                       "fail there as expected: choose num_samples not divisible by any world size");
    }
    if (s.shards.size() > 1)
      reader.error_at(reader.line_of(variants, "shards"), "variants.shards",
                 "an expected failure of 'equal_to_single' with shard 'padded' would apply to the other shard "
                 "policies too: list only 'padded'");
  }
  (void)root;
}

}  // namespace distmetrics::harness::detail
