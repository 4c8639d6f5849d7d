// Loading scenario files: the loader reads a file section by section, in steps (the TOML reader
// is scenario_reader.h, what the values mean scenario_validation.h). Every problem becomes a
// Diagnostic with the file, the line (from toml++'s source regions) and the field; loading goes
// on after a problem so that one run of `distmetrics validate` shows them all.
#include "distmetrics/harness/scenario.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <regex>
#include <sstream>

#include "distmetrics/harness/property.h"
#include "distmetrics/harness/scenario_fields.h"
#include "distmetrics/runtime/text.h"
#include "scenario_reader.h"
#include "scenario_validation.h"

namespace distmetrics::harness {
namespace {

using nlohmann::json;
using detail::ScenarioReader;

// The name comes from the file name: it must be usable in variant ids and filters.
void check_name(ScenarioReader& reader, const std::string& name) {
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '/' || c == '-')) {
      reader.error_at(0, "", "the scenario name '" + name + "' (from the file name) may hold only letters, digits and "
                        "'_', '.', '/', '-': rename the file");
      return;
    }
  }
}

// read() of the list-of-strings field at `path` of the top level.
std::optional<std::vector<std::string>> read_strings(ScenarioReader& reader, const toml::table& table, const std::string& path) {
  const auto v = reader.read(table, reader.field(path), nullptr);
  return v ? std::optional<std::vector<std::string>>(v->get<std::vector<std::string>>()) : std::nullopt;
}

// The top level's plain fields (deadline, single_process), then description and tags.
void read_top_level(ScenarioReader& reader, const toml::table& root, Scenario& s) {
  reader.open_table(root, "", s);
  if (auto d = reader.read_string(root, "description", nullptr)) {
    if (d->find_first_not_of(" \t\n") == std::string::npos)
      reader.error_at(reader.line_of(&root, "description"), "description", "'description' is empty: say what the scenario checks");
    s.description = *d;
  }
  if (auto tags = read_strings(reader, root, "tags")) {
    // Every tag becomes a marker (pytest -m TAG, list --json): it must be a valid marker name.
    static const std::regex marker_name("[A-Za-z_][A-Za-z0-9_]*");
    const auto* array = root["tags"].as_array();
    for (std::size_t i = 0; i < tags->size(); ++i) {
      if (std::regex_match((*tags)[i], marker_name)) continue;
      reader.error(array->get(i), "tags[" + std::to_string(i) + "]",
              "tag '" + (*tags)[i] + "' cannot be a marker: use letters, digits and '_', not starting with a digit");
    }
    s.tags = *tags;
  }
}

// The script, step by step, then its structure. Returns whether every step parsed.
bool read_script(ScenarioReader& reader, const toml::table& root, Scenario& s) {
  std::vector<std::string> script_text = default_script_text(s.single_process);
  if (auto list = read_strings(reader, root, "script")) script_text = *list;
  const auto* script_node = root.get("script");
  const auto* script_array = script_node ? script_node->as_array() : nullptr;
  bool script_ok = true;
  for (std::size_t i = 0; i < script_text.size(); ++i) {
    try {
      s.script.push_back(parse_step(script_text[i]));
    } catch (const std::invalid_argument& e) {
      reader.error(script_array && i < script_array->size() ? script_array->get(i) : script_node,
              "script[" + std::to_string(i) + "]", e.what());
      script_ok = false;
    }
  }
  if (script_ok) {
    for (const auto& [step, message] : check_script(s.script))
      reader.error(step >= 0 && script_array && static_cast<std::size_t>(step) < script_array->size() ? script_array->get(step) : script_node,
              step >= 0 ? "script[" + std::to_string(step) + "]" : "script", message);
  }
  return script_ok;
}

// [metric] and [data], then a dry run of a few samples when both are good. Returns whether
// both are good and the metric took the data.
bool read_metric_and_data(ScenarioReader& reader, const toml::table& root, Scenario& s) {
  const auto* metric_table = reader.table_field(root, "metric", "metric", true, nullptr);
  const auto* data_table = reader.table_field(root, "data", "data", true, nullptr);
  bool metric_ok = false, data_ok = false;
  detail::validate_metric(reader, root, s, metric_table, metric_ok);
  detail::validate_data(reader, s, data_table, data_ok);
  if (!metric_ok || !data_ok) return false;
  if (!detail::check_structured_data_for_metric(reader, s, data_table)) return false;
  const auto before = reader.diagnostics().size();
  detail::dry_run(reader, s, metric_table);
  return reader.diagnostics().size() == before;
}

// 'properties': the ones listed, each with what it needs from the script and the file (the
// property table says); the defaults come later, once [golden] is read.
void read_properties(ScenarioReader& reader, const toml::table& root, Scenario& s, bool script_ok,
                     const std::vector<ComputeRole>& roles) {
  auto props = read_strings(reader, root, "properties");
  if (!props) return;
  for (const auto& p : *props) {
    const Property& property = *find_property(p);
    if (property.needs_compute && script_ok &&
        std::find(roles.begin(), roles.end(), *property.needs_compute) == roles.end())
      reader.error_at(reader.line_of(&root, "properties"), "properties",
                 "'" + p + "' needs " + property.needs_compute_text + " in the script, and it has none");
    if (!property.needs_table.empty() && !root.get(property.needs_table))
      reader.error_at(reader.line_of(&root, "properties"), "properties",
                 "'" + p + "' needs a [" + property.needs_table + "] table with the value");
  }
  s.properties = *props;
}

void read_tolerance(ScenarioReader& reader, const toml::table& root, Scenario& s) {
  const auto* tol = reader.table_field(root, "tolerance", "tolerance", false, nullptr);
  if (!tol) return;
  reader.open_table(*tol, "tolerance", s);  // every field of [tolerance] is plain
}

