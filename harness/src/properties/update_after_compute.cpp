// update_after_compute: a compute after an earlier compute and more updates still equals the
// single process.
#include "checking.h"
#include "distmetrics/harness/property.h"

namespace distmetrics::harness::properties {
namespace {
namespace DISTMETRICS_UNITY_ID {

using namespace checking;

PropertyResult check(const CheckContext& ctx, const std::string& hint) {
  const auto ks = computes_with(ctx, ComputeRole::AfterUpdate);
  if (ks.empty()) return skipped("update_after_compute", "the script has no compute after a compute and more updates");
  return judge(ctx, "update_after_compute", ks, [&](int, int k) { return single_at(ctx, k); }, ctx.scenario.tolerance,
               "single process", hint);
}

// update_after_compute, or reset_replay where it compares with the single process (no earlier
// compute saw the same batches), failed where equal_to_single judged nothing: the first
// comparison with the single process failed, as equal_to_single's would (explore found
// "reset() leaves something behind" said of a maximum reduced with SUM). Tried before
// later_compute_differs and reset_replay's rule, after equal_to_single's.
std::optional<RootCause> first_comparison_with_single(const Evidence& e) {
  const auto* fresh = e.result("equal_to_single");
  if (fresh && fresh->outcome != Outcome::Skip) return std::nullopt;
  const char* first = nullptr;
  if (e.failed("update_after_compute")) {
    first = "update_after_compute";
  } else if (e.failed("reset_replay")) {
    for (const auto& point : e.ctx.plan.computes)
      if (point.role == ComputeRole::AfterReset && point.replay_of >= 0) return std::nullopt;
    first = "reset_replay";
  } else {
    return std::nullopt;
  }
  RootCause cause;
  cause.property = first;
  cause.headline = e.ctx.variant.world_size > 1
                       ? "the ranks differ from the single process at the first compute compared with it (no "
                         "earlier compute shows the sync right)"
                       : "the metric's result differs from the single process at the first compute compared with it";
  cause.evidence = std::string(first) + " failed against the single process; equal_to_single judged no compute (the "
                   "script has no compute before every other compute), so no earlier compute shows the sync right";
  cause.hint = "first check what equal_to_single would: each state's reduction (a maximum reduced with SUM, "
               "PyTorch-Ignite #1813; a sum not divided by the world size, #991); a script with a compute before "
               "any reset or other compute tells the two apart";
  return cause;
}

// Exact at the first compute, off by float32 rounding once more data came in: the totals grew
// past what float32 holds exactly (2^24), not a cache (which would give an earlier value back).
// Seen on torchmetrics' MeanMetric with Ignite PR #2959's large counts.
std::optional<RootCause> later_compute_within_float32(const Evidence& e) {
  if (!e.failed("update_after_compute") || e.failed("ranks_agree") || !e.within_float32_rounding("update_after_compute"))
    return std::nullopt;
  RootCause cause;
  cause.property = "update_after_compute";
  cause.headline = "float32 rounding at a later compute: every rank agrees, within float32 precision of the "
                   "single-process value, once more data was fed";
  cause.evidence = "update_after_compute failed by a relative difference of " +
                   cause_number(e.relative_difference("update_after_compute")) +
                   " (a cache would give an earlier compute's value back), ranks agree";
  cause.hint = "keep sums, counts and the collectives that carry them in float64 or int64: float32 is exact only up "
               "to 2^24, which the totals passed between the computes (PyTorch-Ignite PR #2959)";
  return cause;
}

std::optional<RootCause> later_compute_differs(const Evidence& e) {
  if (!e.failed("update_after_compute")) return std::nullopt;
  RootCause cause;
  cause.property = "update_after_compute";
  cause.headline = "an earlier compute changes what a later one gives, though the state digest is unchanged";
  cause.evidence = "equal_to_single held at the first compute; update_after_compute failed";
  cause.hint = "a cache or an 'already synced' flag kept across computes (PyTorch-Ignite #2800, torchmetrics #2570), "
               "or state the digest does not cover";
  return cause;
}

bool compute_after_update(const Scenario&, const std::vector<ComputeRole>& roles) {
  return script_has(roles, ComputeRole::AfterUpdate);
}

}  // namespace DISTMETRICS_UNITY_ID
}  // namespace

Property update_after_compute() {
  using namespace DISTMETRICS_UNITY_ID;
  Property p;
  p.name = "update_after_compute";
  p.holds_when = "compute mid-stream, keep updating: the final result equals the single-process one";
  p.label = "update";
  p.column_order = 4;
  p.needs_compute = ComputeRole::AfterUpdate;
  p.needs_compute_text = "a compute after an earlier compute and more updates";
  p.by_default = compute_after_update;
  p.compares_with_single_process = true;
  p.check = check;
  p.hint = "after a mid-stream compute and more updates, every rank must still give the single-process result "
           "(a compute that folds synced values into the local state counts samples twice)";
  p.root_causes = {{65, first_comparison_with_single}, {68, later_compute_within_float32}, {70, later_compute_differs}};
  return p;
}

}  // namespace distmetrics::harness::properties
