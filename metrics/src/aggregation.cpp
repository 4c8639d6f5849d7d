#include "distmetrics/metrics/aggregation.h"

#include <ATen/ATen.h>

#include <cmath>

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

// input [N] real numbers as float64.
at::Tensor values_1d(const std::string& metric, const Batch& batch, const std::string& what) {
  require_defined(metric, "input", batch.input, what + " shaped [N]");
  if (batch.input.dim() != 1 || batch.input.scalar_type() == at::kBool || batch.input.is_complex()) {
    throw InputError(metric, "input", what + " shaped [N] (real numbers)", describe(batch.input));
  }
  return batch.input.to(at::kDouble);
}

// target [N] (or the given shape) with values in [0, 1], as float64.
at::Tensor unit_target(const std::string& metric, const Batch& batch) {
  require_defined(metric, "target", batch.target, "targets in [0, 1] shaped like input");
  require_same_shape(metric, "target", batch.target, "input", batch.input);
  const at::Tensor t = batch.target.to(at::kDouble);
  require_no_nan(metric, "target", t);
  require_between(metric, "target", t, 0.0, 1.0);
  return t;
}

}  // namespace

// --- WeightedMean ------------------------------------------------------------------------------

WeightedMean::WeightedMean(std::string name, at::ScalarType sum_dtype) : StatefulMetric(std::move(name)) {
  add_state("value_sum", at::zeros({}, sum_dtype), Reduction::Sum);
  add_state("weight_sum", at::zeros({}, sum_dtype), Reduction::Sum);
  add_state("unweighted_samples", zero_count(), Reduction::Sum);
  add_state("samples", zero_count(), Reduction::Sum);
}

void WeightedMean::update_state(const Batch& batch) {
  const at::Tensor values = values_of(batch);
  const at::ScalarType dtype = state("value_sum").scalar_type();
  if (batch.weight.defined()) {
    if (batch.weight.dim() != 1 || batch.weight.size(0) != values.size(0) ||
        !at::isFloatingType(batch.weight.scalar_type())) {
      throw InputError(name(), "weight", "floating-point weights shaped [" + std::to_string(values.size(0)) + "]",
                       describe(batch.weight));
    }
    const at::Tensor w = batch.weight.to(at::kDouble);
    require_no_nan(name(), "weight", w);
    require_at_least(name(), "weight", w, 0.0, false);
    state("value_sum") += (w * values).sum().to(dtype);
    state("weight_sum") += w.sum().to(dtype);
  } else {
    state("value_sum") += values.sum().to(dtype);
    state("unweighted_samples") += values.size(0);
  }
  state("samples") += values.size(0);
}

Value WeightedMean::compute_from(const StateValues& synced) const {
  if (count_of(synced["samples"]) == 0) throw NotComputableError(name(), "no samples on any rank");
  const double weight = static_cast<double>(count_of(synced["unweighted_samples"])) + number_of(synced["weight_sum"]);
  if (weight == 0.0) throw NotComputableError(name(), "the sample weights sum to 0 on all ranks together");
  return number_of(synced["value_sum"]) / weight;
}

// --- Average -----------------------------------------------------------------------------------

Average::Average(at::ScalarType sum_dtype) : WeightedMean("Average", sum_dtype) {}

at::Tensor Average::values_of(const Batch& batch) const {
  require_absent(name(), "target", batch.target, name() + " reads input only");
  return values_1d(name(), batch, "values");
}

// --- Loss --------------------------------------------------------------------------------------

Loss::Loss(Kind kind, at::ScalarType sum_dtype) : WeightedMean("Loss", sum_dtype), kind_(kind) {}

Loss::Kind Loss::parse_kind(const std::string& metric, const std::string& text) {
  if (text == "per_sample") return Kind::PerSample;
  if (text == "cross_entropy") return Kind::CrossEntropy;
  if (text == "nll") return Kind::Nll;
  if (text == "binary_cross_entropy") return Kind::BinaryCrossEntropy;
  if (text == "binary_cross_entropy_with_logits") return Kind::BinaryCrossEntropyWithLogits;
  if (text == "mse") return Kind::Mse;
  if (text == "l1") return Kind::L1;
  throw InputError(metric, "loss",
                   "one of per_sample, cross_entropy, nll, binary_cross_entropy, "
                   "binary_cross_entropy_with_logits, mse, l1",
                   "\"" + text + "\"");
}

