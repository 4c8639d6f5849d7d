// Loading and validating scenario files. Every problem becomes a Diagnostic with the file, the
// line (from toml++'s source regions) and the field; loading goes on after a problem so that
// one run of `distmetrics validate` shows them all.
#include "distmetrics/harness/scenario.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "distmetrics/harness/metric_catalog.h"
#include "distmetrics/metrics/errors.h"
#include "distmetrics/runtime/backends.h"
#include "distmetrics/runtime/params.h"
#include "distmetrics/runtime/text.h"
#include "distmetrics/harness/shard.h"
#include "distmetrics/harness/placement.h"
#include "distmetrics/harness/property.h"
#include "toml_json.h"

namespace distmetrics::harness {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using detail::toml_to_json;
using detail::toml_type_name;

// Limits that keep a scenario from exhausting memory or time by mistake.
constexpr std::int64_t kMaxSamples = 1'000'000;
constexpr std::int64_t kMaxElements = 20'000'000;
constexpr int kMaxWorldSize = 64;
constexpr double kMaxDeadline = 3600;

const std::map<std::string, std::vector<std::string>>& known_fields() {
  static const std::map<std::string, std::vector<std::string>> fields = {
      {"", {"description", "tags", "deadline", "single_process", "script", "properties", "metric", "data",
            "variants", "tolerance", "golden", "expect", "batch_invariant"}},
      {"metric", {"name", "params"}},
      {"data", {"generator", "params", "seed", "num_samples", "batch_size", "dtype"}},
      {"variants", {"world_sizes", "backends", "shards", "placements"}},
      {"tolerance", {"rtol", "atol", "exact"}},
      {"golden", {"value", "rtol", "atol"}},
      {"expect", {"error", "compute", "fail", "reason"}},
      {"batch_invariant", {"batch_sizes"}},
  };
  return fields;
}

std::string join_path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

class Loader {
 public:
  Loader(std::string file) : file_(std::move(file)) {}

  std::vector<Diagnostic>& diagnostics() { return diagnostics_; }

  void error(const toml::node* where, const std::string& field, const std::string& message) {
    int line = 0, column = 0;
    if (where) {
      line = static_cast<int>(where->source().begin.line);
      column = static_cast<int>(where->source().begin.column);
    }
    diagnostics_.push_back({file_, line, column, field, message});
  }
  void error_at(int line, const std::string& field, const std::string& message) {
    diagnostics_.push_back({file_, line, 0, field, message});
  }

  // Unknown keys, with close names suggested.
  void check_keys(const toml::table& table, const std::string& path) {
    const auto& known = known_fields().at(path);
    for (auto&& [key, value] : table) {
      const std::string k(key.str());
      if (std::find(known.begin(), known.end(), k) != known.end()) continue;
      std::string where = path.empty() ? "at the top level" : "in [" + path + "]";
      diagnostics_.push_back({file_, static_cast<int>(key.source().begin.line),
                              static_cast<int>(key.source().begin.column), join_path(path, k),
                              "unknown field '" + k + "' " + where + runtime::did_you_mean(k, known) + " (known: " +
                                  runtime::quoted_list(known) + ")"});
    }
  }

  const toml::node* find(const toml::table& table, const std::string& key) { return table.get(key); }

  const toml::table* table_field(const toml::table& parent, const std::string& key, const std::string& path,
                                 bool required, const toml::node* owner) {
    const auto* node = find(parent, key);
    if (!node) {
      if (required) error(owner, path, "missing required table [" + path + "]");
      return nullptr;
    }
    if (!node->is_table()) {
      error(node, path, "'" + path + "' must be a table, got " + toml_type_name(*node));
      return nullptr;
    }
    return node->as_table();
  }

  std::optional<std::string> string_field(const toml::table& t, const std::string& key, const std::string& path,
                                          bool required, const toml::node* owner) {
    const auto* node = find(t, key);
    if (!node) {
      if (required) error(owner, path, "missing required field '" + path + "' (a string)");
      return std::nullopt;
    }
    if (!node->is_string()) {
      error(node, path, "'" + path + "' must be a string, got " + toml_type_name(*node));
      return std::nullopt;
    }
    return node->as_string()->get();
  }

