// What the property checkers share (checking.h).
#include "checking.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "distmetrics/harness/input_dtype.h"

namespace distmetrics::harness::checking {

using nlohmann::json;

std::optional<ComputeResult> optional_result(const ComputeResult* r) {
  return r ? std::optional<ComputeResult>(*r) : std::nullopt;
}

std::string tolerance_text(const Tolerance& tol) {
  std::ostringstream out;
  out << "rtol " << tol.rtol << ", atol " << tol.atol << "; integer tensors";
  for (const auto& e : tol.exact) out << ", '" << e << "'";
  out << " exact";
  return out.str();
}

std::string variant_lines(const CheckContext& ctx) {
  const auto& v = ctx.variant;
  std::ostringstream out;
  out << "  variant: " << v.id << " (backend " << v.backend << ", world size " << v.world_size << ", shard " << v.shard
      << ", placement " << v.placement << ", seed " << v.seed << ")\n"
      << "  reproduce: " << v.reproduce();
  return out.str();
}

std::string compute_phrase(const CheckContext& ctx, int k) {
  const auto& point = ctx.plan.computes.at(k);
  std::ostringstream out;
  out << "compute " << k + 1 << " of " << ctx.plan.computes.size() << " (script step " << point.step + 1 << ": '"
      << ctx.scenario.script.at(point.step).text << "')";
  return out.str();
}

std::string rank_numbers(const std::vector<int>& ranks) {
  std::string out;
  for (int rank : ranks) out += (out.empty() ? "" : ", ") + std::to_string(rank);
  return out;
}

std::string missing_text(const RankObservation& obs) {
  if (obs.error)
    return "did not get there: its script stopped at step " + std::to_string(obs.error->step + 1) + " (" +
           obs.error->op + "), raising " + obs.error->type + ": " + obs.error->message;
  return "did not get there";
}

PropertyResult skipped(const std::string& name, const std::string& why) {
  PropertyResult p;
  p.name = name;
  p.set_not_judged(why);
  return p;
}

PropertyResult not_applicable(const std::string& name, const std::string& why) {
  PropertyResult p = skipped(name, why);
  p.why = SkipWhy::NotApplicable;
  p.message = name + ": not applicable: " + why;
  return p;
}

namespace {
namespace DISTMETRICS_UNITY_ID {

// Why a rank has no result to judge at a compute.
std::string missing_of(const CheckContext& ctx, const RankComparison& line) {
  return line.record ? "no result at this compute" : missing_text(ctx.ranks[line.rank]);
}

// Whether compute k failed on some rank: a rank without a result, or one that differs.
bool any_failed(const std::vector<RankComparison>& lines) {
  for (const auto& line : lines)
    if (!line.actual || (line.compared() && !line.comparison.equal)) return true;
  return false;
}

// One rank's line of a failure message; adds its difference to `worst` and clears `numeric`
// where it has none.
RankLine rank_line(const CheckContext& ctx, const RankComparison& line, const std::string& expected_label,
                   double& worst, bool& numeric) {
  RankLine shown;
  shown.rank = line.rank;
  if (!line.actual) {
    shown.text = missing_of(ctx, line);
    numeric = false;
    return shown;
  }
  shown.text = line.actual->text();
  if (!line.expected) return shown;
  if (expected_label != "single process") shown.text += "   (" + expected_label + ": " + line.expected->text() + ")";
  if (line.actual->raised() || line.expected->raised()) {
    numeric = false;
  } else {
    shown.text += "   difference " + number_text(line.comparison.difference);
    shown.difference = line.comparison.difference;
    worst = std::max(worst, line.comparison.difference);
  }
  if (!line.comparison.equal) {
    shown.text += "   <- differs" + (line.comparison.detail.empty() ? "" : ": " + line.comparison.detail);
    shown.differs = true;
  }
  return shown;
}

// The result of a property that failed at compute k: every rank's line, the tolerance.
void fail_at(const CheckContext& ctx, PropertyResult& result, int k, const std::vector<RankComparison>& lines,
             const Tolerance& tol, const std::string& expected_label, const std::string& what_it_means) {
  const ComputeResult* single = single_at(ctx, k);
  result.outcome = Outcome::Fail;
  std::ostringstream msg;
  msg << result.name << " failed at " << compute_phrase(ctx, k) << ": " << what_it_means << "\n";
  msg << "  single process: " << (single ? single->text() : "none") << "\n";
  double worst = 0;
  bool numeric = true;
  for (const auto& line : lines) {
    RankLine shown = rank_line(ctx, line, expected_label, worst, numeric);
    msg << "  rank " << line.rank << ": " << shown.text << "\n";
    result.lines.push_back(std::move(shown));
  }
  result.tolerance = tolerance_text(tol);
  msg << "  tolerance: " << result.tolerance << "\n";
  result.message = msg.str();
  result.variant_lines = variant_lines(ctx);
  if (numeric || worst > 0) result.difference = worst;
}

}  // namespace DISTMETRICS_UNITY_ID
}  // namespace

PropertyResult judge(const CheckContext& ctx, const std::string& name, const std::vector<int>& ks,
                     const ExpectedFor& expected_for, const Tolerance& tol, const std::string& expected_label,
                     const std::string& what_it_means, const ActualOf& actual_of) {
  using namespace DISTMETRICS_UNITY_ID;
  PropertyResult result;
  result.name = name;
  double largest = 0;
  for (int k : ks) {
    const auto lines = compare_at_compute(ctx.ranks, k, expected_for, tol, actual_of);
    for (const auto& line : lines) {
      if (!line.compared()) continue;
      if (std::isfinite(line.comparison.difference)) largest = std::max(largest, line.comparison.difference);
      else largest = line.comparison.difference;
    }
    result.single = optional_result(single_at(ctx, k));
    result.values.clear();
    for (const auto& line : lines) result.values.push_back(optional_result(line.actual));
    if (!any_failed(lines)) continue;
    fail_at(ctx, result, k, lines, tol, expected_label, what_it_means);
    return result;
  }
  std::ostringstream msg;
  msg << name << " held at compute";
  for (std::size_t i = 0; i < ks.size(); ++i) msg << (i ? ", " : " ") << ks[i] + 1;
  msg << " on all " << ctx.ranks.size() << " rank(s) (largest difference " << number_text(largest) << ")";
  result.message = msg.str();
  result.difference = largest;
  return result;
}

std::vector<int> computes_with(const CheckContext& ctx, ComputeRole role) {
  std::vector<int> ks;
  for (const auto& point : ctx.plan.computes)
    if (point.role == role) ks.push_back(point.index);
  return ks;
}

const ComputeResult* single_at(const CheckContext& ctx, int k) {
  return k < static_cast<int>(ctx.single.at_compute.size()) ? &ctx.single.at_compute[k] : nullptr;
}

const ComputeResult* own_result(const CheckContext& ctx, int rank, int k) {
  const auto* record = ctx.ranks[rank].compute(k);
  return record ? &record->result : nullptr;
}

const ComputeResult* probed(const ComputeRecord& record, const std::string& property) {
  const auto it = record.probed.find(property);
  return it == record.probed.end() ? nullptr : &it->second;
}

int last_full_data_step(const CheckContext& ctx) {
  int last = -1;
  for (const auto& point : ctx.plan.computes)
    if (point.all_data) last = std::max(last, point.step);
  return last;
}

std::vector<int> computes_probed(const CheckContext& ctx, const std::string& property) {
  std::vector<int> ks;
  for (const auto& point : ctx.plan.computes)
    for (const auto& obs : ctx.ranks)
      if (const auto* record = obs.compute(point.index); record && probed(*record, property)) {
        ks.push_back(point.index);
        break;
      }
  return ks;
}

PropertyResult check_full_data(const CheckContext& ctx, const std::string& name, const std::string& label,
                               const ComputeResult& expected, const Tolerance& given, const std::string& hint) {
  std::vector<const json*> returned;
  if (ctx.single.full.value) returned.push_back(&*ctx.single.full.value);
  for (const auto& point : ctx.plan.computes)
    if (point.all_data)
      for (const auto& obs : ctx.ranks)
        if (const auto* record = obs.compute(point.index); record && record->result.value)
          returned.push_back(&*record->result.value);
  std::string widened_by;
  const Tolerance tol = widened_for_dtypes(given, returned, ctx.variant.dtype, &widened_by);
  const std::string tol_text =
      tolerance_text(tol) + (widened_by.empty() ? "" : " (widened from rtol " + number_text(given.rtol) + ", atol " +
                                                            number_text(given.atol) + ": " + widened_by + ")");
  PropertyResult result;
  result.name = name;
  result.single = ctx.single.full;
  const auto single_cmp = compare_results(expected, ctx.single.full, tol);
  double largest = single_cmp.difference;
  std::ostringstream problems;
  if (!single_cmp.equal)
    problems << "  single process (all data): " << ctx.single.full.text() << "   <- differs: " << single_cmp.detail << "\n";
  std::vector<int> full;
  for (const auto& point : ctx.plan.computes)
    if (point.all_data) full.push_back(point.index);
  const auto always_expected = [&expected](int, int) { return &expected; };
  for (int k : full) {
    for (const auto& line : compare_at_compute(ctx.ranks, k, always_expected, tol)) {
      if (!line.record) continue;  // the rank stopped earlier: reported by the other properties
      largest = std::max(largest, line.comparison.difference);
      if (!line.comparison.equal)
        problems << "  rank " << ctx.ranks[line.rank].rank << ", compute " << k + 1 << ": " << line.actual->text()
                 << "   <- differs: " << line.comparison.detail << "\n";
    }
  }
  if (!full.empty())
    for (const auto& obs : ctx.ranks)
      result.values.push_back(obs.compute(full.back()) ? std::optional<ComputeResult>(obs.compute(full.back())->result)
                                                       : std::nullopt);
  result.difference = largest;
  if (problems.str().empty()) {
    result.message = name + " held: the result on all the data is " + expected.text() +
                     (full.empty() ? " (single process; no compute saw all the data on the ranks)"
                                   : " (single process, and every rank at each compute that saw all the data)") +
                     (widened_by.empty() ? "" : "; tolerance " + tol_text);
    return result;
  }
  result.outcome = Outcome::Fail;
  result.tolerance = tol_text;
  result.message = name + " failed: " + hint + "\n  " + label + ": " + expected.text() + "\n" + problems.str() +
                   "  tolerance: " + tol_text + "\n";
  result.variant_lines = variant_lines(ctx);
  return result;
}

}  // namespace distmetrics::harness::checking