at::Tensor Loss::values_of(const Batch& batch) const {
  const std::string& m = name();
  switch (kind_) {
    case Kind::PerSample:
      require_absent(m, "target", batch.target, "loss per_sample reads the per-sample losses from input");
      return values_1d(m, batch, "per-sample losses");
    case Kind::CrossEntropy:
    case Kind::Nll: {
      require_defined(m, "input", batch.input, "class scores shaped [N, C]");
      require_defined(m, "target", batch.target, "labels shaped [N]");
      require_floating(m, "input", batch.input);
      require_dim(m, "input", batch.input, 2, "class scores shaped [N, C]");
      require_labels_dtype(m, "target", batch.target);
      if (batch.target.dim() != 1 || batch.target.size(0) != batch.input.size(0)) {
        throw InputError(m, "target", "labels shaped [" + std::to_string(batch.input.size(0)) + "]",
                         describe(batch.target));
      }
      require_in_range(m, "target", batch.target, 0, batch.input.size(1));
      const at::Tensor x = batch.input.to(at::kDouble);
      const at::Tensor picked = x.gather(1, batch.target.to(at::kLong).unsqueeze(1)).squeeze(1);
      if (kind_ == Kind::Nll) return -picked;
      return x.logsumexp(1) - picked;
    }
    case Kind::BinaryCrossEntropy:
    case Kind::BinaryCrossEntropyWithLogits: {
      const at::Tensor x = values_1d(m, batch, kind_ == Kind::BinaryCrossEntropy ? "probabilities" : "logits");
      const at::Tensor t = unit_target(m, batch);
      if (kind_ == Kind::BinaryCrossEntropyWithLogits) {
        return x.clamp_min(0) - x * t + at::log1p(at::exp(-x.abs()));
      }
      require_floating(m, "input", batch.input);
      require_between(m, "input", x, 0.0, 1.0);
      return -(t * x.log().clamp_min(-100.0) + (1.0 - t) * at::log1p(-x).clamp_min(-100.0));
    }
    case Kind::Mse:
    case Kind::L1: {
      require_defined(m, "input", batch.input, "predictions shaped [N, *]");
      require_defined(m, "target", batch.target, "targets shaped like input");
      require_floating(m, "input", batch.input);
      require_floating(m, "target", batch.target);
      if (batch.input.dim() < 1) throw InputError(m, "input", "predictions shaped [N, *]", describe(batch.input));
      require_same_shape(m, "target", batch.target, "input", batch.input);
      const at::Tensor e = batch.input.to(at::kDouble) - batch.target.to(at::kDouble);
      const at::Tensor per_element = kind_ == Kind::Mse ? e * e : e.abs();
      const std::int64_t n = e.size(0);
      if (n == 0) return at::zeros({0}, at::kDouble);
      return per_element.reshape({n, -1}).mean(1);
    }
  }
  throw std::logic_error("Loss: unknown kind");
}

// --- GeometricAverage --------------------------------------------------------------------------

GeometricAverage::GeometricAverage(at::ScalarType sum_dtype) : StatefulMetric("GeometricAverage") {
  add_state("log_sum", at::zeros({}, sum_dtype), Reduction::Sum);
  add_state("samples", zero_count(), Reduction::Sum);
}

void GeometricAverage::update_state(const Batch& batch) {
  require_absent(name(), "target", batch.target, name() + " reads input only");
  require_absent(name(), "weight", batch.weight, name() + " takes no sample weights");
  const at::Tensor v = values_1d(name(), batch, "values >= 0");
  require_at_least(name(), "input", v, 0.0, false);  // NaN passes: it propagates
  at::Tensor& sum = state("log_sum");
  sum += v.log().sum().to(sum.scalar_type());
  state("samples") += v.size(0);
}

Value GeometricAverage::compute_from(const StateValues& synced) const {
  const std::int64_t n = count_of(synced["samples"]);
  if (n == 0) throw NotComputableError(name(), "no samples on any rank");
  return std::exp(number_of(synced["log_sum"]) / static_cast<double>(n));
}

// --- RunningAverage ----------------------------------------------------------------------------

RunningAverage::RunningAverage(double alpha, at::ScalarType sum_dtype) : StatefulMetric("RunningAverage"), alpha_(alpha) {
  if (!(alpha_ > 0.0 && alpha_ <= 1.0)) throw InputError(name(), "alpha", "a number in (0, 1]", number_string(alpha_));
  add_state("step_bounds", at::zeros({2}, at::kLong), Reduction::Max);  // (steps, -steps)
  add_state("step_sums", at::zeros({0}, sum_dtype), Reduction::Sum);
  add_state("step_counts", at::zeros({0}, at::kLong), Reduction::Sum);
}

