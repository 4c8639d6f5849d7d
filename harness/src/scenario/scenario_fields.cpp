// The scenario field table (scenario_fields.h) and what walks it without the reader: the docs
// row, the tables JSON, the wire and the TOML writer. Adding a field is one entry here (and its
// tests); a plain one needs no other code.
#include "distmetrics/harness/scenario_fields.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <stdexcept>

#include "distmetrics/harness/input_dtype.h"
#include "distmetrics/harness/placement.h"
#include "distmetrics/harness/property.h"
#include "distmetrics/harness/shard.h"
#include "distmetrics/runtime/backends.h"
#include "scenario_validation.h"

namespace distmetrics::harness {
namespace {

using nlohmann::json;
using FieldGet = std::function<json(const Scenario&)>;
using FieldSet = std::function<void(Scenario&, const json&)>;

// One descriptor, built a property at a time so that each entry of the table reads as a line.
class FieldBuilder {
 public:
  FieldBuilder(std::string path, FieldType type, std::string default_text, std::string docs) {
    f_.path = std::move(path);
    f_.type = type;
    f_.default_text = std::move(default_text);
    f_.docs = std::move(docs);
  }
  FieldBuilder& required() { return f_.required = true, *this; }
  FieldBuilder& ints(std::int64_t lo, std::int64_t hi) { return f_.int_min = lo, f_.int_max = hi, *this; }
  FieldBuilder& range(double lo, double hi, bool lo_open = false) { return f_.min = lo, f_.max = hi, f_.min_open = lo_open, *this; }
  FieldBuilder& choices(std::vector<std::string> c) { return f_.choices = std::move(c), *this; }
  FieldBuilder& known(std::function<std::vector<std::string>()> k, std::string what) {
    return f_.known = std::move(k), f_.known_what = std::move(what), *this;
  }
  FieldBuilder& what(std::string w) { return f_.known_what = std::move(w), *this; }
  FieldBuilder& repeats() { return f_.repeats = true, *this; }
  FieldBuilder& non_empty() { return f_.non_empty = true, *this; }
  FieldBuilder& plain() { return f_.plain = true, *this; }
  FieldBuilder& program_only() { return f_.in_file = false, *this; }
  FieldBuilder& wire(std::string where, FieldGet get, FieldSet set) {
    return f_.wire = std::move(where), f_.get = std::move(get), f_.set = std::move(set), *this;
  }
  FieldBuilder& toml(FieldGet write) { return f_.to_toml = std::move(write), *this; }
  FieldBuilder& toml_always() { return f_.to_toml = f_.get, *this; }
  // Written when not empty.
  FieldBuilder& toml_unless_empty() {
    FieldGet get = f_.get;
    f_.to_toml = [get](const Scenario& s) {
      json v = get(s);
      return v.empty() ? json(nullptr) : v;
    };
    return *this;
  }
  operator ScenarioField() const { return f_; }

