// batch_invariant: the single process's result on all the data does not depend on the batch size.
#include <cmath>
#include <sstream>

#include "checking.h"
#include "distmetrics/harness/input_dtype.h"
#include "distmetrics/harness/property.h"

namespace distmetrics::harness::properties {
namespace {
namespace DISTMETRICS_UNITY_ID {

using namespace checking;
using nlohmann::json;

PropertyResult check(const CheckContext& ctx, const std::string& hint) {
  PropertyResult result;
  result.name = "batch_invariant";
  if (ctx.single.other_batch_sizes.empty()) return skipped("batch_invariant", "no other batch size to try");
  result.single = ctx.single.full;
  // As golden's: a float32 result (or input) differs between batchings by float32 rounding.
  std::vector<const json*> returned;
  if (ctx.single.full.value) returned.push_back(&*ctx.single.full.value);
  for (const auto& entry : ctx.single.other_batch_sizes)
    if (entry.second.value) returned.push_back(&*entry.second.value);
  std::string widened_by;
  const Tolerance tol = widened_for_dtypes(ctx.scenario.tolerance, returned, ctx.variant.dtype, &widened_by);
  const std::string tol_text = tolerance_text(tol) + (widened_by.empty() ? "" : " (widened from rtol " +
                                                          number_text(ctx.scenario.tolerance.rtol) + ", atol " +
                                                          number_text(ctx.scenario.tolerance.atol) + ": " + widened_by + ")");
  double largest = 0;
  std::ostringstream lines;
  bool failed = false;
  for (const auto& [size, other] : ctx.single.other_batch_sizes) {
    const auto cmp = compare_results(ctx.single.full, other, tol);
    largest = std::max(largest, cmp.difference);
    lines << "  batch size " << size << ": " << other.text();
    if (!other.raised() && !ctx.single.full.raised()) lines << "   difference " << number_text(cmp.difference);
    if (!cmp.equal) {
      failed = true;
      lines << "   <- differs" << (cmp.detail.empty() ? "" : ": " + cmp.detail);
    }
    lines << "\n";
  }
  result.difference = largest;
  if (!failed) {
    std::ostringstream msg;
    msg << "batch_invariant held: the single-process result on all the data is the same with batch size "
        << ctx.scenario.batch_size;
    for (const auto& entry : ctx.single.other_batch_sizes) msg << ", " << entry.first;
    msg << " (largest difference " << number_text(largest) << (widened_by.empty() ? "" : "; tolerance " + tol_text) << ")";
    result.message = msg.str();
    return result;
  }
  result.outcome = Outcome::Fail;
  std::ostringstream msg;
  msg << "batch_invariant failed: " << hint << "\n"
      << "  batch size " << ctx.scenario.batch_size << " (the scenario's): " << ctx.single.full.text() << "\n"
      << lines.str() << "  tolerance: " << tol_text << "\n";
  result.message = msg.str();
  result.tolerance = tol_text;
  result.variant_lines = variant_lines(ctx);
  return result;
}

// Whether the values the single process gives at other batch sizes are noise rather than a
// formula: float32 results that change sign, jump by an order of magnitude or turn non-finite
// from one batching to the next. A per-batch statistic moves a value a little; the rounding left
// when nearly equal float32 sums are subtracted (a variance of a constant target: 0 in exact
// arithmetic) decides the whole value.
bool cancellation_noise(const CheckContext& ctx) {
  std::vector<const nlohmann::json*> values;
  std::vector<double> numbers;
  auto take = [&](const ComputeResult& r) {
    if (!r.value || r.raised()) return;
    values.push_back(&*r.value);
    if (r.value->is_number()) numbers.push_back(r.value->get<double>());
    else if (r.value->is_string())  // "nan", "inf", "-inf"
      numbers.push_back(*r.value == "nan" ? NAN : *r.value == "inf" ? INFINITY : -INFINITY);
  };
  take(ctx.single.full);
  for (const auto& [size, other] : ctx.single.other_batch_sizes) take(other);
  if (numbers.size() < 2 || observed_float_dtype(values) != "float32") return false;
  bool finite = false, non_finite = false, positive = false, negative = false;
  double smallest = INFINITY, largest = 0;
  for (double x : numbers) {
    if (!std::isfinite(x)) {
      non_finite = true;
      continue;
    }
    finite = true;
    if (x > 0) positive = true;
    if (x < 0) negative = true;
    smallest = std::min(smallest, std::fabs(x));
    largest = std::max(largest, std::fabs(x));
  }
  if (finite && non_finite) return true;
  if (positive && negative) return true;
  return finite && smallest > 0 && largest / smallest >= 10;
}

// A formula that depends on the batching is wrong for every world size too: it explains
// differences between ranks and the single process, not the other way round. So these lead.
bool per_batch(const Evidence& e) {
  return e.failed("batch_invariant") && !e.within_float32_rounding("batch_invariant");
}

std::optional<RootCause> float32_cancellation(const Evidence& e) {
  if (!per_batch(e) || !cancellation_noise(e.ctx)) return std::nullopt;
  RootCause cause;
  cause.property = "batch_invariant";
  cause.headline = "float32 cancellation: the result is the rounding noise left when nearly equal float32 sums are "
                   "subtracted (e.g. the variance of a constant target, 0 in exact arithmetic)";
  cause.evidence = "batch_invariant failed with float32 values that change sign, turn non-finite or differ by an "
                   "order of magnitude from one batch size to another: noise, not a formula of the batching";
  cause.hint = "accumulate in float64, and compute variances from deviations (a two-pass or Welford update) rather "
               "than E[x^2] - E[x]^2; a constant target has no variance: say so rather than divide by it";
  return cause;
}

std::optional<RootCause> per_batch_statistics(const Evidence& e) {
  if (!per_batch(e)) return std::nullopt;
  RootCause cause;
  cause.property = "batch_invariant";
  cause.headline = "the result depends on the batch size: per-batch statistics";
  cause.evidence = "batch_invariant failed beyond float32 rounding (the single process alone, other batch sizes)";
  cause.hint = "accumulate sums and counts, never per-batch means or the batch's own statistics (PyTorch-Ignite "
               "#2087, #1792); the same formula is then wrong for every world size";
  return cause;
}

// Last of the value rules: within float32 rounding, the other failures say more.
std::optional<RootCause> float32_rounding(const Evidence& e) {
  if (!e.failed("batch_invariant") || !e.within_float32_rounding("batch_invariant")) return std::nullopt;
  RootCause cause;
  cause.property = "batch_invariant";
  cause.headline = "float32 rounding: other batch sizes agree within float32 precision";
  cause.evidence = "batch_invariant failed by a relative difference of at most " +
                   cause_number(e.relative_difference("batch_invariant"));
  cause.hint = "accumulate in float64 (the formula itself does not depend on the batch size), or widen the "
               "scenario's tolerance for float32 data";
  return cause;
}

bool global_single_process(const Scenario& s, const std::vector<ComputeRole>&) { return s.single_process == "global"; }

}  // namespace DISTMETRICS_UNITY_ID
}  // namespace

Property batch_invariant() {
  using namespace DISTMETRICS_UNITY_ID;
  Property p;
  p.name = "batch_invariant";
  p.holds_when = "the result does not depend on the batch size";
  p.label = "batch";
  p.column_order = 6;
  p.by_default = global_single_process;
  p.check = check;
  p.last_evidence_step = single_process_only;  // other batch sizes, in one process
  p.hint = "the single-process result on the same data depends on the batch size (a formula that uses per-batch "
           "statistics, e.g. the batch's own mean, gives different answers for different batchings, and so for "
           "different world sizes)";
  p.root_causes = {{30, float32_cancellation}, {40, per_batch_statistics}, {100, float32_rounding}};
  return p;
}

}  // namespace distmetrics::harness::properties
