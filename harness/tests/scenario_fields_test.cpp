// The scenario field table (scenario_fields.h): every descriptor complete, docs/scenarios.md's
// field table row by row what the descriptors say, and a field added in a fixture table read,
// checked, carried on the wire, written back as TOML, listed in the tables JSON and given its docs
// row with no code but its descriptor.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "distmetrics/harness/scenario.h"
#include "distmetrics/harness/scenario_fields.h"
#include "doc_tables.h"

namespace distmetrics::harness {
namespace {

using nlohmann::json;

TEST(ScenarioFields, EveryDescriptorIsComplete) {
  EXPECT_EQ(scenario_field_problems(scenario_fields()), std::vector<std::string>{});
  // The keys the reader knows at the top level: its fields, then its tables, in table order.
  EXPECT_EQ(scenario_field_keys(scenario_fields(), ""),
            (std::vector<std::string>{"description", "tags", "deadline", "single_process", "script", "properties",
                                      "metric", "data", "variants", "tolerance", "golden", "reference", "expect",
                                      "batch_invariant"}));
  EXPECT_EQ(scenario_field_keys(scenario_fields(), "data"),
            (std::vector<std::string>{"generator", "file", "python", "params", "seed", "num_samples", "batch_size",
                                      "dtype", "structured"}));
  // Set by the program only: on the wire, never known in a file.
  EXPECT_EQ(scenario_field_keys(scenario_fields(), "expect"),
            (std::vector<std::string>{"error", "compute", "fail", "reason"}));
}

TEST(ScenarioFields, ADescriptorLackingWhatItNeedsIsAProblem) {
  ScenarioFields table = {*find_scenario_field(scenario_fields(), "deadline"),
                          *find_scenario_field(scenario_fields(), "deadline")};
  table[1].set = nullptr;
  table.push_back(*find_scenario_field(scenario_fields(), "tolerance.rtol"));
  EXPECT_EQ(scenario_field_problems(table),
            (std::vector<std::string>{"field 'deadline': its path is used twice",
                                      "field 'deadline': a get without a set and a wire path",
                                      "field 'deadline': plain but nothing stores it (no set)",
                                      "field 'tolerance.rtol': its table 'tolerance' is no table field"}));
}

// docs/scenarios.md's "Fields" table: one row per file field, as scenario_field_docs_row says it.
TEST(ScenarioFields, DocsShowEveryFieldAsItsDescriptorSaysIt) {
  const auto rows = doc_tables::table_lines("scenarios.md", "field");
  std::vector<std::string> expected;
  for (const auto& f : scenario_fields())
    if (f.in_file) expected.push_back(scenario_field_docs_row(f));
  EXPECT_EQ(rows, expected) << "docs/scenarios.md's field table should read:\n" << doc_tables::lines_text(expected);
}

// --- a field added in a fixture table ---------------------------------------------------------

// The fixture's fields keep their values here, by scenario name (a real field has a member).
std::map<std::string, json>& added_values() {
  static std::map<std::string, json> values;
  return values;
}

ScenarioField added_field(const std::string& path, std::vector<std::string> choices, std::string docs) {
  ScenarioField f;
  f.path = path;
  f.type = FieldType::String;
  f.default_text = "none";
  f.docs = std::move(docs);
  f.choices = std::move(choices);
  f.plain = true;
  f.wire = path;
  f.get = [path](const Scenario& s) {
    const auto it = added_values().find(s.name + "/" + path);
    return it == added_values().end() ? json(nullptr) : it->second;
  };
  f.set = [path](Scenario& s, const json& v) { added_values()[s.name + "/" + path] = v; };
  f.to_toml = f.get;
  return f;
}

// The real table and two fields: `owner` at the top level (one of two teams) and `expect.ticket`.
ScenarioFields fixture_fields() {
  ScenarioFields fields = scenario_fields();
  fields.push_back(added_field("owner", {"team-a", "team-b"}, "who answers for the scenario"));
  fields.push_back(added_field("expect.ticket", {}, "the issue that tracks the expected failure"));
  return fields;
}

const char* kBase = R"(description = "Mean absolute error with an owner"
owner = OWNER
[metric]
name = "MeanAbsoluteError"
[data]
generator = "regression"
seed = 3
num_samples = 12
batch_size = 4
[expect]
ticket = "DM-12"
)";

std::string with_owner(const std::string& owner) {
  std::string text = kBase;
  return text.replace(text.find("OWNER"), 5, owner);
}

TEST(ScenarioFields, AFieldAddedInAFixtureTableIsReadCheckedCarriedWrittenAndDocumented) {
  const ScenarioFields fields = fixture_fields();
  EXPECT_EQ(scenario_field_problems(fields), std::vector<std::string>{});

  // The reader knows it and stores it.
  added_values().clear();
  const auto loaded = load_scenario_text(with_owner("\"team-a\""), "x.toml", "x", fields);
  ASSERT_TRUE(loaded.scenario) << loaded.diagnostics.front().to_string();
  const Scenario& s = *loaded.scenario;
  EXPECT_EQ(added_values().at("x/owner"), "team-a");
  EXPECT_EQ(added_values().at("x/expect.ticket"), "DM-12");

  // The real table does not know it.
  const auto unknown = load_scenario_text(with_owner("\"team-a\""), "x.toml", "x");
  ASSERT_EQ(unknown.diagnostics.size(), 2u);
  EXPECT_EQ(unknown.diagnostics[0].line, 2);
  EXPECT_EQ(unknown.diagnostics[0].field, "owner");
  EXPECT_EQ(unknown.diagnostics[0].message.rfind("unknown field 'owner' at the top level", 0), 0u) << unknown.diagnostics[0].message;
  EXPECT_EQ(unknown.diagnostics[1].field, "expect.ticket");

  // Its checks: the type, then the choices, each with the file, line and field.
  const auto typed = load_scenario_text(with_owner("3"), "x.toml", "x", fields);
  ASSERT_EQ(typed.diagnostics.size(), 1u);
  EXPECT_EQ(typed.diagnostics[0].to_string(), "x.toml:2:9: owner: 'owner' must be a string, got an integer");
  const auto chosen = load_scenario_text(with_owner("\"team-c\""), "x.toml", "x", fields);
  ASSERT_EQ(chosen.diagnostics.size(), 1u);
  EXPECT_EQ(chosen.diagnostics[0].to_string().rfind("x.toml:2: owner: 'owner' must be 'team-a' or 'team-b', got 'team-c'; did you mean", 0), 0u)
      << chosen.diagnostics[0].to_string();
  std::string misspelt = with_owner("\"team-a\"");
  misspelt.replace(misspelt.find("owner ="), 5, "ownr");
  const auto close = load_scenario_text(misspelt, "x.toml", "x", fields);
  ASSERT_EQ(close.diagnostics.size(), 1u);
  EXPECT_NE(close.diagnostics[0].message.find("unknown field 'ownr' at the top level; did you mean 'owner'?"),
            std::string::npos)
      << close.diagnostics[0].message;

  // The wire carries it, and a rank reads it back.
  const json wire = scenario_to_wire(s, fields);
  EXPECT_EQ(wire.at("owner"), "team-a");
  EXPECT_EQ(wire.at("expect").at("ticket"), "DM-12");
  added_values().clear();
  const Scenario back = scenario_from_wire(wire, fields);
  EXPECT_EQ(added_values().at("x/owner"), "team-a");
  EXPECT_EQ(scenario_to_wire(back, fields), wire);

  // Written back as TOML: at the top level and in its own section, and the file loads again.
  const std::string toml = scenario_fields_toml(s, fields);
  EXPECT_NE(toml.find("\nowner = \"team-a\"\n"), std::string::npos) << toml;
  EXPECT_LT(toml.find("owner = "), toml.find("[metric]")) << toml;
  EXPECT_NE(toml.find("\n[expect]\nticket = \"DM-12\"\n"), std::string::npos) << toml;
  added_values().clear();
  const auto again = load_scenario_text(toml, "x.toml", "x", fields);
  ASSERT_TRUE(again.scenario) << again.diagnostics.front().to_string() << "\n" << toml;
  EXPECT_EQ(scenario_to_wire(*again.scenario, fields), wire);

  // Its docs row and its entry in `distmetrics tables --json`.
  EXPECT_EQ(scenario_field_docs_row(fields[fields.size() - 2]), "| `owner` | string | none | who answers for the scenario |");
  const json listed = scenario_fields_json(fields);
  EXPECT_EQ(listed.at(listed.size() - 2),
            (json{{"name", "owner"}, {"section", ""}, {"key", "owner"}, {"type", "string"}, {"default", "none"},
                  {"required", false}, {"choices", {"team-a", "team-b"}}, {"docs", "who answers for the scenario"}}));
  EXPECT_EQ(listed.back().at("section"), "expect");
}

// The wire of the real table keeps the keys other parts read (conform's helper reads "metric",
// "metric_params" and "data", the data spec whole).
TEST(ScenarioFields, TheWireKeepsItsKeys) {
  auto loaded = load_scenario_text(with_owner("\"team-a\""), "x.toml", "x", fixture_fields());
  ASSERT_TRUE(loaded.scenario);
  const json wire = loaded.scenario->to_json();
  EXPECT_EQ(wire.at("metric"), "MeanAbsoluteError");
  EXPECT_TRUE(wire.at("metric_params").is_object());
  EXPECT_EQ(wire.at("data"), loaded.scenario->data.to_json());
  EXPECT_EQ(wire.at("batch_size"), 4);
  EXPECT_FALSE(wire.contains("owner"));  // not a field of the real table
  EXPECT_FALSE(wire.contains("golden"));
}

}  // namespace
}  // namespace distmetrics::harness
