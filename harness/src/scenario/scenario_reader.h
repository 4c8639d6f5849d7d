// The TOML reader of scenario files: typed fields (tables, strings, integers, numbers, lists)
// read from a toml++ table, each problem a Diagnostic with the file, line and dotted field; the
// fields each table of a scenario file may hold, from the field table (scenario_fields.h:
// unknown ones get close-name suggestions), each read with its descriptor's checks, and the plain
// ones stored. It knows the shape of a scenario file, not what the values mean
// (scenario_validation.h).
#pragma once

#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "distmetrics/harness/scenario.h"
#include "distmetrics/harness/scenario_fields.h"
#include "distmetrics/runtime/text.h"
#include "toml_json.h"

namespace distmetrics::harness::detail {

std::string join_path(const std::string& parent, const std::string& key);

// A golden value written in TOML as Value JSON: a number (or "nan"/"inf"/"-inf"), a nested list
// (a float64 tensor), or a table of named values; nullopt with `problem` set when it is none.
std::optional<nlohmann::json> golden_to_value(const toml::node& node, std::string& problem);

class ScenarioReader {
 public:
  ScenarioReader(std::string file, const ScenarioFields& fields) : file_(std::move(file)), fields_(&fields) {}

  // The descriptor at `path` (a path the loader's code names: its absence is a bug).
  const ScenarioField& field(const std::string& path) const {
    const auto* f = find_scenario_field(*fields_, path);
    if (!f) throw std::logic_error("no scenario field '" + path + "' in the field table");
    return *f;
  }

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
    const auto known = scenario_field_keys(*fields_, path);
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
      error(node, path, "'" + path + "' must be a table, got " + detail::toml_type_name(*node));
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
      error(node, path, "'" + path + "' must be a string, got " + detail::toml_type_name(*node));
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
      error(node, path, "'" + path + "' must be an integer, got " + detail::toml_type_name(*node));
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
      error(node, path, "'" + path + "' must be a number, got " + detail::toml_type_name(*node));
      return std::nullopt;
    }
    const double v = node->value<double>().value_or(NAN);
    if (!std::isfinite(v) || v < lo || v > hi || (lo_open && v == lo)) {
      std::ostringstream range;
      range << (lo_open ? "(" : "[") << lo << ", " << hi << "]";
      error(node, path, "'" + path + "' must be in " + range.str() + ", got " + nlohmann::json(v).dump());
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
      error(node, path, "'" + path + "' must be a list of strings, got " + detail::toml_type_name(*node));
      return std::nullopt;
    }
    std::vector<std::string> out;
    bool ok = true;
    for (std::size_t i = 0; i < array->size(); ++i) {
      const auto& item = *array->get(i);
      const std::string item_path = path + "[" + std::to_string(i) + "]";
      if (!item.is_string()) {
        error(&item, item_path, "entries of '" + path + "' must be strings, got " + detail::toml_type_name(item));
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
      error(node, path, "'" + path + "' must be a list of integers, got " + detail::toml_type_name(*node));
      return std::nullopt;
    }
    std::vector<std::int64_t> out;
    bool ok = true;
    for (std::size_t i = 0; i < array->size(); ++i) {
      const auto& item = *array->get(i);
      const std::string item_path = path + "[" + std::to_string(i) + "]";
      if (!item.is_integer()) {
        error(&item, item_path, "entries of '" + path + "' must be integers, got " + detail::toml_type_name(item));
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

  // The field `f` of `table` (its key, at its path), with every check its descriptor gives:
  // type, range, choices, known entries, repeats, emptiness; nullopt when absent or refused.
  std::optional<nlohmann::json> read(const toml::table& table, const ScenarioField& f, const toml::node* owner) {
    std::optional<nlohmann::json> value;
    const std::string key = f.key();
    switch (f.type) {
      case FieldType::String:
        if (auto v = string_field(table, key, f.path, f.required, owner)) value = *v;
        if (value && !f.choices.empty() &&
            std::find(f.choices.begin(), f.choices.end(), value->get<std::string>()) == f.choices.end()) {
          const std::string given = value->get<std::string>();
          error_at(line_of(&table, key), f.path,
                   "'" + f.path + "' must be " + choices_text(f.choices) + ", got '" + given + "'" +
                       runtime::did_you_mean(given, f.choices));
          value.reset();
        }
        break;
      case FieldType::Integer:
        if (auto v = int_field(table, key, f.path, f.required, owner, f.int_min, f.int_max)) value = *v;
        break;
      case FieldType::Number:
        if (auto v = number_field(table, key, f.path, f.min, f.max, f.min_open)) value = *v;
        break;
      case FieldType::Boolean:
        if (const auto* node = find(table, key)) {
          if (node->is_boolean()) value = node->as_boolean()->get();
          else error(node, f.path, "'" + f.path + "' must be true or false, got " + detail::toml_type_name(*node));
        }
        break;
      case FieldType::StringList: {
        const auto known = f.known ? f.known() : std::vector<std::string>{};
        if (auto v = string_list(table, key, f.path, f.known ? &known : nullptr, f.known_what, !f.repeats)) value = *v;
        break;
      }
      case FieldType::IntegerList:
        if (auto v = int_list(table, key, f.path, f.int_min, f.int_max)) value = *v;
        break;
      case FieldType::Table:
        if (const auto* t = table_field(table, key, f.path, f.required, owner)) value = toml_to_json(*t);
        break;
      case FieldType::Value:
        if (const auto* node = find(table, key)) {
          std::string problem;
          if (auto v = golden_to_value(*node, problem)) value = *v;
          else error(node, f.path, problem);
        }
        break;
    }
    if (value && f.non_empty && value->is_array() && value->empty())
      error_at(line_of(&table, key), f.path, "'" + f.path + "' is empty");
    return value;
  }

  // read() of the string field at `path`, as a string.
  std::optional<std::string> read_string(const toml::table& table, const std::string& path, const toml::node* owner) {
    const auto v = read(table, field(path), owner);
    return v ? std::optional<std::string>(v->get<std::string>()) : std::nullopt;
  }

  // A table of the file opened: its unknown keys said, and its plain fields read and stored
  // into `s` (the fields its own code does not read).
  void open_table(const toml::table& table, const std::string& section, Scenario& s) {
    check_keys(table, section);
    for (const auto& f : *fields_) {
      if (!f.plain || !f.in_file || f.section() != section) continue;
      if (auto v = read(table, f, &table)) f.set(s, *v);
    }
  }

  // The line of `key` in `table`, else the table's own line.
  int line_of(const toml::table* table, const std::string& key) {
    if (!table) return 0;
    for (auto&& [k, v] : *table)
      if (k.str() == key) return static_cast<int>(k.source().begin.line);
    return static_cast<int>(table->source().begin.line);
  }

 private:
  // "'a' or 'b'", "'a', 'b' or 'c'".
  static std::string choices_text(const std::vector<std::string>& choices) {
    std::string out;
    for (std::size_t i = 0; i < choices.size(); ++i)
      out += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + ("'" + choices[i] + "'");
    return out;
  }

  std::string file_;
  const ScenarioFields* fields_;
  std::vector<Diagnostic> diagnostics_;
};


}  // namespace distmetrics::harness::detail
