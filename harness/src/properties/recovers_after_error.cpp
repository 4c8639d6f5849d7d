// recovers_after_error: after the compute where [expect] error is raised (on every rank and in the
// single process, together: expected_error), the script goes on (variants/scenario_task.cpp) and
// the next update() and compute() work on every rank, each compute giving the single process's
// value on the data fed so far (equal_to_single's comparison). Checked whenever [expect] names an
// error and the script has an update and a compute after that compute; a scenario never lists it.
#include <algorithm>
#include <map>
#include <set>

#include "checking.h"
#include "distmetrics/harness/root_cause.h"
#include "distmetrics/harness/property.h"

namespace distmetrics::harness::properties {
namespace {
namespace DISTMETRICS_UNITY_ID {

using namespace checking;

constexpr const char* kName = "recovers_after_error";

// The computes after [expect] compute that follow an update made after it.
std::vector<int> computes_after_recovery(const CheckContext& ctx) {
  std::vector<int> ks;
  const int k = ctx.scenario.expect.compute;
  if (k < 0 || k >= static_cast<int>(ctx.plan.computes.size())) return ks;
  const int raised_at = ctx.plan.computes[k].step;
  int updated_at = -1;
  for (std::size_t s = static_cast<std::size_t>(raised_at) + 1; s < ctx.plan.steps.size() && updated_at < 0; ++s)
    if (ctx.plan.steps[s].op == Step::Op::Update || ctx.plan.steps[s].op == Step::Op::Replay) updated_at = static_cast<int>(s);
  if (updated_at < 0) return ks;
  for (const auto& point : ctx.plan.computes)
    if (point.index > k && point.step >= updated_at) ks.push_back(point.index);
  return ks;
}

PropertyResult check(const CheckContext& ctx, const std::string& hint) {
  if (ctx.scenario.expect.error.empty()) return skipped(kName, "the scenario expects no error");
  const auto ks = computes_after_recovery(ctx);
  if (ks.empty())
    return skipped(kName, "the script has no update and compute after compute " +
                              std::to_string(ctx.scenario.expect.compute + 1) + ", where " + ctx.scenario.expect.error +
                              " is expected");
  auto result = judge(ctx, kName, ks, [&](int, int k) { return single_at(ctx, k); }, ctx.scenario.tolerance,
                      "single process", hint);
  if (result.outcome == Outcome::Pass)
    result.message += "; after compute " + std::to_string(ctx.scenario.expect.compute + 1) + " raised " +
                      ctx.scenario.expect.error + " on every rank";
  return result;
}

// Whether the script goes on after the expected error: an update, then a compute.
bool goes_on_after_the_expected_error(const Scenario& s) {
  if (s.expect.error.empty()) return false;
  int computes = 0;
  bool updated = false;
  for (const auto& step : s.script) {
    const bool after = computes > s.expect.compute;
    if (after && (step.op == Step::Op::Update || step.op == Step::Op::Replay)) updated = true;
    if (step.op == Step::Op::Compute || step.op == Step::Op::ComputeEvery) {
      if (after && updated) return true;
      ++computes;
    }
  }
  return false;
}

// The computes after the raising one differ, and nothing before it did (equal_to_single held):
// the raise left the metric broken, whatever later property fails with it.
std::optional<RootCause> left_broken_by_the_raise(const Evidence& e) {
  if (!e.failed(kName) || e.failed("equal_to_single")) return std::nullopt;
  // The ranks whose value differs, and those that never reached a compute after the raise (read
  // from their observations, not from the lines' text).
  std::set<int> broken;
  for (const auto& line : e.result(kName)->lines)
    if (line.differs) broken.insert(line.rank);
  // What a rank that stopped after the raise raised, by step and type (e.g. "update raised
  // AttributeError on rank(s) 0, 1"): read from its observation.
  std::map<std::string, std::vector<int>> stopped;
  for (const auto& obs : e.ctx.ranks)
    for (int k : computes_after_recovery(e.ctx))
      if (!obs.compute(k)) {
        broken.insert(obs.rank);
        if (obs.error) stopped[obs.error->op + "() raised " + obs.error->type].push_back(obs.rank);
        break;
      }
  const std::string ranks = rank_numbers({broken.begin(), broken.end()});
  std::string raised;
  for (const auto& [what, on] : stopped) raised += (raised.empty() ? "" : "; ") + what + " on rank(s) " + rank_numbers(on);
  RootCause cause;
  cause.property = kName;
  cause.headline = "compute() raised " + e.ctx.scenario.expect.error + " as declared, and left the metric broken on rank(s) " +
                   ranks + ": the next update() and compute() do not give the single-process value there" +
                   (raised.empty() ? std::string() : " (the next " + raised + ")");
  cause.evidence = "expected_error held at compute " + std::to_string(e.ctx.scenario.expect.compute + 1) +
                   " and equal_to_single before it; recovers_after_error failed after it";
  cause.hint = "a compute() that raises must leave the state as it found it: restore what its sync changed, and set no "
               "cache or 'computed' flag before the check that raises";
  return cause;
}

}  // namespace DISTMETRICS_UNITY_ID
}  // namespace

// Its root cause leads the later properties' failures (update_after_compute, ranks_agree): they
// follow from the broken state. Its message names each rank whose value after the error differs.
Property recovers_after_error() {
  using namespace DISTMETRICS_UNITY_ID;
  Property p;
  p.name = kName;
  p.holds_when =
      "after `compute()` raised the `[expect] error` (on every rank, as the single process), the next `update()` and "
      "`compute()` work on every rank and give the single-process value";
  p.label = "recover";
  p.column_order = 13;
  p.listable = false;
  p.checked_anyway = goes_on_after_the_expected_error;
  p.check = check;
  p.root_causes = {{45, left_broken_by_the_raise}};
  p.hint = "after compute() raised, the metric must be usable: a raising compute must leave no half-synced state, "
           "stale cache or flag behind, so the next update() and compute() give the single-process value on every rank";
  return p;
}

}  // namespace distmetrics::harness::properties
