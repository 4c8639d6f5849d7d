// The property table: one descriptor per property (property.h). The checkers and hints are in
// check.cpp; the engine judges no_hang from the run itself.
#include <algorithm>

#include "distmetrics/harness/property.h"

namespace distmetrics::harness {
namespace {

bool has(const std::vector<ComputeRole>& roles, ComputeRole role) {
  return std::find(roles.begin(), roles.end(), role) != roles.end();
}

bool always(const Scenario&) { return true; }
bool when_an_error_is_expected(const Scenario& s) { return !s.expect.error.empty(); }

bool fresh_compute(const Scenario&, const std::vector<ComputeRole>& roles) { return has(roles, ComputeRole::Fresh); }
bool repeated_compute(const Scenario&, const std::vector<ComputeRole>& roles) { return has(roles, ComputeRole::Repeat); }
bool compute_after_update(const Scenario&, const std::vector<ComputeRole>& roles) {
  return has(roles, ComputeRole::AfterUpdate);
}
bool compute_after_reset(const Scenario&, const std::vector<ComputeRole>& roles) {
  return has(roles, ComputeRole::AfterReset);
}
bool any_compute(const Scenario&, const std::vector<ComputeRole>&) { return true; }  // a script always has one
bool global_single_process(const Scenario& s, const std::vector<ComputeRole>&) { return s.single_process == "global"; }
bool golden_given(const Scenario& s, const std::vector<ComputeRole>&) { return s.golden.has_value(); }
bool reference_given(const Scenario& s, const std::vector<ComputeRole>&) { return s.reference.has_value(); }
// A script with 'update empty': whether the metric takes that batch is always judged, so that a
// rejection is its own finding and the rest of the script still runs (scenario_task.cpp).
bool feeds_an_empty_batch(const Scenario& s) {
  return std::any_of(s.script.begin(), s.script.end(),
                     [](const Step& step) { return step.op == Step::Op::Update && step.amount == Step::Amount::Empty; });
}

}  // namespace

const std::vector<Property>& property_table() {
  static const std::vector<Property> table = {
      {"equal_to_single",
       "every rank's result equals the single-process result on the union of the data",
       ComputeRole::Fresh, "a compute before any other compute", "", true, nullptr, fresh_compute,
       check_equal_to_single, equal_to_single_hint, "equal", 1},
      {"ranks_agree", "all ranks return the same result", std::nullopt, "", "", true, nullptr, any_compute,
       check_ranks_agree, ranks_agree_hint, "agree", 2},
      {"idempotent",
       "a second `compute()` gives the same result and leaves the local state digest unchanged",
       ComputeRole::Repeat, "a compute directly after another compute", "", true, nullptr, repeated_compute,
       check_idempotent, idempotent_hint, "idem", 3},
      {"update_after_compute",
       "compute mid-stream, keep updating: the final result equals the single-process one",
       ComputeRole::AfterUpdate, "a compute after an earlier compute and more updates", "", true, nullptr,
       compute_after_update, check_update_after_compute, update_after_compute_hint, "update", 4},
      {"reset_replay", "`reset()` then the same data again gives the same result", ComputeRole::AfterReset,
       "a compute after a reset", "", true, nullptr, compute_after_reset, check_reset_replay, reset_replay_hint,
       "reset", 5},
      {"batch_invariant", "the result does not depend on the batch size", std::nullopt, "", "", true, nullptr,
       global_single_process, check_batch_invariant, batch_invariant_hint, "batch", 6},
      {"no_hang", "the variant finishes within its deadline (always checked)", std::nullopt, "", "", true, always,
       nullptr, nullptr, nullptr, "no_hang", 0},
      {"golden", "the result equals a value written in the scenario", std::nullopt, "", "golden", true, nullptr,
       golden_given, check_golden, golden_hint, "golden", 7},
      {"expected_error",
       "every rank and the single process raise the `[expect] error` at `[expect] compute`, together",
       std::nullopt, "", "", false, when_an_error_is_expected, nullptr, check_expected_error, expected_error_hint,
       "expect", 12},
      {"agrees_with_reference",
       "the result on all the data equals the scenario's `[reference]` (a Python callable such as a scikit-learn "
       "function) on all the data",
       std::nullopt, "", "reference", true, nullptr, reference_given, check_agrees_with_reference,
       agrees_with_reference_hint, "ref", 8},
      // Listed only (not by default): they save, load and move every rank's state.
      {"state_roundtrip",
       "the state saved on every rank before the first compute, loaded into a fresh instance that takes the same "
       "steps, gives the same results",
       ComputeRole::Fresh, "a compute before any other compute (the state is saved just before it)", "", true, nullptr,
       nullptr, check_state_roundtrip, state_roundtrip_hint, "trip", 9},
      {"merge_state", "the ranks' states merged into one single-process instance give the distributed result",
       std::nullopt, "", "", true, nullptr, nullptr, check_merge_state, merge_state_hint, "merge", 10},
      // Last: a failure of the distributed properties names the verdict before this one.
      {"accepts_empty_batch",
       "`update()` of a batch with no rows (`update empty`) is accepted; when it raises, the rest of the script runs "
       "without it, so that every other property is still judged",
       std::nullopt, "", "", true, feeds_an_empty_batch, nullptr, check_accepts_empty_batch, accepts_empty_batch_hint,
       "empty", 11},
  };
  return table;
}

const Property* find_property(const std::string& name) {
  for (const auto& p : property_table())
    if (p.name == name) return &p;
  return nullptr;
}

const std::vector<std::string>& property_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& p : property_table())
      if (p.listable) out.push_back(p.name);
    return out;
  }();
  return names;
}

std::vector<std::string> default_properties(const Scenario& scenario, const std::vector<ComputeRole>& roles) {
  std::vector<std::string> out;
  for (const auto& p : property_table())
    if (p.by_default && p.by_default(scenario, roles)) out.push_back(p.name);
  return out;
}

std::vector<const Property*> properties_by_column() {
  std::vector<const Property*> out;
  for (const auto& p : property_table()) out.push_back(&p);
  std::stable_sort(out.begin(), out.end(), [](const Property* a, const Property* b) { return a->column_order < b->column_order; });
  return out;
}

}  // namespace distmetrics::harness
