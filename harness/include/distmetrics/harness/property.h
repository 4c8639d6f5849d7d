// The properties a variant can be checked for: ONE table, one descriptor per property, each
// descriptor in a file of its own (harness/src/properties/<name>.cpp), built with named fields,
// the way nccl-tests puts each collective behind `struct testColl`. A descriptor says what the
// property needs from the scenario and its script, which checker judges it and with which hint,
// where its column goes in reports and under which label, the root causes its failure can show
// and, for a property that needs something done on every rank beside the script, its rank-side
// probe. Scenario validation (names, close-name suggestions, what a listed property needs), the
// default list, the checks run, the root-cause rules, the ranks' probes and every report's
// columns (run and conform; console, JSON, HTML, Markdown, JUnit) come from the table;
// docs/properties.md lists exactly its names (TablesTest checks both).
//
// Adding a property: its file in harness/src/properties/ (the build picks it up), one entry in
// the list of harness/src/properties/table.cpp, one row of docs/properties.md.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "distmetrics/harness/check.h"
#include "distmetrics/harness/root_cause.h"
#include "distmetrics/harness/scenario.h"
#include "distmetrics/harness/script.h"

namespace distmetrics::harness {

class RankProbe;   // harness/src/properties/rank_probe.h: what a property does on every rank
struct ProbeSetup;

// A root cause a property's failure can show, tried in priority order over every property's
// rules (lowest first; the first that names a cause wins): the chain docs/properties.md, "Root
// cause", lists top down.
struct RootCauseRule {
  int priority = 0;  // > 0, unique over the table
  // The cause (property, headline, evidence, hint) when the evidence shows it; the caller adds
  // the consequences.
  std::optional<RootCause> (*find)(const Evidence& evidence) = nullptr;
};

struct Property {
  std::string name;
  std::string holds_when;  // one line, as docs/properties.md says it
  // Its report column: the short header (label) and the column's place, 0 first.
  std::string label;
  int column_order = -1;
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
  // Its checker and the hint its failure message gives (what a failure means, so what to fix).
  PropertyResult (*check)(const CheckContext& ctx, const std::string& hint) = nullptr;
  std::string hint;
  // The engine judges it from how the run went (no_hang: no checker, no hint); it leads every
  // verdict and is never a root cause's consequence.
  bool judged_by_the_engine = false;
  // Its failure is a finding of its own (accepts_empty_batch: the rest of the script ran without
  // the empty update): never a consequence of another property's root cause.
  bool own_finding = false;
  // It compares the ranks' result at a compute with the single process's (equal_to_single,
  // update_after_compute, reset_replay without an earlier compute of the same batches): where the
  // first compute was not judged, its failure is the one the first comparison shows (explore
  // counts it as the property that judges the first compute).
  bool compares_with_single_process = false;
  std::vector<RootCauseRule> root_causes;
  // For a variant that died (hang, crash, error) after some script steps every rank completed:
  // the last script step whose records its verdict reads (-1: none, it reads the single process
  // alone), so that it keeps its verdict when every rank completed that step and is "not judged"
  // otherwise. nullptr: it judges compute by compute, and keeps its verdict on the computes every
  // rank completed (not judged when none of its computes was reached).
  int (*last_evidence_step)(const CheckContext& ctx) = nullptr;
  // What every rank does for it beside the script (state_roundtrip's restored twin, merge_state's
  // merge), created when the scenario checks it; nullptr: nothing.
  std::unique_ptr<RankProbe> (*probe)(const ProbeSetup& setup) = nullptr;
};

// Every property, in the order they are checked and listed in a verdict.
const std::vector<Property>& property_table();
const Property* find_property(const std::string& name);
// The names a scenario may list (listable ones), in table order.
const std::vector<std::string>& property_names();
// The properties a scenario that lists none checks, for a script with these compute roles.
std::vector<std::string> default_properties(const Scenario& scenario, const std::vector<ComputeRole>& roles);
// The properties a scenario checks only when it lists them (no default, not checked anyway:
// state_roundtrip, merge_state), in table order.
std::vector<std::string> listed_only_properties();
// Every property in report column order.
std::vector<const Property*> properties_by_column();
// The property that judges computes of `role`: the first in table order that needs one.
const Property* property_judging(ComputeRole role);
// The report column header of a property ("equal" for equal_to_single); a name the table does
// not know (a plugin's own check) is its own header.
std::string property_label(const std::string& name);
// Orders property names as report columns: the table's column order, names it does not know
// after them in the order seen.
std::vector<std::string> in_column_order(const std::vector<std::string>& names);

// What is missing or contradictory in descriptors that the views need: an empty name, label or
// holds_when, no column place or one used twice, no checker (unless the engine judges it) or
// no hint, a rule without a priority or a finder, a priority used twice, ... One line each
// naming the property; empty when the table is sound. TablesTest runs it on property_table().
std::vector<std::string> property_table_problems(const std::vector<Property>& table);

}  // namespace distmetrics::harness