  std::optional<std::int64_t> int_field(const toml::table& t, const std::string& key, const std::string& path,
                                        bool required, const toml::node* owner, std::int64_t lo, std::int64_t hi) {
    const auto* node = find(t, key);
    if (!node) {
      if (required) error(owner, path, "missing required field '" + path + "' (an integer)");
      return std::nullopt;
    }
    if (!node->is_integer()) {
      error(node, path, "'" + path + "' must be an integer, got " + toml_type_name(*node));
      return std::nullopt;
    }
    const auto v = node->as_integer()->get();
    if (v < lo || v > hi) {
      error(node, path, "'" + path + "' must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                            "], got " + std::to_string(v));
      return std::nullopt;
    }
    return v;
  }

  std::optional<double> number_field(const toml::table& t, const std::string& key, const std::string& path,
                                     double lo, double hi, bool lo_open = false) {
    const auto* node = find(t, key);
    if (!node) return std::nullopt;
    if (!node->is_number()) {
      error(node, path, "'" + path + "' must be a number, got " + toml_type_name(*node));
      return std::nullopt;
    }
    const double v = node->value<double>().value_or(NAN);
    if (!std::isfinite(v) || v < lo || v > hi || (lo_open && v == lo)) {
      std::ostringstream range;
      range << (lo_open ? "(" : "[") << lo << ", " << hi << "]";
      error(node, path, "'" + path + "' must be in " + range.str() + ", got " + json(v).dump());
      return std::nullopt;
    }
    return v;
  }

  // A list of strings; each entry optionally checked against `known`.
  std::optional<std::vector<std::string>> string_list(const toml::table& t, const std::string& key,
                                                      const std::string& path, const std::vector<std::string>* known,
                                                      const std::string& what, bool unique = true) {
    const auto* node = find(t, key);
    if (!node) return std::nullopt;
    const auto* array = node->as_array();
    if (!array) {
      error(node, path, "'" + path + "' must be a list of strings, got " + toml_type_name(*node));
      return std::nullopt;
    }
    std::vector<std::string> out;
    bool ok = true;
    for (std::size_t i = 0; i < array->size(); ++i) {
      const auto& item = *array->get(i);
      const std::string item_path = path + "[" + std::to_string(i) + "]";
      if (!item.is_string()) {
        error(&item, item_path, "entries of '" + path + "' must be strings, got " + toml_type_name(item));
        ok = false;
        continue;
      }
      const std::string s = item.as_string()->get();
      if (known && std::find(known->begin(), known->end(), s) == known->end()) {
        error(&item, item_path, "unknown " + what + " '" + s + "'" + runtime::did_you_mean(s, *known) + " (known: " +
                                    runtime::quoted_list(*known) + ")");
        ok = false;
        continue;
      }
      if (unique && std::find(out.begin(), out.end(), s) != out.end()) {
        error(&item, item_path, "'" + s + "' is listed twice in '" + path + "'");
        ok = false;
        continue;
      }
      out.push_back(s);
    }
    if (!ok) return std::nullopt;
    return out;
  }

  std::optional<std::vector<std::int64_t>> int_list(const toml::table& t, const std::string& key,
                                                    const std::string& path, std::int64_t lo, std::int64_t hi) {
    const auto* node = find(t, key);
    if (!node) return std::nullopt;
    const auto* array = node->as_array();
    if (!array) {
      error(node, path, "'" + path + "' must be a list of integers, got " + toml_type_name(*node));
      return std::nullopt;
    }
    std::vector<std::int64_t> out;
    bool ok = true;
    for (std::size_t i = 0; i < array->size(); ++i) {
      const auto& item = *array->get(i);
      const std::string item_path = path + "[" + std::to_string(i) + "]";
      if (!item.is_integer()) {
        error(&item, item_path, "entries of '" + path + "' must be integers, got " + toml_type_name(item));
        ok = false;
        continue;
      }
      const auto v = item.as_integer()->get();
      if (v < lo || v > hi) {
        error(&item, item_path, "entries of '" + path + "' must be in [" + std::to_string(lo) + ", " +
                                    std::to_string(hi) + "], got " + std::to_string(v));
        ok = false;
        continue;
      }
      if (std::find(out.begin(), out.end(), v) != out.end()) {
        error(&item, item_path, std::to_string(v) + " is listed twice in '" + path + "'");
        ok = false;
        continue;
      }
      out.push_back(v);
    }
    if (!ok) return std::nullopt;
    return out;
  }

