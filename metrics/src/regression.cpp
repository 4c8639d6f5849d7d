#include "distmetrics/metrics/regression.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "distmetrics/metrics/errors.h"
#include "distmetrics/metrics/input_checks.h"
#include "reference_metrics.h"
#include "tensor_numbers.h"

namespace distmetrics::metrics {
namespace {

using namespace checks;

using detail::count_of;
using detail::number_of;
using detail::zero_count;

// input and target as float64, after checking them whole. `dims` = -1: any shape [N, *] (dim >= 1).
struct Pair {
  at::Tensor x;
  at::Tensor y;
};
void check_pair(const std::string& metric, const Batch& batch, std::int64_t dims, const std::string& layout) {
  require_defined(metric, "input", batch.input, "predictions shaped " + layout);
  require_defined(metric, "target", batch.target, "true values shaped " + layout);
  require_absent(metric, "weight", batch.weight, metric + " takes no sample weights");
  require_floating(metric, "input", batch.input);
  require_floating(metric, "target", batch.target);
  if (dims < 0 ? batch.input.dim() < 1 : batch.input.dim() != dims) {
    throw InputError(metric, "input", "predictions shaped " + layout, describe(batch.input));
  }
  require_same_shape(metric, "target", batch.target, "input", batch.input);
}
Pair paired(const std::string& metric, const Batch& batch, std::int64_t dims, const std::string& layout) {
  check_pair(metric, batch, dims, layout);
  return {batch.input.to(at::kDouble), batch.target.to(at::kDouble)};
}

at::Tensor zeros_of(at::ScalarType dtype, at::IntArrayRef shape = {}) { return at::zeros(shape, dtype); }
void require_samples(const std::string& metric, std::int64_t n, std::int64_t needed) {
  if (n == 0) throw NotComputableError(metric, "no samples on any rank");
  if (n < needed) {
    throw NotComputableError(metric, "needs at least " + std::to_string(needed) + " samples on all ranks together, got " +
                                         std::to_string(n));
  }
}

}  // namespace

at::ScalarType parse_sum_dtype(const std::string& metric, const std::string& text) {
  if (text == "float64") return at::kDouble;
  if (text == "float32") return at::kFloat;
  throw InputError(metric, "sum_dtype", "float64 or float32", "\"" + text + "\"");
}

// --- MAE, MSE, RMSE ----------------------------------------------------------------------------

MeanError::MeanError(std::string name, Kind kind, at::ScalarType sum_dtype)
    : StatefulMetric(std::move(name)), kind_(kind) {
  add_state("error_sum", zeros_of(sum_dtype), Reduction::Sum);
  add_state("elements", zero_count(), Reduction::Sum);
}

void MeanError::update_state(const Batch& batch) {
  check_pair(name(), batch, -1, "[N, *]");
  // The same float64 arithmetic as x.double() - y.double(), in one buffer of our own: the
  // subtraction promotes the target element by element, then squares or absolutes in place.
  at::Tensor e = batch.input.to(at::kDouble, /*non_blocking=*/false, /*copy=*/true);
  e.sub_(batch.target);
  if (kind_ == Kind::Absolute) e.abs_();
  else e.mul_(e);
  at::Tensor& sum = state("error_sum");
  sum += e.sum().to(sum.scalar_type());
  state("elements") += e.numel();
}

Value MeanError::compute_from(const StateValues& synced) const {
  const std::int64_t n = count_of(synced["elements"]);
  require_samples(name(), n, 1);
  const double mean = number_of(synced["error_sum"]) / static_cast<double>(n);
  return kind_ == Kind::RootSquared ? std::sqrt(mean) : mean;
}

MeanAbsoluteError::MeanAbsoluteError(at::ScalarType sum_dtype)
    : MeanError("MeanAbsoluteError", Kind::Absolute, sum_dtype) {}
MeanSquaredError::MeanSquaredError(at::ScalarType sum_dtype)
    : MeanError("MeanSquaredError", Kind::Squared, sum_dtype) {}
RootMeanSquaredError::RootMeanSquaredError(at::ScalarType sum_dtype)
    : MeanError("RootMeanSquaredError", Kind::RootSquared, sum_dtype) {}

// --- MaximumAbsoluteError ----------------------------------------------------------------------

MaximumAbsoluteError::MaximumAbsoluteError(at::ScalarType sum_dtype) : StatefulMetric("MaximumAbsoluteError") {
  add_state("max_abs_error", at::full({}, -std::numeric_limits<double>::infinity(), sum_dtype), Reduction::Max);
  add_state("elements", zero_count(), Reduction::Sum);
  add_state("nans", zero_count(), Reduction::Sum);
}

void MaximumAbsoluteError::update_state(const Batch& batch) {
  const Pair p = paired(name(), batch, -1, "[N, *]");
  const at::Tensor e = (p.x - p.y).abs();
  const at::Tensor nan = at::isnan(e);
  if (e.numel() > 0) {
    at::Tensor& largest = state("max_abs_error");
    // NaNs are counted apart: a MAX collective may keep or drop a NaN depending on rank order.
    largest = at::maximum(largest, e.masked_fill(nan, -INFINITY).max().to(largest.scalar_type()));
  }
  state("elements") += e.numel();
  state("nans") += nan.sum();
}

Value MaximumAbsoluteError::compute_from(const StateValues& synced) const {
  require_samples(name(), count_of(synced["elements"]), 1);
  if (count_of(synced["nans"]) > 0) return std::numeric_limits<double>::quiet_NaN();
  return number_of(synced["max_abs_error"]);
}

// --- MeanPairwiseDistance ----------------------------------------------------------------------

MeanPairwiseDistance::MeanPairwiseDistance(double p, double eps, at::ScalarType sum_dtype)
    : StatefulMetric("MeanPairwiseDistance"), p_(p), eps_(eps) {
  if (!(p_ > 0.0) || std::isinf(p_)) throw InputError(name(), "p", "a finite number > 0", number_string(p_));
  if (!(eps_ >= 0.0)) throw InputError(name(), "eps", "a number >= 0", number_string(eps_));
  add_state("distance_sum", zeros_of(sum_dtype), Reduction::Sum);
  add_state("rows", zero_count(), Reduction::Sum);
}

void MeanPairwiseDistance::update_state(const Batch& batch) {
  const Pair p = paired(name(), batch, 2, "[N, D]");
  const at::Tensor distance = (p.x - p.y + eps_).abs().pow(p_).sum(1).pow(1.0 / p_);
  at::Tensor& sum = state("distance_sum");
  sum += distance.sum().to(sum.scalar_type());
  state("rows") += p.x.size(0);
}

Value MeanPairwiseDistance::compute_from(const StateValues& synced) const {
  const std::int64_t n = count_of(synced["rows"]);
  require_samples(name(), n, 1);
  return number_of(synced["distance_sum"]) / static_cast<double>(n);
}

// --- R2Score -----------------------------------------------------------------------------------

R2Score::R2Score(at::ScalarType sum_dtype) : StatefulMetric("R2Score") {
  add_state("target_sum", zeros_of(sum_dtype), Reduction::Sum);
  add_state("target_square_sum", zeros_of(sum_dtype), Reduction::Sum);
  add_state("squared_error_sum", zeros_of(sum_dtype), Reduction::Sum);
  add_state("samples", zero_count(), Reduction::Sum);
  add_state("target_extremes", at::full({2}, -std::numeric_limits<double>::infinity(), sum_dtype), Reduction::Max);
}

void R2Score::update_state(const Batch& batch) {
  const Pair p = paired(name(), batch, 1, "[N]");
  const at::ScalarType dtype = state("target_sum").scalar_type();
  state("target_sum") += p.y.sum().to(dtype);
  state("target_square_sum") += (p.y * p.y).sum().to(dtype);
  state("squared_error_sum") += (p.x - p.y).pow(2).sum().to(dtype);
  state("samples") += p.y.numel();
  if (p.y.numel() > 0) {
    at::Tensor& extremes = state("target_extremes");
    extremes = at::maximum(extremes, at::stack({p.y.max(), -p.y.min()}).to(dtype));
  }
}

Value R2Score::compute_from(const StateValues& synced) const {
  const std::int64_t n = count_of(synced["samples"]);
  require_samples(name(), n, 2);
  const double sum = number_of(synced["target_sum"]);
  const double square_sum = number_of(synced["target_square_sum"]);
  const double ss_res = number_of(synced["squared_error_sum"]);
  if (std::isnan(sum) || std::isnan(square_sum) || std::isnan(ss_res)) return std::numeric_limits<double>::quiet_NaN();
  const at::Tensor extremes = synced["target_extremes"].to(at::kCPU, at::kDouble);
  const bool constant = extremes[0].item<double>() == -extremes[1].item<double>();
  const double ss_tot = constant ? 0.0 : square_sum - sum * sum / static_cast<double>(n);
  if (ss_tot == 0.0) return ss_res == 0.0 ? 1.0 : 0.0;
  return 1.0 - ss_res / ss_tot;
}

// --- PearsonCorrelation ------------------------------------------------------------------------

PearsonCorrelation::PearsonCorrelation(at::ScalarType sum_dtype) : StatefulMetric("PearsonCorrelation") {
  for (const char* s : {"x_sum", "y_sum", "xx_sum", "yy_sum", "xy_sum"}) add_state(s, zeros_of(sum_dtype), Reduction::Sum);
  add_state("samples", zero_count(), Reduction::Sum);
  add_state("extremes", at::full({4}, -std::numeric_limits<double>::infinity(), sum_dtype), Reduction::Max);
}

void PearsonCorrelation::update_state(const Batch& batch) {
  const Pair p = paired(name(), batch, 1, "[N]");
  const at::ScalarType dtype = state("x_sum").scalar_type();
  state("x_sum") += p.x.sum().to(dtype);
  state("y_sum") += p.y.sum().to(dtype);
  state("xx_sum") += (p.x * p.x).sum().to(dtype);
  state("yy_sum") += (p.y * p.y).sum().to(dtype);
  state("xy_sum") += (p.x * p.y).sum().to(dtype);
  state("samples") += p.x.numel();
  if (p.x.numel() > 0) {
    at::Tensor& extremes = state("extremes");
    extremes = at::maximum(extremes, at::stack({p.x.max(), -p.x.min(), p.y.max(), -p.y.min()}).to(dtype));
  }
}

Value PearsonCorrelation::compute_from(const StateValues& synced) const {
  const std::int64_t n_count = count_of(synced["samples"]);
  require_samples(name(), n_count, 2);
  const double n = static_cast<double>(n_count);
  const double sx = number_of(synced["x_sum"]), sy = number_of(synced["y_sum"]);
  const double cov = number_of(synced["xy_sum"]) - sx * sy / n;
  const double var_x = number_of(synced["xx_sum"]) - sx * sx / n;
  const double var_y = number_of(synced["yy_sum"]) - sy * sy / n;
  const at::Tensor e = synced["extremes"].to(at::kCPU, at::kDouble);
  const bool constant = e[0].item<double>() == -e[1].item<double>() || e[2].item<double>() == -e[3].item<double>();
  if (constant || std::isnan(cov)) return std::numeric_limits<double>::quiet_NaN();
  return std::clamp(cov / std::sqrt(var_x * var_y), -1.0, 1.0);  // as numpy.corrcoef: rounding may pass 1
}

}  // namespace distmetrics::metrics

