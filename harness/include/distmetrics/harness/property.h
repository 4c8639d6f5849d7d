// The properties a variant can be checked for: ONE table (harness/src/engine/properties.cpp),
// one descriptor per property, the way nccl-tests puts each collective behind `struct testColl`.
// A descriptor says what the property needs from the scenario and its script, which checker
// judges it and with which hint, and where its column goes in reports. Scenario validation
// (names, close-name suggestions, what a listed property needs), the default list, the checks
// run and the report columns all come from the table; docs/properties.md lists exactly its
// names (a test checks it). Adding a property: its checker and hint (check.h), one entry here.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "distmetrics/harness/check.h"
#include "distmetrics/harness/scenario.h"
#include "distmetrics/harness/script.h"

namespace distmetrics::harness {

struct Property {
  std::string name;
  std::string holds_when;  // one line, as docs/properties.md says it
  // The compute it judges, which the script must have for the property to be listed
  // (nullopt: none), and that need in words ("a compute directly after another compute").
  std::optional<ComputeRole> needs_compute;
  std::string needs_compute_text;
  // A scenario table it needs when listed (golden: "golden"); empty: none.
  std::string needs_table;
  // Whether a scenario may name it in 'properties' and 'expect.fail' (expected_error comes from [expect]).
  bool listable = true;
  // Whether it is checked for `scenario`, whatever 'properties' lists (no_hang: always;
  // expected_error: when [expect] names an error); nullptr: when 'properties' lists it.
  bool (*checked_anyway)(const Scenario& scenario) = nullptr;
  // Whether a scenario that lists no properties checks it, given the compute roles of its
  // script; nullptr: never by default.
  bool (*by_default)(const Scenario& scenario, const std::vector<ComputeRole>& roles) = nullptr;
  // Its checker and the hint its failure message gives (check.h); no checker: the engine
  // judges it from the run (no_hang).
  PropertyResult (*check)(const CheckContext& ctx, const std::string& hint) = nullptr;
  std::string (*hint)() = nullptr;
  // Its column in the conformance report: the short header, and the column's place (0 first).
  std::string column;
  int column_order = 0;
};

// Every property, in the order they are checked and reported in a verdict.
const std::vector<Property>& property_table();
const Property* find_property(const std::string& name);
// The names a scenario may list (listable ones), in table order.
const std::vector<std::string>& property_names();
// The properties a scenario that lists none checks, for a script with these compute roles.
std::vector<std::string> default_properties(const Scenario& scenario, const std::vector<ComputeRole>& roles);
// Every property in report column order.
std::vector<const Property*> properties_by_column();

}  // namespace distmetrics::harness