 private:
  ScenarioField f_;
};

// A data file given (not a built-in generator's structured file, which explore writes as its generator).
bool data_from_file(const Scenario& s) { return !s.data.file.empty() && s.data.generator.empty(); }

std::vector<std::string> step_texts(const Scenario& s) {
  std::vector<std::string> texts;
  for (const auto& step : s.script) texts.push_back(step.text);
  return texts;
}

std::vector<std::string> property_name_list() { return property_names(); }

ScenarioFields top_level_fields() {
  using T = FieldType;
  return {
      FieldBuilder("description", T::String, "required", "what the scenario checks (not empty)")
          .required()
          .wire("description", [](const Scenario& s) { return json(s.description); },
                [](Scenario& s, const json& v) { s.description = v; })
          .toml_always(),
      FieldBuilder("tags", T::StringList, "none",
            "markers (`list --json`, `pytest -m TAG`): letters, digits and `_`, not starting with a digit")
          .what("tag")
          .wire("tags", [](const Scenario& s) { return json(s.tags); }, [](Scenario& s, const json& v) { s.tags = v.get<std::vector<std::string>>(); })
          .toml_unless_empty(),
      FieldBuilder("deadline", T::Number, "30.0", "seconds a variant may take (at most 3600); `run --deadline` overrides")
          .range(0, detail::kMaxDeadline, true)
          .plain()
          .wire("deadline", [](const Scenario& s) { return json(s.deadline_seconds); },
                [](Scenario& s, const json& v) { s.deadline_seconds = v; })
          .toml_always(),
      FieldBuilder("single_process", T::String, "global",
            "what the single-process reference is fed: `global` (the union, in global order) or `per_step`")
          .choices({"global", "per_step"})
          .plain()
          .wire("single_process", [](const Scenario& s) { return json(s.single_process); },
                [](Scenario& s, const json& v) { s.single_process = v; })
          .toml_always(),
      FieldBuilder("script", T::StringList, "the default script", "the steps every rank runs ([The script](#the-script))")
          .what("step")
          .repeats()
          .wire("script", [](const Scenario& s) { return json(step_texts(s)); },
                [](Scenario& s, const json& v) {
                  s.script.clear();
                  for (const auto& text : v) s.script.push_back(parse_step(text.get<std::string>()));
                })
          .toml_always(),
      FieldBuilder("properties", T::StringList, "every property the script can judge",
            "the properties checked, besides `no_hang`; by default also `batch_invariant` (global mode) and "
            "`golden`, `agrees_with_reference` when given")
          .known(property_name_list, "property")
          .wire("properties", [](const Scenario& s) { return json(s.properties); },
                [](Scenario& s, const json& v) { s.properties = v.get<std::vector<std::string>>(); })
          .toml_always(),
  };
}

ScenarioFields metric_fields() {
  using T = FieldType;
  return {
      FieldBuilder("metric", T::Table, "required", "the metric checked").required(),
      FieldBuilder("metric.name", T::String, "required", "a name in the metric catalog ([Metric](#metric))")
          .required()
          .wire("metric", [](const Scenario& s) { return json(s.metric); }, [](Scenario& s, const json& v) { s.metric = v; })
          .toml_always(),
      FieldBuilder("metric.params", T::Table, "the metric's defaults", "its parameters, checked by its registry")
          .wire("metric_params", [](const Scenario& s) { return s.metric_params; },
                [](Scenario& s, const json& v) { s.metric_params = v; })
          .toml_unless_empty(),
  };
}

ScenarioFields data_fields() {
  using T = FieldType;
  return {
      FieldBuilder("data", T::Table, "required", "the samples: one of a generator, a file or a Python generator").required(),
      FieldBuilder("data.generator", T::String, "one source required", "a data generator ([Data generators](#data-generators))")
          .wire("data.generator", [](const Scenario& s) { return json(s.data.generator); },
                [](Scenario& s, const json& v) { s.data.generator = v; })
          .toml([](const Scenario& s) { return data_from_file(s) ? json(nullptr) : json(s.data.generator); }),
      FieldBuilder("data.file", T::String, "one source required", "a `.pt` or `.npz` file, relative to the scenario file")
          .wire("data.file", [](const Scenario& s) { return json(s.data.file); }, [](Scenario& s, const json& v) { s.data.file = v; })
          .toml([](const Scenario& s) { return data_from_file(s) ? json(s.data.file) : json(nullptr); }),
      FieldBuilder("data.python", T::String, "one source required", "`module:attribute` of a Python generator, called once")
          .wire("data.python", [](const Scenario& s) { return json(s.data.python); },
                [](Scenario& s, const json& v) { s.data.python = v; }),
      FieldBuilder("data.params", T::Table, "the generator's defaults", "a generator's parameters (none for a file)")
          .wire("data.params", [](const Scenario& s) { return s.data.params; }, [](Scenario& s, const json& v) { s.data.params = v; })
          .toml([](const Scenario& s) { return data_from_file(s) || s.data.params.empty() ? json(nullptr) : s.data.params; }),
      FieldBuilder("data.seed", T::Integer, "required for a generator; else 0", "the generator's seed, >= 0")
          .ints(0, std::numeric_limits<std::int64_t>::max())
          .wire("data.seed", [](const Scenario& s) { return json(s.data.seed); }, [](Scenario& s, const json& v) { s.data.seed = v; })
          .toml_always(),
      FieldBuilder("data.num_samples", T::Integer, "required for a generator; else the file's",
            "samples in all: 0 to 67,108,864 generated, at most 1,000,000 held whole ([Large data](#large-data-generated-batch-by-batch))")
          .ints(0, detail::kMaxGeneratedSamples)
          .wire("data.num_samples", [](const Scenario& s) { return json(s.data.num_samples); },
                [](Scenario& s, const json& v) { s.data.num_samples = v; })
          .toml([](const Scenario& s) {
            return data_from_file(s) && s.data.num_samples < 0 ? json(nullptr) : json(s.data.num_samples);
          }),
      FieldBuilder("data.batch_size", T::Integer, "required", "samples per batch, per rank and in the single process")
          .required()
          .ints(1, detail::kMaxSamples)
          .wire("batch_size", [](const Scenario& s) { return json(s.batch_size); }, [](Scenario& s, const json& v) { s.batch_size = v; })
          .toml_always(),
      FieldBuilder("data.dtype", T::String, "float32", "the dtype of the generated floating-point tensors")
          .choices({"float32", "float64"})
          .wire("data.dtype", [](const Scenario& s) { return json(s.data.dtype); }, [](Scenario& s, const json& v) { s.data.dtype = v; })
          .toml_always(),
      FieldBuilder("data.structured", T::Boolean, "false",
            "`true`: `data.file` holds structured samples for a Python metric ([Structured data](#structured-data-for-python-metrics))")
          .wire("data.structured", [](const Scenario& s) { return json(s.data.structured); },
                [](Scenario& s, const json& v) { s.data.structured = v; }),
  };
}

ScenarioFields variants_fields() {
  using T = FieldType;
  auto names = [](std::vector<std::string> Scenario::*member) {
    return std::make_pair(FieldGet([member](const Scenario& s) { return json(s.*member); }),
                          FieldSet([member](Scenario& s, const json& v) { s.*member = v.get<std::vector<std::string>>(); }));
  };
  const auto backends = names(&Scenario::backends), shards = names(&Scenario::shards),
             placements = names(&Scenario::placements), dtypes = names(&Scenario::dtypes);
  return {
      FieldBuilder("variants", T::Table, "every default", "what the variants vary"),
      FieldBuilder("variants.world_sizes", T::IntegerList, "[1, 2, 3, 4]", "numbers of ranks, 1 to 64")
          .ints(1, detail::kMaxWorldSize)
          .non_empty()
          .plain()
          .wire("world_sizes", [](const Scenario& s) { return json(s.world_sizes); },
                [](Scenario& s, const json& v) { s.world_sizes = v.get<std::vector<int>>(); })
          .toml_always(),
      FieldBuilder("variants.backends", T::StringList, "[\"gloo\", \"mpi\"]", "backends ([Backends](#backends))")
          .known(runtime::backend_names, "backend").non_empty().plain()
          .wire("backends", backends.first, backends.second).toml_always(),
      FieldBuilder("variants.shards", T::StringList, "[\"even\"]", "shard policies ([Shard policies](#shard-policies))")
          .known(shard_policy_names, "shard policy").non_empty().plain()
          .wire("shards", shards.first, shards.second).toml_always(),
      FieldBuilder("variants.placements", T::StringList, "[\"cpu\"]", "placements ([Placements](#placements))")
          .known(placement_names, "placement").non_empty().plain()
          .wire("placements", placements.first, placements.second).toml_always(),
      FieldBuilder("variants.dtypes", T::StringList, "none: the data as generated", "input dtypes ([Input dtypes](#input-dtypes))")
          .known(input_dtype_names, "input dtype").non_empty().plain()
          .wire("dtypes", dtypes.first, dtypes.second).toml_unless_empty(),
  };
}

ScenarioFields judging_fields() {
  using T = FieldType;
  return {
      FieldBuilder("tolerance", T::Table, "every default", "how close floating-point results must be ([Tolerances](#tolerances))"),
      FieldBuilder("tolerance.rtol", T::Number, "1e-6", "relative tolerance, 0 to 1; widened to float32's for a float32 result")
          .range(0, 1).plain()
          .wire("tolerance.rtol", [](const Scenario& s) { return json(s.tolerance.rtol); },
                [](Scenario& s, const json& v) { s.tolerance.rtol = v; })
          .toml_always(),
      FieldBuilder("tolerance.atol", T::Number, "1e-9", "absolute tolerance, 0 to 1e12")
          .range(0, 1e12).plain()
          .wire("tolerance.atol", [](const Scenario& s) { return json(s.tolerance.atol); },
                [](Scenario& s, const json& v) { s.tolerance.atol = v; })
          .toml_always(),
      FieldBuilder("tolerance.exact", T::StringList, "none", "named entries compared exactly (integer tensors always are)")
          .what("entry").plain()
          .wire("tolerance.exact", [](const Scenario& s) { return json(s.tolerance.exact); },
                [](Scenario& s, const json& v) { s.tolerance.exact = v.get<std::vector<std::string>>(); })
          .toml_unless_empty(),
      FieldBuilder("golden", T::Table, "none", "the result on all the data, written down (property `golden`)"),
      FieldBuilder("golden.value", T::Value, "required", "a number (or \"nan\", \"inf\", \"-inf\"), a nested list (a tensor) or a table of named values")
          .required()
          .wire("golden.value", [](const Scenario& s) { return s.golden ? s.golden->value : json(nullptr); },
                [](Scenario& s, const json& v) { s.golden = Golden{v}; }),
      FieldBuilder("golden.rtol", T::Number, "1e-6", "relative tolerance, 0 to 1")
          .range(0, 1)
          .wire("golden.rtol", [](const Scenario& s) { return s.golden ? json(s.golden->rtol) : json(nullptr); },
                [](Scenario& s, const json& v) { if (s.golden) s.golden->rtol = v; }),
      FieldBuilder("golden.atol", T::Number, "1e-9", "absolute tolerance, 0 to 1e12")
          .range(0, 1e12)
          .wire("golden.atol", [](const Scenario& s) { return s.golden ? json(s.golden->atol) : json(nullptr); },
                [](Scenario& s, const json& v) { if (s.golden) s.golden->atol = v; }),
      FieldBuilder("reference", T::Table, "none", "a Python callable judged on all the data (property `agrees_with_reference`; needs `--allow-python`)"),
      FieldBuilder("reference.python", T::String, "required", "`module:attribute` of the callable")
          .required()
          .wire("reference.python", [](const Scenario& s) { return s.reference ? json(s.reference->python) : json(nullptr); },
                [](Scenario& s, const json& v) { s.reference = PythonReference{v.get<std::string>()}; }),
      FieldBuilder("reference.kwargs", T::Table, "{}", "keyword arguments of the callable")
          .wire("reference.kwargs", [](const Scenario& s) { return s.reference ? s.reference->kwargs : json(nullptr); },
                [](Scenario& s, const json& v) { if (s.reference) s.reference->kwargs = v; }),
  };
}

ScenarioFields expect_fields() {
  using T = FieldType;
  return {
      FieldBuilder("expect", T::Table, "none", "an error expected, or properties expected to fail ([Expected errors](#expected-errors))"),
      FieldBuilder("expect.error", T::String, "none", "the error every rank and the single process raise together")
          .known([] { return expected_error_names(); }, "error type")
          .wire("expect.error", [](const Scenario& s) { return json(s.expect.error); },
                [](Scenario& s, const json& v) { s.expect.error = v; }),
      FieldBuilder("expect.compute", T::Integer, "1", "the compute (1-based) that raises `expect.error`")
          .ints(1, 1'000'000)
          .wire("expect.compute", [](const Scenario& s) { return json(s.expect.compute); },  // 0-based on the wire
                [](Scenario& s, const json& v) { s.expect.compute = v; }),
      FieldBuilder("expect.fail", T::StringList, "none", "properties that must fail (an expected failure)")
          .known(property_name_list, "property")
          .wire("expect.fail", [](const Scenario& s) { return json(s.expect.fail); },
                [](Scenario& s, const json& v) { s.expect.fail = v.get<std::vector<std::string>>(); }),
      FieldBuilder("expect.reason", T::String, "required with `fail`", "why they must fail")
          .plain()
          .wire("expect.reason", [](const Scenario& s) { return json(s.expect.reason); },
                [](Scenario& s, const json& v) { s.expect.reason = v; }),
      FieldBuilder("expect.no_data_value", T::String, "", "")
          .program_only()
          .wire("expect.no_data_value", [](const Scenario& s) { return json(s.expect.no_data_value); },
                [](Scenario& s, const json& v) { s.expect.no_data_value = v; }),
      FieldBuilder("batch_invariant", T::Table, "every default", "the single-process re-runs of property `batch_invariant`"),
      FieldBuilder("batch_invariant.batch_sizes", T::IntegerList, "[1, 2 * batch_size + 1]",
            "batch sizes to re-run with (the scenario's own is left out)")
          .ints(1, detail::kMaxSamples)
          .wire("batch_invariant_sizes", [](const Scenario& s) { return json(s.batch_invariant_sizes); },
                [](Scenario& s, const json& v) { s.batch_invariant_sizes = v.get<std::vector<std::int64_t>>(); })
          .toml([](const Scenario& s) {
            // Left out when it is what the loader gives a file without it.
            return s.batch_invariant_sizes.empty() || s.batch_invariant_sizes == default_batch_invariant_sizes(s.batch_size)
                       ? json(nullptr)
                       : json(s.batch_invariant_sizes);
          }),
  };
}

// JSON pointer of a dotted wire path.
json::json_pointer wire_pointer(const std::string& wire) {
  std::string pointer = "/" + wire;
  for (auto& c : pointer)
    if (c == '.') c = '/';
  return json::json_pointer(pointer);
}

std::string toml_string(const std::string& text) { return json(text).dump(); }  // JSON escapes are TOML's

std::string toml_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%.17g", v);
  std::string text = buffer;
  if (text.find_first_of(".eE") == std::string::npos) text += ".0";
  return text;
}

std::string toml_value(const json& v) {
  if (v.is_string()) return toml_string(v.get<std::string>());
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
  if (v.is_number_float()) return toml_float(v.get<double>());
  if (v.is_array()) {
    std::string out = "[";
    for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + toml_value(v[i]);
    return out + "]";
  }
  if (v.is_object()) {
    std::string out = "{";
    bool first = true;
    for (const auto& [key, value] : v.items()) {
      out += std::string(first ? " " : ", ") + toml_string(key) + " = " + toml_value(value);
      first = false;
    }
    return out + (first ? "}" : " }");
  }
  return "\"\"";  // null has no TOML form; the values explore writes are never null
}

}  // namespace

