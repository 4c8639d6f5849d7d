// The fields of a scenario file, one descriptor each (docs/scenarios.md, "Fields"): its dotted
// path, its type and the checks the reader makes from them, its default and docs row, where the
// JSON wire holds it and how explore writes it back. The reader's known names, the plain fields'
// reading, the wire (Scenario::to_json/from_json), explore's TOML writer, `distmetrics tables
// --json` ("scenario_fields", read by python/distmetrics/tables.py and the peers' writer) and the
// docs table all walk this table; a field whose value means more than its type (the metric's
// parameters, the data's source, the script) is read by its table's code in the loader
// (scenario.cpp, scenario_validation.cpp), still typed and named here.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "distmetrics/harness/scenario.h"

namespace distmetrics::harness {

enum class FieldType {
  String,
  Integer,
  Number,
  Boolean,
  StringList,
  IntegerList,
  Table,  // a TOML table: a section ([data]) or a table-valued field (data.params)
  Value,  // golden.value: a number, a nested list or a table of them
};

// "string", "integer", ...: the docs' and tables JSON's name of a type.
const char* field_type_name(FieldType type);

struct ScenarioField {
  std::string path;  // "deadline", "data.seed"; a section is a Table field of the top level ("data")
  FieldType type = FieldType::String;
  std::string default_text;  // the docs' default column: "30.0", "required", "none"
  std::string docs;          // the docs' description column

  // Checks the reader makes from the descriptor (scenario_reader.h), with its messages:
  bool required = false;  // a missing field (or section) is an error
  std::int64_t int_min = 0, int_max = std::numeric_limits<std::int64_t>::max();  // Integer, IntegerList entries
  double min = 0, max = 0;  // Number
  bool min_open = false;    // Number: min itself is refused
  std::vector<std::string> choices;  // String: one of these ("'x' must be 'a' or 'b', got ...")
  std::function<std::vector<std::string>()> known;  // StringList: entries from this list
  std::string known_what;  // what an entry is in "unknown WHAT 'x'" ("backend")
  bool repeats = false;    // StringList: an entry may be listed twice (the script's steps)
  bool non_empty = false;  // a list: an empty one is an error

  // Plain: read, checked and stored by the loader from this descriptor alone (no code of its
  // own). Otherwise its table's code in the loader reads it, with the checks above.
  bool plain = false;
  bool in_file = true;  // false: set by the program only (conform's no_data_value), never in a file

  // The JSON wire (the scenario as conform's helper worker receives it; a rank is sent only what
  // it reads, rank_variant.h): where it sits ("data.seed" nests),
  // its value, and back. No get: not on the wire (sections); a null value is left out.
  std::string wire;
  std::function<nlohmann::json(const Scenario&)> get;
  std::function<void(Scenario&, const nlohmann::json&)> set;

  // explore's TOML writer: the value to write (null: nothing this time); no function: never
  // written (a golden value, a reference, expectations do not hold for explore's changed cases).
  std::function<nlohmann::json(const Scenario&)> to_toml;

  std::string section() const;  // "" for the top level
  std::string key() const;      // the last part of the path
};

using ScenarioFields = std::vector<ScenarioField>;

// Every field, grouped by section in the order the docs list them and explore writes them.
const ScenarioFields& scenario_fields();

// The field at `path` in `fields`; nullptr when none.
const ScenarioField* find_scenario_field(const ScenarioFields& fields, const std::string& path);

// The keys a table of a scenario file may hold ("" is the top level), in table order.
std::vector<std::string> scenario_field_keys(const ScenarioFields& fields, const std::string& section);

// A descriptor lacking what the reader, the wire or the docs need: one line each.
std::vector<std::string> scenario_field_problems(const ScenarioFields& fields);

// docs/scenarios.md's row of the field: "| `data.seed` | integer | required | ... |".
std::string scenario_field_docs_row(const ScenarioField& field);

// The file fields for `distmetrics tables --json` ("scenario_fields"): name, section, key, type,
// default, docs, required, choices.
nlohmann::json scenario_fields_json(const ScenarioFields& fields);

// The wire through a given table (Scenario::to_json/from_json use scenario_fields()).
nlohmann::json scenario_to_wire(const Scenario& scenario, const ScenarioFields& fields);
Scenario scenario_from_wire(const nlohmann::json& wire, const ScenarioFields& fields);

// The scenario as TOML, each field as its to_toml says, in table order, without `leave_out`
// (paths); explore's scenario_to_toml adds its header lines.
std::string scenario_fields_toml(const Scenario& scenario, const ScenarioFields& fields,
                                 const std::set<std::string>& leave_out = {});

// load_scenario_text with another field table (a fixture table that adds a field).
LoadResult load_scenario_text(const std::string& text, const std::string& path, const std::string& name,
                              const ScenarioFields& fields);

}  // namespace distmetrics::harness
