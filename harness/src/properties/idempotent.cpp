// idempotent: a compute directly after a compute gives the same result on that rank, and no
// compute changes the rank's local state digest.
#include <sstream>

#include "checking.h"
#include "distmetrics/harness/property.h"

namespace distmetrics::harness::properties {
namespace {
namespace DISTMETRICS_UNITY_ID {

using namespace checking;
using nlohmann::json;

PropertyResult check(const CheckContext& ctx, const std::string& hint) {
  const auto ks = computes_with(ctx, ComputeRole::Repeat);
  if (ks.empty()) return skipped("idempotent", "the script has no compute directly after a compute");
  auto result = judge(
      ctx, "idempotent", ks,
      [&](int rank, int k) -> const ComputeResult* {
        const auto* record = ctx.ranks[rank].compute(ctx.plan.computes[k].previous);
        return record ? &record->result : nullptr;
      },
      ctx.scenario.tolerance, "the compute before", hint);
  if (result.outcome == Outcome::Fail) return result;
  // Every compute must leave the local state as it found it.
  bool any_digest = false;
  for (const auto& obs : ctx.ranks) {
    for (const auto& record : obs.computes) {
      if (record.digest_before.empty() || record.digest_after.empty()) continue;
      any_digest = true;
      if (record.digest_before == record.digest_after) continue;
      result.outcome = Outcome::Fail;
      const auto* single = single_at(ctx, record.index);
      result.single = optional_result(single);
      result.values.clear();
      for (const auto& o : ctx.ranks)
        result.values.push_back(optional_result(o.compute(record.index) ? &o.compute(record.index)->result : nullptr));
      result.lines = {{obs.rank, record.result.text(), std::nullopt, false, std::nullopt}};
      result.tolerance.clear();
      std::ostringstream msg;
      msg << "idempotent failed at " << compute_phrase(ctx, record.index) << ": compute() changed rank " << obs.rank
          << "'s local state (state digest " << record.digest_before << " before, " << record.digest_after
          << " after); compute() must sync copies of the state and leave the local state untouched\n"
          << "  single process: " << (single ? single->text() : "none") << "\n"
          << "  rank " << obs.rank << ": " << record.result.text() << "\n";
      result.message = msg.str();
      result.variant_lines = variant_lines(ctx);
      result.difference.reset();
      return result;
    }
  }
  result.message += any_digest ? "; every compute left the local state digest unchanged"
                               : "; the metric gives no state digest, so only the values were compared";
  return result;
}

// The state digest is direct evidence: every later compute sees the damage, whichever property
// failed (idempotent itself may have held).
std::optional<RootCause> compute_changes_the_state(const Evidence& e) {
  for (const auto& obs : e.ctx.ranks)
    for (const auto& c : obs.computes)
      if (!c.digest_before.empty() && !c.digest_after.empty() && c.digest_before != c.digest_after) {
        RootCause cause;
        cause.property = "idempotent";
        cause.headline = "compute() changes the local state: the sync writes reduced values back (an in-place sync)";
        cause.evidence = "compute " + std::to_string(c.index + 1) + " changed rank " + std::to_string(obs.rank) +
                         "'s state digest";
        cause.hint = "sync copies of the states and leave the local ones untouched; later updates otherwise add to "
                     "already-reduced values (PyTorch-Ignite #2803)";
        return cause;
      }
  return std::nullopt;
}

std::optional<RootCause> second_compute_differs(const Evidence& e) {
  if (!e.failed("idempotent")) return std::nullopt;
  RootCause cause;
  cause.property = "idempotent";
  cause.headline = "a second compute() gives another result, though the state digest is unchanged";
  cause.evidence = "idempotent failed on the values";
  cause.hint = "a cache or an 'already reduced' flag (PyTorch-Ignite #2800, torchmetrics #2570)";
  return cause;
}

bool repeated_compute(const Scenario&, const std::vector<ComputeRole>& roles) {
  return script_has(roles, ComputeRole::Repeat);
}

}  // namespace DISTMETRICS_UNITY_ID
}  // namespace

Property idempotent() {
  using namespace DISTMETRICS_UNITY_ID;
  Property p;
  p.name = "idempotent";
  p.holds_when = "a second `compute()` gives the same result and leaves the local state digest unchanged";
  p.label = "idem";
  p.column_order = 3;
  p.needs_compute = ComputeRole::Repeat;
  p.needs_compute_text = "a compute directly after another compute";
  p.by_default = repeated_compute;
  p.check = check;
  p.hint = "a second compute() with no update between must return the same result on every rank";
  p.root_causes = {{50, compute_changes_the_state}, {80, second_compute_differs}};
  return p;
}

}  // namespace distmetrics::harness::properties