  // The line of `key` in `table`, else the table's own line.
  int line_of(const toml::table* table, const std::string& key) {
    if (!table) return 0;
    for (auto&& [k, v] : *table)
      if (k.str() == key) return static_cast<int>(k.source().begin.line);
    return static_cast<int>(table->source().begin.line);
  }

 private:
  std::string file_;
  std::vector<Diagnostic> diagnostics_;
};

// A TOML number as a double: toml++'s value<double>() is empty for an integer no double holds
// exactly (9223372036854775807), which is rounded here instead (found by scenario_fuzz).
double number_as_double(const toml::node& n) {
  if (const auto* i = n.as_integer()) return static_cast<double>(i->get());
  if (const auto* f = n.as_floating_point()) return f->get();
  return NAN;
}

// A golden value written in TOML as Value JSON: a number (or "nan"/"inf"/"-inf"), a nested list
// (a float64 tensor), or a table of named values.
std::optional<json> golden_to_value(const toml::node& node, std::string& problem) {
  if (node.is_number()) return number_as_double(node);
  if (const auto* s = node.as_string()) {
    const std::string v = s->get();
    if (v == "nan" || v == "inf" || v == "-inf") return json(v);
    problem = "a golden string must be \"nan\", \"inf\" or \"-inf\", got \"" + v + "\"";
    return std::nullopt;
  }
  if (const auto* t = node.as_table()) {
    json out = json::object();
    for (auto&& [key, value] : *t) {
      auto v = golden_to_value(value, problem);
      if (!v) return std::nullopt;
      out[std::string(key.str())] = *v;
    }
    return out;
  }
  if (node.is_array()) {
    // Shape from the first element at every depth; every sub-list must match it.
    std::vector<std::int64_t> shape;
    const toml::node* probe = &node;
    while (const auto* a = probe->as_array()) {
      shape.push_back(static_cast<std::int64_t>(a->size()));
      if (a->empty()) break;
      probe = a->get(0);
    }
    json values = json::array();
    std::function<bool(const toml::node&, std::size_t)> flatten = [&](const toml::node& n, std::size_t depth) {
      if (depth == shape.size()) {
        if (!n.is_number()) {
          problem = std::string("a golden tensor must hold numbers, found ") + toml_type_name(n);
          return false;
        }
        values.push_back(number_as_double(n));
        return true;
      }
      const auto* a = n.as_array();
      if (!a || static_cast<std::int64_t>(a->size()) != shape[depth]) {
        problem = "a golden tensor must be rectangular (every list at one depth the same length)";
        return false;
      }
      for (const auto& item : *a)
        if (!flatten(item, depth + 1)) return false;
      return true;
    };
    if (!flatten(node, 0)) return std::nullopt;
    return json{{"dtype", "float64"}, {"shape", shape}, {"values", values}};
  }
  problem = std::string("a golden value must be a number, a list or a table, got ") + toml_type_name(node);
  return std::nullopt;
}

std::int64_t elements_per_sample(const std::string& generator, const json& p) {
  auto get = [&](const char* k, std::int64_t fallback) {
    return p.contains(k) && p.at(k).is_number_integer() ? std::max<std::int64_t>(p.at(k).get<std::int64_t>(), 1)
                                                        : fallback;
  };
  if (generator == "multiclass") return get("num_classes", 2) + 1;
  if (generator == "multilabel") return 2 * get("num_labels", 1);
  if (generator == "segmentation") return (get("num_classes", 2) + 1) * get("height", 8) * get("width", 8);
  if (generator == "images") return 2 * get("channels", 3) * get("height", 8) * get("width", 8);
  return 2 * std::max<std::int64_t>(get("dims", 1), 1) + 1;
}

std::vector<metrics::ParamSpec> metric_param_specs(const metrics::MetricRegistry& registry, const std::string& name) {
  const auto* spec = registry.find(name);
  return spec ? spec->params : std::vector<metrics::ParamSpec>{};
}

void validate_metric(Loader& L, const toml::table& root, Scenario& s, const toml::table* metric_table,
                     bool& metric_ok) {
  metric_ok = false;
  if (!metric_table) return;
  L.check_keys(*metric_table, "metric");
  const auto name = L.string_field(*metric_table, "name", "metric.name", true, metric_table);
  const toml::table* params_table = L.table_field(*metric_table, "params", "metric.params", false, metric_table);
  if (!name) return;
  s.metric = *name;
  const metrics::MetricRegistry* registry = nullptr;
  try {
    registry = MetricCatalog::instance().registry_for(*name);
  } catch (const std::exception& e) {  // a plugin name that is not allowed, or cannot be loaded
    L.error_at(L.line_of(metric_table, "name"), "metric.name", e.what());
    return;
  }
  if (!registry) {
    const auto names = MetricCatalog::instance().metric_names();
    L.error_at(L.line_of(metric_table, "name"), "metric.name",
               "unknown metric '" + *name + "'" + runtime::did_you_mean(*name, names) + " (known: " + runtime::quoted_list(names) + ")");
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
      L.error_at(static_cast<int>(key.source().begin.line), "metric.params." + k,
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
      L.error_at(params_table && params_table->contains(count) ? L.line_of(params_table, count) : L.line_of(metric_table, "name"),
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
    int line = params_table ? L.line_of(params_table, "") : L.line_of(metric_table, "name");
    // Walk the dotted field as deep as the TOML goes.
    const toml::table* t = params_table;
    std::stringstream parts(field);
    for (std::string part; t && std::getline(parts, part, '.');) {
      if (!t->contains(part)) break;
      line = L.line_of(t, part);
      t = t->get(part)->as_table();
    }
    L.error_at(line, field.empty() ? "metric.params" : "metric.params." + field, e.what());
  }
  (void)root;
}

void validate_data(Loader& L, Scenario& s, const toml::table* data, bool& data_ok) {
  data_ok = false;
  if (!data) return;
  L.check_keys(*data, "data");
  const auto generator = L.string_field(*data, "generator", "data.generator", true, data);
  const toml::table* params = L.table_field(*data, "params", "data.params", false, data);
  const auto seed = L.int_field(*data, "seed", "data.seed", true, data, 0, INT64_MAX);
  const auto n = L.int_field(*data, "num_samples", "data.num_samples", true, data, 0, kMaxSamples);
  const auto batch = L.int_field(*data, "batch_size", "data.batch_size", true, data, 1, kMaxSamples);
  const auto dtype = L.string_field(*data, "dtype", "data.dtype", false, data);
  bool ok = seed && n && batch;
  if (dtype && *dtype != "float32" && *dtype != "float64") {
    L.error_at(L.line_of(data, "dtype"), "data.dtype",
               "'data.dtype' must be 'float32' or 'float64', got '" + *dtype + "'" +
                   runtime::did_you_mean(*dtype, {"float32", "float64"}));
    ok = false;
  }
  if (!generator) return;
  if (!find_generator(*generator)) {
    L.error_at(L.line_of(data, "generator"), "data.generator",
               "unknown data generator '" + *generator + "'" + runtime::did_you_mean(*generator, generator_names()) +
                   " (known: " + runtime::quoted_list(generator_names()) + ")");
    return;
  }
  try {
    s.data.params = resolve_generator_params(*generator, params ? toml_to_json(*params) : json::object());
  } catch (const runtime::FieldError& e) {
    const int line = params && !e.field().empty() && params->contains(e.field()) ? L.line_of(params, e.field())
                     : params                                                      ? L.line_of(params, "")
                                                                                   : L.line_of(data, "generator");
    L.error_at(line, e.field().empty() ? "data.params" : "data.params." + e.field(), e.what());
    return;
  }
  if (!ok) return;
  s.data.generator = *generator;
  s.data.seed = static_cast<std::uint64_t>(*seed);
  s.data.num_samples = *n;
  s.data.dtype = dtype.value_or("float32");
  s.batch_size = *batch;
  const std::int64_t elements = *n * elements_per_sample(*generator, s.data.params);
  if (elements > kMaxElements) {
    L.error_at(L.line_of(data, "num_samples"), "data.num_samples",
               "the data would hold about " + std::to_string(elements) + " numbers (limit " +
                   std::to_string(kMaxElements) + "): use fewer or smaller samples");
    return;
  }
  data_ok = true;
}

// Feeds a few samples to the metric once, so that data it rejects is reported at load time.
void dry_run(Loader& L, const Scenario& s, const toml::table* metric_table) {
  if (s.data.num_samples == 0) return;
  DataSpec small = s.data;
  small.num_samples = std::min<std::int64_t>(s.data.num_samples, std::max<std::int64_t>(s.batch_size, 2));
  try {
    const auto data = generate_data(small);
    const auto* registry = MetricCatalog::instance().registry_for(s.metric);
    auto metric = registry->make(s.metric, s.metric_params, c10::Device(c10::kCPU));
    std::vector<std::int64_t> rows(static_cast<std::size_t>(small.num_samples));
    for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<std::int64_t>(i);
    metric->update(data.rows(rows));
  } catch (const std::exception& e) {
    std::string message = e.what();
    if (message.size() > 600) message = message.substr(0, 600) + "...";
    L.error_at(L.line_of(metric_table, "name"), "metric",
               "metric '" + s.metric + "' rejects the data of generator '" + s.data.generator +
                   "' (first " + std::to_string(small.num_samples) + " samples): " + message);
  }
}

int count_computes(const std::vector<Step>& script) {
  return static_cast<int>(std::count_if(script.begin(), script.end(),
                                         [](const Step& step) { return step.op == Step::Op::Compute; }));
}

void validate_variants(Loader& L, Scenario& s, const toml::table* variants) {
  s.world_sizes = {1, 2, 3, 4};
  s.backends = runtime::default_backend_names();
  s.shards = {"even"};
  s.placements = {"cpu"};
  if (!variants) return;
  L.check_keys(*variants, "variants");
  if (auto ws = L.int_list(*variants, "world_sizes", "variants.world_sizes", 1, kMaxWorldSize)) {
    if (ws->empty()) L.error_at(L.line_of(variants, "world_sizes"), "variants.world_sizes", "'variants.world_sizes' is empty");
    s.world_sizes.assign(ws->begin(), ws->end());
  }
  auto names_list = [&](const char* key, const std::vector<std::string>& known, const char* what,
                        std::vector<std::string>& into) {
    if (auto list = L.string_list(*variants, key, std::string("variants.") + key, &known, what)) {
      if (list->empty()) L.error_at(L.line_of(variants, key), std::string("variants.") + key, std::string("'variants.") + key + "' is empty");
      into = *list;
    }
  };
  names_list("backends", runtime::backend_names(), "backend", s.backends);
  names_list("shards", shard_policy_names(), "shard policy", s.shards);
  names_list("placements", placement_names(), "placement", s.placements);
}

void validate_expectations(Loader& L, Scenario& s, const toml::table& root, const toml::table* expect,
                           const toml::table* variants) {
  if (!expect) return;
  L.check_keys(*expect, "expect");
  if (auto error = L.string_field(*expect, "error", "expect.error", false, expect)) {
    const auto& known = expected_error_names();
    if (std::find(known.begin(), known.end(), *error) == known.end()) {
      L.error_at(L.line_of(expect, "error"), "expect.error",
                 "unknown error type '" + *error + "'" + runtime::did_you_mean(*error, known) + " (known: " + runtime::quoted_list(known) + ")");
    } else {
      s.expect.error = *error;
    }
  }
  const int computes = count_computes(s.script);
  if (auto compute = L.int_field(*expect, "compute", "expect.compute", false, expect, 1, 1'000'000)) {
    if (s.expect.error.empty())
      L.error_at(L.line_of(expect, "compute"), "expect.compute", "'expect.compute' says which compute raises 'expect.error': give the error too");
    if (*compute > computes)
      L.error_at(L.line_of(expect, "compute"), "expect.compute",
                 "'expect.compute' is " + std::to_string(*compute) + " but the script has " + std::to_string(computes) +
                     " compute step(s)");
    s.expect.compute = static_cast<int>(*compute) - 1;
  }
  if (auto fail = L.string_list(*expect, "fail", "expect.fail", &property_names(), "property")) {
    for (const auto& p : *fail) {
      if (p == "no_hang")
        L.error_at(L.line_of(expect, "fail"), "expect.fail", "'no_hang' cannot be an expected failure: a hang is never a pass");
      else if (!s.checks(p))
        L.error_at(L.line_of(expect, "fail"), "expect.fail",
                   "'" + p + "' is expected to fail but is not checked: add it to 'properties'");
    }
    s.expect.fail = *fail;
  }
  if (auto reason = L.string_field(*expect, "reason", "expect.reason", false, expect)) s.expect.reason = *reason;
  if (!s.expect.fail.empty() && s.expect.reason.empty())
    L.error_at(L.line_of(expect, "fail"), "expect.reason", "an expected failure needs 'expect.reason': say why it must fail");
  // padded shards duplicate samples only when the world size does not divide num_samples.
  if (s.expects_failure_of("equal_to_single") &&
      std::find(s.shards.begin(), s.shards.end(), "padded") != s.shards.end()) {
    for (int ws : s.world_sizes) {
      if (s.data.num_samples > 0 && s.data.num_samples % ws == 0)
        L.error_at(L.line_of(variants, "world_sizes"), "variants.world_sizes",
                   "shard 'padded' adds no duplicate at world size " + std::to_string(ws) + " (" +
                       std::to_string(s.data.num_samples) + " samples divide evenly), so 'equal_to_single' cannot "
                       "fail there as expected: choose num_samples not divisible by any world size");
    }
    if (s.shards.size() > 1)
      L.error_at(L.line_of(variants, "shards"), "variants.shards",
                 "an expected failure of 'equal_to_single' with shard 'padded' would apply to the other shard "
                 "policies too: list only 'padded'");
  }
  (void)root;
}

}  // namespace

std::string Diagnostic::to_string() const {
  std::ostringstream out;
  out << file;
  if (line > 0) out << ":" << line << (column > 0 ? ":" + std::to_string(column) : "");
  out << ": ";
  if (!field.empty()) out << field << ": ";
  out << message;
  return out.str();
}

const std::vector<std::string>& expected_error_names() {
  static const std::vector<std::string> names = {"NotComputableError", "InputError", "SyncError"};
  return names;
}

bool Scenario::checks(const std::string& property) const {
  const Property* p = find_property(property);
  if (p && p->checked_anyway && p->checked_anyway(*this)) return true;
  return std::find(properties.begin(), properties.end(), property) != properties.end();
}

bool Scenario::expects_failure_of(const std::string& property) const {
  return std::find(expect.fail.begin(), expect.fail.end(), property) != expect.fail.end();
}

LoadResult load_scenario_text(const std::string& text, const std::string& path, const std::string& name) {
  Loader L(path);
  LoadResult result;
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    result.diagnostics.push_back({path, static_cast<int>(e.source().begin.line),
                                  static_cast<int>(e.source().begin.column), "",
                                  "not valid TOML: " + std::string(e.description())});
    return result;
  }
  Scenario s;
  s.name = name;
  s.file = path;
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '/' || c == '-')) {
      L.error_at(0, "", "the scenario name '" + name + "' (from the file name) may hold only letters, digits and "
                        "'_', '.', '/', '-': rename the file");
      break;
    }
  }
  L.check_keys(root, "");
  if (auto d = L.string_field(root, "description", "description", true, nullptr)) {
    if (d->find_first_not_of(" \t\n") == std::string::npos)
      L.error_at(L.line_of(&root, "description"), "description", "'description' is empty: say what the scenario checks");
    s.description = *d;
  }
  if (auto tags = L.string_list(root, "tags", "tags", nullptr, "tag")) s.tags = *tags;
  if (auto d = L.number_field(root, "deadline", "deadline", 0, kMaxDeadline, true)) s.deadline_seconds = *d;
  if (auto mode = L.string_field(root, "single_process", "single_process", false, nullptr)) {
    if (*mode != "global" && *mode != "per_step")
      L.error_at(L.line_of(&root, "single_process"), "single_process",
                 "'single_process' must be 'global' or 'per_step', got '" + *mode + "'" +
                     runtime::did_you_mean(*mode, {"global", "per_step"}));
    else
      s.single_process = *mode;
  }

  // The script.
  std::vector<std::string> script_text = default_script_text();
  if (auto list = L.string_list(root, "script", "script", nullptr, "step", false)) script_text = *list;
  const auto* script_node = root.get("script");
  const auto* script_array = script_node ? script_node->as_array() : nullptr;
  bool script_ok = true;
  for (std::size_t i = 0; i < script_text.size(); ++i) {
    try {
      s.script.push_back(parse_step(script_text[i]));
    } catch (const std::invalid_argument& e) {
      L.error(script_array && i < script_array->size() ? script_array->get(i) : script_node,
              "script[" + std::to_string(i) + "]", e.what());
      script_ok = false;
    }
  }
  if (script_ok) {
    for (const auto& [step, message] : check_script(s.script))
      L.error(step >= 0 && script_array && static_cast<std::size_t>(step) < script_array->size() ? script_array->get(step) : script_node,
              step >= 0 ? "script[" + std::to_string(step) + "]" : "script", message);
  }

  // Metric and data.
  const auto* metric_table = L.table_field(root, "metric", "metric", true, nullptr);
  const auto* data_table = L.table_field(root, "data", "data", true, nullptr);
  bool metric_ok = false, data_ok = false;
  validate_metric(L, root, s, metric_table, metric_ok);
  validate_data(L, s, data_table, data_ok);
  if (metric_ok && data_ok) dry_run(L, s, metric_table);

  const auto* variants = L.table_field(root, "variants", "variants", false, nullptr);
  validate_variants(L, s, variants);

  // Properties: the ones listed (with what each needs from the script and the file), else the
  // property table's defaults for this script (set once [golden] is read).
  const auto roles = roles_in(s.script);
  if (auto props = L.string_list(root, "properties", "properties", &property_names(), "property")) {
    for (const auto& p : *props) {
      const Property& property = *find_property(p);
      if (property.needs_compute && script_ok &&
          std::find(roles.begin(), roles.end(), *property.needs_compute) == roles.end())
        L.error_at(L.line_of(&root, "properties"), "properties",
                   "'" + p + "' needs " + property.needs_compute_text + " in the script, and it has none");
      if (!property.needs_table.empty() && !root.get(property.needs_table))
        L.error_at(L.line_of(&root, "properties"), "properties",
                   "'" + p + "' needs a [" + property.needs_table + "] table with the value");
    }
    s.properties = *props;
  }

  if (const auto* tol = L.table_field(root, "tolerance", "tolerance", false, nullptr)) {
    L.check_keys(*tol, "tolerance");
    if (auto v = L.number_field(*tol, "rtol", "tolerance.rtol", 0, 1)) s.tolerance.rtol = *v;
    if (auto v = L.number_field(*tol, "atol", "tolerance.atol", 0, 1e12)) s.tolerance.atol = *v;
    if (auto v = L.string_list(*tol, "exact", "tolerance.exact", nullptr, "entry")) s.tolerance.exact = *v;
  }
  if (const auto* golden = L.table_field(root, "golden", "golden", false, nullptr)) {
    L.check_keys(*golden, "golden");
    Golden g;
    if (auto v = L.number_field(*golden, "rtol", "golden.rtol", 0, 1)) g.rtol = *v;
    if (auto v = L.number_field(*golden, "atol", "golden.atol", 0, 1e12)) g.atol = *v;
    const auto* value = golden->get("value");
    if (!value) {
      L.error(golden, "golden.value", "missing required field 'golden.value' (a number, a list or a table)");
    } else {
      std::string problem;
      if (auto v = golden_to_value(*value, problem)) {
        g.value = *v;
        s.golden = g;
      } else {
        L.error(value, "golden.value", problem);
      }
    }
    if (!s.checks("golden") && root.get("properties"))
      L.error(golden, "golden", "a [golden] value is given but 'golden' is not in 'properties'");
  }
  if (!root.get("properties")) s.properties = default_properties(s, roles);
  if (const auto* bi = L.table_field(root, "batch_invariant", "batch_invariant", false, nullptr)) {
    L.check_keys(*bi, "batch_invariant");
    if (auto sizes = L.int_list(*bi, "batch_sizes", "batch_invariant.batch_sizes", 1, kMaxSamples)) {
      if (sizes->empty()) L.error(bi, "batch_invariant.batch_sizes", "'batch_invariant.batch_sizes' is empty");
      s.batch_invariant_sizes = *sizes;
    }
  }
  if (s.batch_invariant_sizes.empty()) s.batch_invariant_sizes = {1, 2 * s.batch_size + 1};
  s.batch_invariant_sizes.erase(std::remove(s.batch_invariant_sizes.begin(), s.batch_invariant_sizes.end(), s.batch_size),
                                s.batch_invariant_sizes.end());

  validate_expectations(L, s, root, L.table_field(root, "expect", "expect", false, nullptr), variants);

  result.diagnostics = std::move(L.diagnostics());
  std::stable_sort(result.diagnostics.begin(), result.diagnostics.end(),
                   [](const Diagnostic& a, const Diagnostic& b) { return a.line < b.line; });
  if (result.diagnostics.empty()) result.scenario = std::move(s);
  return result;
}