const char* field_type_name(FieldType type) {
  switch (type) {
    case FieldType::String: return "string";
    case FieldType::Integer: return "integer";
    case FieldType::Number: return "number";
    case FieldType::Boolean: return "boolean";
    case FieldType::StringList: return "list of strings";
    case FieldType::IntegerList: return "list of integers";
    case FieldType::Table: return "table";
    case FieldType::Value: return "number, list or table";
  }
  return "?";
}

std::string ScenarioField::section() const {
  const auto dot = path.rfind('.');
  return dot == std::string::npos ? "" : path.substr(0, dot);
}

std::string ScenarioField::key() const {
  const auto dot = path.rfind('.');
  return dot == std::string::npos ? path : path.substr(dot + 1);
}

const ScenarioFields& scenario_fields() {
  static const ScenarioFields fields = [] {
    ScenarioFields all;
    for (auto part : {top_level_fields(), metric_fields(), data_fields(), variants_fields(), judging_fields(), expect_fields()})
      all.insert(all.end(), part.begin(), part.end());
    return all;
  }();
  return fields;
}

const ScenarioField* find_scenario_field(const ScenarioFields& fields, const std::string& path) {
  for (const auto& f : fields)
    if (f.path == path) return &f;
  return nullptr;
}

std::vector<std::string> scenario_field_keys(const ScenarioFields& fields, const std::string& section) {
  std::vector<std::string> keys;
  for (const auto& f : fields)
    if (f.in_file && f.section() == section) keys.push_back(f.key());
  return keys;
}