// --- Registration in the reference registry (registry.h), next to the classes ------------

namespace distmetrics::metrics::detail {
namespace {

template <typename M>
std::unique_ptr<Metric> with_sum_dtype(const char* name, const nlohmann::json& p) {
  return std::make_unique<M>(sum_dtype_of(name, p));
}

}  // namespace

void register_regression(MetricRegistry& registry) {
  const std::string elements = "; input predictions and target values, float, same shape [N,*] (every element a sample)";
  registry.add({"MeanAbsoluteError", "regression", "mean |input - target|" + elements, {sum_dtype_param()},
                [](const nlohmann::json& p) { return with_sum_dtype<MeanAbsoluteError>("MeanAbsoluteError", p); }});
  registry.add({"MeanSquaredError", "regression", "mean (input - target)^2" + elements, {sum_dtype_param()},
                [](const nlohmann::json& p) { return with_sum_dtype<MeanSquaredError>("MeanSquaredError", p); }});
  registry.add({"RootMeanSquaredError", "regression", "sqrt of the mean (input - target)^2" + elements, {sum_dtype_param()},
                [](const nlohmann::json& p) { return with_sum_dtype<RootMeanSquaredError>("RootMeanSquaredError", p); }});
  registry.add({"MaximumAbsoluteError", "regression", "max |input - target| (a MAX state)" + elements, {sum_dtype_param()},
                [](const nlohmann::json& p) { return with_sum_dtype<MaximumAbsoluteError>("MaximumAbsoluteError", p); }});
  registry.add({"MeanPairwiseDistance", "regression",
                "mean over rows of ||input - target + eps||_p; input and target float [N,D] (every row a sample)",
                {param("p", "float", 2.0, "order of the norm, > 0"),
                 param("eps", "float", 1e-6, "added to every difference (as torch pairwise_distance), >= 0"),
                 sum_dtype_param()},
                [](const nlohmann::json& p) {
                  return std::make_unique<MeanPairwiseDistance>(p.at("p").get<double>(), p.at("eps").get<double>(),
                                                                sum_dtype_of("MeanPairwiseDistance", p));
                }});
  registry.add({"R2Score", "regression", "coefficient of determination 1 - SS_res/SS_tot; input and target float [N]",
                {sum_dtype_param()},
                [](const nlohmann::json& p) { return with_sum_dtype<R2Score>("R2Score", p); }});
  registry.add({"PearsonCorrelation", "regression", "Pearson's r between input and target, float [N]",
                {sum_dtype_param()},
                [](const nlohmann::json& p) { return with_sum_dtype<PearsonCorrelation>("PearsonCorrelation", p); }});
}

}  // namespace distmetrics::metrics::detail