LoadResult load_scenario(const std::string& path, const std::string& name) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    LoadResult result;
    result.diagnostics.push_back({path, 0, 0, "", "cannot read the file"});
    return result;
  }
  std::ostringstream text;
  text << in.rdbuf();
  return load_scenario_text(text.str(), path, name);
}

std::vector<ScenarioFile> find_scenario_files(const std::vector<std::string>& paths, std::vector<Diagnostic>& diagnostics) {
  std::vector<ScenarioFile> files;
  auto name_for = [](const fs::path& file, const fs::path& fallback_root) {
    const fs::path absolute = fs::weakly_canonical(fs::absolute(file));
    for (fs::path dir = absolute.parent_path(); !dir.empty() && dir != dir.root_path(); dir = dir.parent_path()) {
      if (dir.filename() == "scenarios") return fs::relative(absolute, dir).replace_extension("").generic_string();
    }
    return fs::relative(absolute, fs::weakly_canonical(fs::absolute(fallback_root))).replace_extension("").generic_string();
  };
  for (const auto& p : paths) {
    std::error_code ec;
    const fs::path path(p);
    if (fs::is_regular_file(path, ec)) {
      files.push_back({path.generic_string(), name_for(path, path.parent_path().empty() ? fs::path(".") : path.parent_path())});
    } else if (fs::is_directory(path, ec)) {
      std::vector<fs::path> found;
      for (fs::recursive_directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec))
        if (it->is_regular_file(ec) && it->path().extension() == ".toml") found.push_back(it->path());
      if (ec) diagnostics.push_back({p, 0, 0, "", "cannot read the folder: " + ec.message()});
      for (const auto& f : found) files.push_back({f.generic_string(), name_for(f, path)});
    } else {
      diagnostics.push_back({p, 0, 0, "", "no such scenario file or folder"});
    }
  }
  std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  files.erase(std::unique(files.begin(), files.end(), [](const auto& a, const auto& b) { return a.name == b.name && a.path == b.path; }),
              files.end());
  return files;
}

