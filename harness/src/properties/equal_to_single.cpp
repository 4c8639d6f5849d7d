// equal_to_single: every rank's first compute equals the single process on the data fed so far.
#include "checking.h"
#include "distmetrics/harness/property.h"

namespace distmetrics::harness::properties {
namespace {
namespace DISTMETRICS_UNITY_ID {

using namespace checking;

PropertyResult check(const CheckContext& ctx, const std::string& hint) {
  const auto ks = computes_with(ctx, ComputeRole::Fresh);
  if (ks.empty()) return skipped("equal_to_single", "the script has no compute before any other compute");
  return judge(ctx, "equal_to_single", ks, [&](int, int k) { return single_at(ctx, k); }, ctx.scenario.tolerance,
               "single process", hint);
}

// Wrong at the first compute: whether the ranks agree tells a missing sync from a wrong one.
std::optional<RootCause> wrong_at_the_first_compute(const Evidence& e) {
  if (!e.failed("equal_to_single")) return std::nullopt;
  const int ws = e.ctx.variant.world_size;
  RootCause cause;
  cause.property = "equal_to_single";
  if (e.failed("ranks_agree")) {
    cause.headline = "no sync: the ranks return different values, each from its own shard";
    cause.evidence = "equal_to_single and ranks_agree failed at world size " + std::to_string(ws);
    cause.hint = "compute() must reduce every state across ranks (through the communicator) before it computes";
  } else if (e.within_float32_rounding("equal_to_single")) {
    cause.headline = "float32 rounding: every rank agrees, within float32 precision of the single-process value";
    cause.evidence = "equal_to_single failed by a relative difference of " +
                     cause_number(e.relative_difference("equal_to_single")) + ", ranks agree";
    cause.hint = "keep sums and the collectives that carry them in float64 (or int64 for counts): float32 loses "
                 "precision beyond 2^24 (PyTorch-Ignite PR #2959)";
  } else {
    cause.headline = ws > 1 ? "the sync reduces wrongly: every rank agrees on a value the single process does not give"
                            : "the metric's result depends on how the data was fed (world size 1 differs from the single process)";
    cause.evidence = "equal_to_single failed at world size " + std::to_string(ws) + ", ranks_agree held";
    cause.hint = "check each state's reduction: a maximum or minimum reduced with SUM (PyTorch-Ignite #1813), a sum "
                 "not divided by the world size (#991), a mean of per-rank means, a per-sample history all_reduced "
                 "(#1283)";
  }
  return cause;
}

bool fresh_compute(const Scenario&, const std::vector<ComputeRole>& roles) {
  return script_has(roles, ComputeRole::Fresh);
}

}  // namespace DISTMETRICS_UNITY_ID
}  // namespace

Property equal_to_single() {
  using namespace DISTMETRICS_UNITY_ID;
  Property p;
  p.name = "equal_to_single";
  p.holds_when = "every rank's result equals the single-process result on the union of the data";
  p.label = "equal";
  p.column_order = 1;
  p.needs_compute = ComputeRole::Fresh;
  p.needs_compute_text = "a compute before any other compute";
  p.by_default = fresh_compute;
  p.compares_with_single_process = true;
  p.check = check;
  p.hint = "every rank must give the single-process result on the union of the data fed so far";
  p.root_causes = {{60, wrong_at_the_first_compute}};
  return p;
}

}  // namespace distmetrics::harness::properties
