// expected_error: every rank and the single process raise [expect] error at [expect] compute,
// together. Checked whenever [expect] names an error; a scenario never lists it.
#include <map>
#include <sstream>

#include "checking.h"
#include "distmetrics/harness/property.h"
#include "distmetrics/harness/root_cause.h"

namespace distmetrics::harness::properties {
namespace {
namespace DISTMETRICS_UNITY_ID {

using namespace checking;

// A metric that declares a value for "no data anywhere" (Expectation::no_data_value) meets an
// expected error when no one raised and every rank returned the single process's value at
// compute k (NaN equal to NaN): the text of that value, or nothing.
std::optional<std::string> agreed_no_data_value(const CheckContext& ctx, int k) {
  if (ctx.scenario.expect.no_data_value.empty()) return std::nullopt;
  const auto* single = single_at(ctx, k);
  if (!single || single->raised() || !single->value) return std::nullopt;
  for (const auto& obs : ctx.ranks) {
    const auto* record = obs.compute(k);
    if (!record || record->result.raised() || !compare_results(*single, record->result, ctx.scenario.tolerance).equal)
      return std::nullopt;
  }
  return single->text();
}

PropertyResult check(const CheckContext& ctx, const std::string& hint) {
  const auto& want = ctx.scenario.expect.error;
  if (want.empty()) return skipped("expected_error", "the scenario expects no error");
  const int k = ctx.scenario.expect.compute;
  PropertyResult result;
  result.name = "expected_error";
  std::ostringstream problems;
  const auto* single = single_at(ctx, k);
  if (!single || single->error_type != want)
    problems << "  single process: " << (single ? single->text() : "did not get there")
             << "   <- the scenario expects " << want << " here too\n";
  std::vector<RankLine> lines;
  for (const auto& obs : ctx.ranks) {
    const auto* record = obs.compute(k);
    result.values.push_back(optional_result(record ? &record->result : nullptr));
    if (!record) lines.push_back({obs.rank, missing_text(obs), std::nullopt, false, std::nullopt});
    else if (record->result.error_type != want)
      lines.push_back({obs.rank, record->result.text() + "   <- expected " + want, std::nullopt, false, std::nullopt});
  }
  for (const auto& line : lines) problems << "  rank " << line.rank << ": " << line.text << "\n";
  if (problems.str().empty()) {
    result.message = "expected_error held: every rank and the single process raised " + want + " at compute " +
                     std::to_string(k + 1) + ", together";
    return result;
  }
  if (const auto agreed = agreed_no_data_value(ctx, k)) {
    result.message = "expected_error held by the metric's declared convention (no data anywhere: compute() returns " +
                     ctx.scenario.expect.no_data_value + " instead of raising " + want + "): every rank and the "
                     "single process returned " + *agreed + " at compute " + std::to_string(k + 1);
    return result;
  }
  result.outcome = Outcome::Fail;
  result.lines = std::move(lines);
  if (!ctx.scenario.expect.no_data_value.empty())
    problems << "  (the metric declares that compute() with no data anywhere returns " << ctx.scenario.expect.no_data_value
             << ": that also holds only when every rank and the single process return the same value)\n";
  result.message = "expected_error failed: every rank must raise " + want + " at " + compute_phrase(ctx, k) + ", " +
                   hint + "\n" + problems.str();
  result.variant_lines = variant_lines(ctx);
  return result;
}

bool when_an_error_is_expected(const Scenario& s) { return !s.expect.error.empty(); }

// Its evidence: the [expect] compute (nothing when the plan has no such compute).
int expected_compute_step(const CheckContext& ctx) {
  const int k = ctx.scenario.expect.compute;
  return k >= 0 && k < static_cast<int>(ctx.plan.computes.size()) ? ctx.plan.computes[k].step : -1;
}

// The single process raised the declared error, and some rank raised another type there: the
// distributed path reaches compute() with something the single process never has (an empty
// placeholder for a state no rank filled, a gathered list). Ahead of what follows from it
// (equal_to_single compares the two errors, recovers_after_error what came after).
std::optional<RootCause> raised_another_error(const Evidence& e) {
  if (!e.failed("expected_error")) return std::nullopt;
  const auto& want = e.ctx.scenario.expect.error;
  const int k = e.ctx.scenario.expect.compute;
  const auto* single = single_at(e.ctx, k);
  if (!single || single->error_type != want) return std::nullopt;
  std::map<std::string, std::vector<int>> by_type;  // another error type -> the ranks that raised it
  for (const auto& obs : e.ctx.ranks) {
    const auto* record = obs.compute(k);
    if (record && record->result.raised() && record->result.error_type != want)
      by_type[record->result.error_type].push_back(obs.rank);
  }
  if (by_type.empty()) return std::nullopt;
  std::string raised;
  for (const auto& [type, ranks] : by_type) raised += (raised.empty() ? "" : "; ") + type + " on rank(s) " + rank_numbers(ranks);
  RootCause cause;
  cause.property = "expected_error";
  cause.headline = "compute() " + std::to_string(k + 1) + " raised " + raised + " where the single process raises " +
                   want + ": the distributed path reaches compute() with states the single process never has";
  cause.evidence = "the single process raised " + want + " at compute " + std::to_string(k + 1) +
                   "; expected_error failed there";
  cause.hint = "decide the error from the synced state as the single process does (e.g. check for no data before "
               "the sync hands compute() a placeholder), so every rank raises " + want + " together";
  return cause;
}

}  // namespace DISTMETRICS_UNITY_ID
}  // namespace

// A rank that raises alone is a hang the engine blames on it; a rank that raises another type
// than the single process is the root cause of what follows.
Property expected_error() {
  using namespace DISTMETRICS_UNITY_ID;
  Property p;
  p.name = "expected_error";
  p.holds_when = "every rank and the single process raise the `[expect] error` at `[expect] compute`, together";
  p.label = "expect";
  p.column_order = 12;
  p.listable = false;
  p.checked_anyway = when_an_error_is_expected;
  p.check = check;
  p.hint = "together (decided from synced state), as the single process does";
  p.last_evidence_step = expected_compute_step;
  p.root_causes = {{42, raised_another_error}};
  return p;
}

}  // namespace distmetrics::harness::properties