std::vector<std::string> scenario_field_problems(const ScenarioFields& fields) {
  std::vector<std::string> problems;
  std::set<std::string> seen;
  for (const auto& f : fields) {
    const std::string name = "field '" + f.path + "'";
    if (!seen.insert(f.path).second) problems.push_back(name + ": its path is used twice");
    const std::string section = f.section();
    if (!section.empty()) {
      const auto* owner = find_scenario_field(fields, section);
      if (!owner || owner->type != FieldType::Table) problems.push_back(name + ": its table '" + section + "' is no table field");
    }
    if (f.type != FieldType::Table && !f.get) problems.push_back(name + ": not on the wire (no get)");
    if (f.get && (!f.set || f.wire.empty())) problems.push_back(name + ": a get without a set and a wire path");
    if (f.in_file && f.docs.empty()) problems.push_back(name + ": no docs");
    if (f.plain && f.type == FieldType::Table) problems.push_back(name + ": a table cannot be plain (its keys are its own fields)");
    if (f.plain && !f.set) problems.push_back(name + ": plain but nothing stores it (no set)");
    if (!f.choices.empty() && f.type != FieldType::String) problems.push_back(name + ": choices on a field that is no string");
  }
  return problems;
}

std::string scenario_field_docs_row(const ScenarioField& f) {
  const std::string name = f.type == FieldType::Table && f.section().empty() ? "[" + f.path + "]" : f.path;
  return "| `" + name + "` | " + field_type_name(f.type) + " | " + f.default_text + " | " + f.docs + " |";
}