void RunningAverage::update_state(const Batch& batch) {
  require_absent(name(), "target", batch.target, name() + " reads input only");
  require_absent(name(), "weight", batch.weight, name() + " takes no sample weights");
  const at::Tensor v = values_1d(name(), batch, "values");
  at::Tensor& sums = state("step_sums");
  at::Tensor& counts = state("step_counts");
  sums = at::cat({sums, v.sum().view({1}).to(sums.scalar_type())});
  counts = at::cat({counts, at::full({1}, v.size(0), counts.options())});
  const std::int64_t steps = counts.size(0);
  state("step_bounds") = at::tensor({steps, -steps}, state("step_bounds").options());
}

std::vector<std::vector<std::string>> RunningAverage::sync_phases() const {
  return {{"step_bounds"}, {"step_sums", "step_counts"}};
}

void RunningAverage::check_phase(std::size_t phase, const StateValues& synced) const {
  if (phase != 0) return;
  const at::Tensor bounds = synced["step_bounds"].to(at::kCPU);
  const std::int64_t most = bounds[0].item<std::int64_t>(), fewest = -bounds[1].item<std::int64_t>();
  if (most != fewest) {
    throw SyncError(name(), "update() was called " + std::to_string(fewest) + " times on one rank and " +
                                std::to_string(most) + " times on another; every rank must call it once per "
                                "step (with an empty batch where it has no data for that step)");
  }
  if (most == 0) throw NotComputableError(name(), "no update() on any rank");
}

Value RunningAverage::compute_from(const StateValues& synced) const {
  const at::Tensor sums = synced["step_sums"].to(at::kCPU, at::kDouble);
  const at::Tensor counts = synced["step_counts"].to(at::kCPU);
  const auto s = sums.accessor<double, 1>();
  const auto c = counts.accessor<std::int64_t, 1>();
  bool started = false;
  double value = 0.0;
  for (std::int64_t t = 0; t < sums.size(0); ++t) {
    if (c[t] == 0) continue;  // no value anywhere at this step
    const double mean = s[t] / static_cast<double>(c[t]);
    value = started ? alpha_ * value + (1.0 - alpha_) * mean : mean;
    started = true;
  }
  if (!started) throw NotComputableError(name(), "no samples on any rank");
  return value;
}

}  // namespace distmetrics::metrics

// --- Registration in the reference registry (registry.h), next to the classes ------------

namespace distmetrics::metrics::detail {

void register_aggregation(MetricRegistry& registry) {
  registry.add({"Average", "aggregation", "weighted mean of values; input [N] numbers, weight optional [N] >= 0",
                {sum_dtype_param()},
                [](const nlohmann::json& p) { return std::make_unique<Average>(sum_dtype_of("Average", p)); }});
  registry.add({"Loss", "aggregation",
                "weighted mean of per-sample losses, given (input [N]) or computed from input and target; "
                "weight optional [N] >= 0",
                {param("loss", "string", nullptr,
                       "per_sample (input holds the losses), cross_entropy (logits [N,C], labels [N]), nll "
                       "(log-probabilities [N,C], labels [N]), binary_cross_entropy (probabilities [N], targets [N] "
                       "in [0,1]), binary_cross_entropy_with_logits (logits [N], targets [N]), mse or l1 ([N,*] "
                       "each, averaged per sample)",
                       {"per_sample", "cross_entropy", "nll", "binary_cross_entropy",
                        "binary_cross_entropy_with_logits", "mse", "l1"}),
                 sum_dtype_param()},
                [](const nlohmann::json& p) {
                  return std::make_unique<Loss>(Loss::parse_kind("Loss", p.at("loss").get<std::string>()),
                                                sum_dtype_of("Loss", p));
                }});
  registry.add({"GeometricAverage", "aggregation", "exp(mean(log v)); input [N] numbers >= 0", {sum_dtype_param()},
                [](const nlohmann::json& p) {
                  return std::make_unique<GeometricAverage>(sum_dtype_of("GeometricAverage", p));
                }});
  registry.add({"RunningAverage", "aggregation",
                "EMA over global steps of each step's mean (step t = the t-th update on every rank; every rank "
                "must update equally often); input [N] numbers, N may be 0",
                {param("alpha", "float", 0.98, "weight of the previous value, in (0, 1]"), sum_dtype_param()},
                [](const nlohmann::json& p) {
                  return std::make_unique<RunningAverage>(p.at("alpha").get<double>(), sum_dtype_of("RunningAverage", p));
                }});
}

}  // namespace distmetrics::metrics::detail
