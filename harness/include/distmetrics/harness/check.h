// What property checkers judge: a variant's observations against the single-process reference
// (docs/properties.md). Each property's checker and hint are in its descriptor, in its own file
// (harness/src/properties/, property.h); check_properties runs the ones the scenario checks, in
// table order, and applies its expected failures.
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
#include <functional>
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
  // The failure is a run ended at its deadline (one process, no collective: the machine's load
  // may explain it; explore's maybe_slow), not an error of the metric's.
  bool failure_past_deadline = false;
  // The collectives the metric issues in each compute of the plan (at_compute's order): the same
  // instance's compute() run once more, on a single-process communicator, after its value was
  // taken without one. The metric's own sequence for that compute: it tells which side of an
  // even split deviated (blame.cpp). nullopt for a compute not recorded (a metric that cannot
  // take a single-process communicator, as a Python metric, which needs a torch.distributed
  // group; a traced compute that ended otherwise than the value's); empty when none is recorded
  // (ReferenceData::AsFed, whose metric is another implementation).
  std::vector<std::optional<std::vector<TraceEntry>>> collectives_at_compute;
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

// Every property the scenario checks that has a checker (no_hang excepted: the engine judges it
// from the run), in property table order, expected_error when one is declared; expected
// failures turned around.
std::vector<PropertyResult> check_properties(const CheckContext& ctx);

// Whether a result equals another (errors: same type; values: within the tolerance).
Comparison compare_results(const ComputeResult& expected, const ComputeResult& actual, const Tolerance& tolerance);

// One rank's result at one compute against what it must equal (compare_at_compute).
struct RankComparison {
  int rank = 0;                              // the rank's place in CheckContext::ranks
  const ComputeRecord* record = nullptr;     // nullptr: the rank has no record of the compute
  const ComputeResult* actual = nullptr;     // nullptr: no record, or actual_of gave no result
  const ComputeResult* expected = nullptr;   // nullptr: nothing to compare it with
  Comparison comparison;                     // when actual and expected are both there
  bool compared() const { return actual != nullptr && expected != nullptr; }
};

// Per rank, what its result at compute k must equal (nullptr: nothing to compare it with).
using ExpectedFor = std::function<const ComputeResult*(int rank, int k)>;
// What of a rank's record is judged (a probe's result, say); nullptr: its own result.
using ActualOf = std::function<const ComputeResult*(const ComputeRecord&)>;

// The one comparison loop of the properties and of conform's agrees_with_reference: compute k
// on every rank (in rank order) against expected_for(rank, k), asked of every rank, within
// `tolerance`.
std::vector<RankComparison> compare_at_compute(const std::vector<RankObservation>& ranks, int k,
                                               const ExpectedFor& expected_for, const Tolerance& tolerance,
                                               const ActualOf& actual_of = nullptr);

}  // namespace distmetrics::harness
