// Property checkers: each judges a variant's observations against the single-process reference
// (docs/properties.md). One small checker and one hint (what a failure means, said in its
// message) per property, both named in the property table (property.h); check_properties runs
// the ones the scenario checks, in table order, and applies its expected failures.
//
// Which compute each property judges follows from its place in the script (script.h):
//   equal_to_single       the first compute (before any other)       vs the single process
//   update_after_compute  a compute after an earlier compute + updates vs the single process
//   idempotent            a compute directly after a compute: same value on that rank; and
//                         every compute leaves the rank's state digest unchanged
//   reset_replay          the first compute after a reset: the value an earlier compute on the
//                         same batches gave on that rank (else the single process)
//   ranks_agree           every compute: every rank gives rank 0's result
//   batch_invariant       single process: other batch sizes give the same full-data result
//   golden                the full-data result (single process, and ranks that fed everything)
//   agrees_with_reference the same, against the scenario's [reference] (a Python callable)
//   expected_error        [expect] error: every rank and the single process raise it together
//   state_roundtrip       every compute from the first: the instance restored from the state saved
//                         before it gives what the original gives (listed only)
//   merge_state           every compute: the ranks' states merged into one instance give the
//                         distributed result (listed only)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "distmetrics/harness/compare.h"
#include "distmetrics/harness/observation.h"
#include "distmetrics/harness/scenario.h"
#include "distmetrics/harness/script.h"
#include "distmetrics/harness/variant.h"
#include "distmetrics/harness/verdict.h"

namespace distmetrics::harness {

// The single-process results a variant is judged against.
struct SingleProcessReference {
  std::vector<ComputeResult> at_compute;  // per compute of the variant's script plan
  ComputeResult full;                     // all data, global order, the scenario's batch size
  std::vector<std::pair<std::int64_t, ComputeResult>> other_batch_sizes;  // batch_invariant
  // The scenario's [reference] (a Python callable) on all the data; set by the engine.
  std::optional<ComputeResult> reference;
  std::string failure;  // the reference itself could not run (e.g. update raised); empty if fine
};

// The reference as JSON and back (it crosses a process boundary: a helper worker, or the child
// process the engine builds it in under the variant's deadline).
nlohmann::json reference_to_json(const SingleProcessReference& reference);
SingleProcessReference reference_from_json(const nlohmann::json& j);

struct CheckContext {
  const Scenario& scenario;
  const Variant& variant;
  const ScriptPlan& plan;
  const SingleProcessReference& single;
  const std::vector<RankObservation>& ranks;  // indexed by rank
};

// The checkers; `hint` is the property's hint, said in the failure message.
PropertyResult check_equal_to_single(const CheckContext& ctx, const std::string& hint);
PropertyResult check_update_after_compute(const CheckContext& ctx, const std::string& hint);
PropertyResult check_idempotent(const CheckContext& ctx, const std::string& hint);
PropertyResult check_reset_replay(const CheckContext& ctx, const std::string& hint);
PropertyResult check_ranks_agree(const CheckContext& ctx, const std::string& hint);
PropertyResult check_batch_invariant(const CheckContext& ctx, const std::string& hint);
PropertyResult check_golden(const CheckContext& ctx, const std::string& hint);
PropertyResult check_expected_error(const CheckContext& ctx, const std::string& hint);
PropertyResult check_agrees_with_reference(const CheckContext& ctx, const std::string& hint);
PropertyResult check_state_roundtrip(const CheckContext& ctx, const std::string& hint);
PropertyResult check_merge_state(const CheckContext& ctx, const std::string& hint);
PropertyResult check_accepts_empty_batch(const CheckContext& ctx, const std::string& hint);

// The hints: what a failure of the property means, and so what to fix.
std::string equal_to_single_hint();
std::string update_after_compute_hint();
std::string idempotent_hint();
std::string reset_replay_hint();
std::string ranks_agree_hint();
std::string batch_invariant_hint();
std::string golden_hint();
std::string expected_error_hint();
std::string agrees_with_reference_hint();
std::string state_roundtrip_hint();
std::string merge_state_hint();
std::string accepts_empty_batch_hint();

// Every property the scenario checks that has a checker (no_hang excepted: the engine judges it
// from the run), in property table order, expected_error when one is declared; expected
// failures turned around.
std::vector<PropertyResult> check_properties(const CheckContext& ctx);

// Whether a result equals another (errors: same type; values: within the tolerance).
Comparison compare_results(const ComputeResult& expected, const ComputeResult& actual, const Tolerance& tolerance);

}  // namespace distmetrics::harness