// --- JSON form (sent to the ranks) -----------------------------------------------------------

json Scenario::to_json() const {
  json script_json = json::array();
  for (const auto& step : script) script_json.push_back(step.text);
  json j = {{"name", name},
            {"file", file},
            {"description", description},
            {"tags", tags},
            {"metric", metric},
            {"metric_params", metric_params},
            {"data", data.to_json()},
            {"batch_size", batch_size},
            {"world_sizes", world_sizes},
            {"backends", backends},
            {"shards", shards},
            {"placements", placements},
            {"script", script_json},
            {"single_process", single_process},
            {"properties", properties},
            {"tolerance", {{"rtol", tolerance.rtol}, {"atol", tolerance.atol}, {"exact", tolerance.exact}}},
            {"expect", {{"error", expect.error}, {"compute", expect.compute}, {"fail", expect.fail}, {"reason", expect.reason}}},
            {"deadline", deadline_seconds},
            {"batch_invariant_sizes", batch_invariant_sizes}};
  j["golden"] = golden ? json{{"value", golden->value}, {"rtol", golden->rtol}, {"atol", golden->atol}} : json(nullptr);
  return j;
}

Scenario Scenario::from_json(const json& j) {
  Scenario s;
  s.name = j.at("name");
  s.file = j.at("file");
  s.description = j.at("description");
  s.tags = j.at("tags").get<std::vector<std::string>>();
  s.metric = j.at("metric");
  s.metric_params = j.at("metric_params");
  s.data = DataSpec::from_json(j.at("data"));
  s.batch_size = j.at("batch_size");
  s.world_sizes = j.at("world_sizes").get<std::vector<int>>();
  s.backends = j.at("backends").get<std::vector<std::string>>();
  s.shards = j.at("shards").get<std::vector<std::string>>();
  s.placements = j.at("placements").get<std::vector<std::string>>();
  for (const auto& text : j.at("script")) s.script.push_back(parse_step(text.get<std::string>()));
  s.single_process = j.at("single_process");
  s.properties = j.at("properties").get<std::vector<std::string>>();
  const auto& tol = j.at("tolerance");
  s.tolerance = {tol.at("rtol"), tol.at("atol"), tol.at("exact").get<std::vector<std::string>>()};
  const auto& ex = j.at("expect");
  s.expect = {ex.at("error"), ex.at("compute"), ex.at("fail").get<std::vector<std::string>>(), ex.at("reason")};
  s.deadline_seconds = j.at("deadline");
  s.batch_invariant_sizes = j.at("batch_invariant_sizes").get<std::vector<std::int64_t>>();
  if (!j.at("golden").is_null())
    s.golden = Golden{j.at("golden").at("value"), j.at("golden").at("rtol"), j.at("golden").at("atol")};
  return s;
}

}  // namespace distmetrics::harness