void read_golden(ScenarioReader& reader, const toml::table& root, Scenario& s) {
  const auto* golden = reader.table_field(root, "golden", "golden", false, nullptr);
  if (!golden) return;
  reader.open_table(*golden, "golden", s);
  Golden g;
  if (auto v = reader.read(*golden, reader.field("golden.rtol"), golden)) g.rtol = v->get<double>();
  if (auto v = reader.read(*golden, reader.field("golden.atol"), golden)) g.atol = v->get<double>();
  if (!golden->get("value")) {
    reader.error(golden, "golden.value", "missing required field 'golden.value' (a number, a list or a table)");
  } else if (auto v = reader.read(*golden, reader.field("golden.value"), golden)) {
    g.value = *v;
    s.golden = g;
  }
  if (!s.checks("golden") && root.get("properties"))
    reader.error(golden, "golden", "a [golden] value is given but 'golden' is not in 'properties'");
}

// [batch_invariant] batch_sizes, else 1 and 2 * batch_size + 1; never the scenario's own.
void read_batch_invariant(ScenarioReader& reader, const toml::table& root, Scenario& s) {
  if (const auto* bi = reader.table_field(root, "batch_invariant", "batch_invariant", false, nullptr)) {
    reader.open_table(*bi, "batch_invariant", s);
    if (auto sizes = reader.read(*bi, reader.field("batch_invariant.batch_sizes"), bi)) {
      if (sizes->empty()) reader.error(bi, "batch_invariant.batch_sizes", "'batch_invariant.batch_sizes' is empty");
      s.batch_invariant_sizes = sizes->get<std::vector<std::int64_t>>();
    }
  }
  if (s.batch_invariant_sizes.empty()) {
    s.batch_invariant_sizes = default_batch_invariant_sizes(s.batch_size);
    return;
  }
  s.batch_invariant_sizes.erase(std::remove(s.batch_invariant_sizes.begin(), s.batch_invariant_sizes.end(), s.batch_size),
                                s.batch_invariant_sizes.end());
}

}  // namespace

std::vector<std::int64_t> default_batch_invariant_sizes(std::int64_t batch_size) {
  std::vector<std::int64_t> sizes;
  for (std::int64_t size : {std::int64_t{1}, 2 * batch_size + 1})
    if (size != batch_size) sizes.push_back(size);
  return sizes;
}

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
  // The runner's metric errors, then the built-in Python exceptions a Python metric's compute()
  // raises on input it cannot compute (a report keeps a Python exception's class name:
  // pyhost's describe_python_error); Ignite's own is named NotComputableError too.
  static const std::vector<std::string> names = {"NotComputableError", "InputError",     "SyncError",
                                                 "ValueError",         "RuntimeError",   "TypeError",
                                                 "ZeroDivisionError",  "AssertionError", "IndexError",
                                                 "KeyError",           "AttributeError"};
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

namespace {
// toml++'s description, or for a string left open (what it reports as a control character,
// the line's end, or the end of the file, inside a string) one that says so.
std::string toml_error_text(const std::string& text, const toml::parse_error& e) {
  const std::string description(e.description());
  const bool in_string = description.rfind("Error while parsing string", 0) == 0 ||
                         description.rfind("Error while parsing literal string", 0) == 0;
  if (!in_string) return description;
  if (description.find("end-of-file") != std::string::npos)
    return "unterminated string: it has no closing quote before the end of the file";
  // The character it stopped at: a line break means the string runs past its line.
  std::size_t at = 0;
  for (std::size_t line = 1; line < e.source().begin.line && at != std::string::npos; ++line) {
    at = text.find('\n', at);
    if (at != std::string::npos) ++at;
  }
  if (at != std::string::npos) at += e.source().begin.column - 1;
  if (at < text.size() && (text[at] == '\n' || text[at] == '\r'))
    return "unterminated string: it has no closing quote before the end of line " +
           std::to_string(e.source().begin.line) + " (a string must close on the line it starts; use \"\"\" for "
           "several lines)";
  return description;
}
}  // namespace

LoadResult load_scenario_text(const std::string& text, const std::string& path, const std::string& name) {
  return load_scenario_text(text, path, name, scenario_fields());
}

LoadResult load_scenario_text(const std::string& text, const std::string& path, const std::string& name,
                              const ScenarioFields& fields) {
  LoadResult result;
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    result.diagnostics.push_back({path, static_cast<int>(e.source().begin.line),
                                  static_cast<int>(e.source().begin.column), "",
                                  "not valid TOML: " + toml_error_text(text, e)});
    return result;
  }
  ScenarioReader reader(path, fields);
  Scenario s;
  s.name = name;
  s.file = path;
  check_name(reader, name);
  read_top_level(reader, root, s);
  const bool script_ok = read_script(reader, root, s);
  const bool data_ok = read_metric_and_data(reader, root, s);
  const auto* variants = reader.table_field(root, "variants", "variants", false, nullptr);
  detail::validate_variants(reader, s, variants);
  const auto roles = roles_in(s.script);
  read_properties(reader, root, s, script_ok, roles);
  read_tolerance(reader, root, s);
  read_golden(reader, root, s);
  detail::validate_reference(reader, s, root, data_ok);
  if (!root.get("properties")) s.properties = default_properties(s, roles);
  read_batch_invariant(reader, root, s);
  detail::validate_expectations(reader, s, root, reader.table_field(root, "expect", "expect", false, nullptr), variants);

  result.diagnostics = std::move(reader.diagnostics());
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

// The JSON form (Scenario::to_json, from_json: what conform's helper worker is sent) walks the
// field table: scenario_fields.cpp.

}  // namespace distmetrics::harness
