// update_after_compute: a compute after an earlier compute and more updates still equals the
// single process.
#include "checking.h"
#include "distmetrics/harness/property.h"

namespace distmetrics::harness::properties {
namespace {

using namespace checking;

PropertyResult check(const CheckContext& ctx, const std::string& hint) {
  const auto ks = computes_with(ctx, ComputeRole::AfterUpdate);
  if (ks.empty()) return skipped("update_after_compute", "the script has no compute after a compute and more updates");
  return judge(ctx, "update_after_compute", ks, [&](int, int k) { return single_at(ctx, k); }, ctx.scenario.tolerance,
               "single process", hint);
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

}  // namespace

Property update_after_compute() {
  Property p;
  p.name = "update_after_compute";
  p.holds_when = "compute mid-stream, keep updating: the final result equals the single-process one";
  p.label = "update";
  p.column_order = 4;
  p.needs_compute = ComputeRole::AfterUpdate;
  p.needs_compute_text = "a compute after an earlier compute and more updates";
  p.by_default = compute_after_update;
  p.check = check;
  p.hint = "after a mid-stream compute and more updates, every rank must still give the single-process result "
           "(a compute that folds synced values into the local state counts samples twice)";
  p.root_causes = {{70, later_compute_differs}};
  return p;
}

}  // namespace distmetrics::harness::properties