nlohmann::json scenario_fields_json(const ScenarioFields& fields) {
  json out = json::array();
  for (const auto& f : fields) {
    if (!f.in_file) continue;
    out.push_back({{"name", f.path},
                   {"section", f.section()},
                   {"key", f.key()},
                   {"type", field_type_name(f.type)},
                   {"default", f.default_text},
                   {"required", f.required},
                   {"choices", f.choices},
                   {"docs", f.docs}});
  }
  return out;
}

nlohmann::json scenario_to_wire(const Scenario& s, const ScenarioFields& fields) {
  json wire = {{"name", s.name}, {"file", s.file}};
  for (const auto& f : fields) {
    if (!f.get) continue;
    json value = f.get(s);
    if (!value.is_null()) wire[wire_pointer(f.wire)] = std::move(value);
  }
  return wire;
}

Scenario scenario_from_wire(const nlohmann::json& wire, const ScenarioFields& fields) {
  Scenario s;
  s.name = wire.at("name");
  s.file = wire.at("file");
  for (const auto& f : fields) {
    if (!f.set) continue;
    const auto pointer = wire_pointer(f.wire);
    if (wire.contains(pointer) && !wire.at(pointer).is_null()) f.set(s, wire.at(pointer));
  }
  return s;
}

std::string scenario_fields_toml(const Scenario& s, const ScenarioFields& fields, const std::set<std::string>& leave_out) {
  // Each table's lines under one header, the top level's first, tables in the order of their
  // first field (a field added at the table's end still joins its own section).
  std::vector<std::pair<std::string, std::string>> sections = {{"", ""}};
  for (const auto& f : fields) {
    if (!f.to_toml || leave_out.count(f.path)) continue;
    const json value = f.to_toml(s);
    if (value.is_null()) continue;
    const std::string section = f.section();
    auto at = std::find_if(sections.begin(), sections.end(), [&](const auto& entry) { return entry.first == section; });
    if (at == sections.end()) at = sections.insert(sections.end(), {section, ""});
    at->second += f.key() + " = " + toml_value(value) + "\n";
  }
  std::string out = sections.front().second;
  for (auto it = sections.begin() + 1; it != sections.end(); ++it) out += "\n[" + it->first + "]\n" + it->second;
  return out;
}

json Scenario::to_json() const { return scenario_to_wire(*this, scenario_fields()); }

Scenario Scenario::from_json(const json& j) { return scenario_from_wire(j, scenario_fields()); }

}  // namespace distmetrics::harness
