// ranks_agree: at every compute, every rank returns rank 0's result.
#include "checking.h"
#include "distmetrics/harness/property.h"

namespace distmetrics::harness::properties {
namespace {
namespace DISTMETRICS_UNITY_ID {

using namespace checking;

PropertyResult check(const CheckContext& ctx, const std::string& hint) {
  std::vector<int> ks;
  for (const auto& point : ctx.plan.computes) ks.push_back(point.index);
  if (ks.empty()) return skipped("ranks_agree", "the script has no compute");
  return judge(
      ctx, "ranks_agree", ks,
      [&](int, int k) -> const ComputeResult* {
        const auto* record = ctx.ranks.empty() ? nullptr : ctx.ranks[0].compute(k);
        return record ? &record->result : nullptr;
      },
      ctx.scenario.tolerance, "rank 0", hint);
}

bool any_compute(const Scenario&, const std::vector<ComputeRole>&) { return true; }  // a script always has one

}  // namespace DISTMETRICS_UNITY_ID
}  // namespace

// Its failure is evidence for equal_to_single's root cause (no sync), not a cause of its own.
Property ranks_agree() {
  using namespace DISTMETRICS_UNITY_ID;
  Property p;
  p.name = "ranks_agree";
  p.holds_when = "all ranks return the same result";
  p.label = "agree";
  p.column_order = 2;
  p.by_default = any_compute;
  p.check = check;
  p.hint = "every rank must return the same result";
  return p;
}

}  // namespace distmetrics::harness::properties
