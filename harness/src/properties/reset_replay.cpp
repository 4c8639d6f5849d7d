// reset_replay: the first compute after a reset equals what the rank gave on the same batches
// before (else the single process).
#include "checking.h"
#include "distmetrics/harness/property.h"

namespace distmetrics::harness::properties {
namespace {
namespace DISTMETRICS_UNITY_ID {

using namespace checking;

PropertyResult check(const CheckContext& ctx, const std::string& hint) {
  const auto ks = computes_with(ctx, ComputeRole::AfterReset);
  if (ks.empty()) return skipped("reset_replay", "the script has no compute after a reset");
  bool own = true;
  for (int k : ks) own = own && ctx.plan.computes[k].replay_of >= 0;
  return judge(
      ctx, "reset_replay", ks,
      [&](int rank, int k) -> const ComputeResult* {
        const int before = ctx.plan.computes[k].replay_of;
        if (before < 0) return single_at(ctx, k);
        const auto* record = ctx.ranks[rank].compute(before);
        return record ? &record->result : nullptr;
      },
      ctx.scenario.tolerance, own ? "before the reset" : "single process", hint);
}

std::optional<RootCause> reset_leaves_something(const Evidence& e) {
  if (!e.failed("reset_replay")) return std::nullopt;
  RootCause cause;
  cause.property = "reset_replay";
  cause.headline = "reset() leaves something behind: the same data after a reset gives another result";
  cause.evidence = "only reset_replay failed";
  cause.hint = "reset() must restore every state (and any cache or flag) to its initial value";
  return cause;
}

bool compute_after_reset(const Scenario&, const std::vector<ComputeRole>& roles) {
  return script_has(roles, ComputeRole::AfterReset);
}

}  // namespace DISTMETRICS_UNITY_ID
}  // namespace

Property reset_replay() {
  using namespace DISTMETRICS_UNITY_ID;
  Property p;
  p.name = "reset_replay";
  p.holds_when = "`reset()` then the same data again gives the same result";
  p.label = "reset";
  p.column_order = 5;
  p.needs_compute = ComputeRole::AfterReset;
  p.needs_compute_text = "a compute after a reset";
  p.by_default = compute_after_reset;
  p.compares_with_single_process = true;
  p.check = check;
  p.hint = "after reset() and the same data again, each rank must give what it gave on that data before the reset";
  p.root_causes = {{90, reset_leaves_something}};
  return p;
}

}  // namespace distmetrics::harness::properties
