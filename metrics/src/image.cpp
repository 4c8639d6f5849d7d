#include "distmetrics/metrics/image.h"

#include <ATen/ATen.h>

#include <cmath>

#include "distmetrics/metrics/errors.h"
#include "distmetrics/metrics/input_checks.h"
#include "reference_metrics.h"

namespace distmetrics::metrics {

using namespace checks;

PSNR::PSNR(double data_range, at::ScalarType sum_dtype) : StatefulMetric("PSNR"), data_range_(data_range) {
  if (!(data_range_ > 0.0) || std::isinf(data_range_)) {
    throw InputError(name(), "data_range", "a finite number > 0", number_string(data_range_));
  }
  add_state("psnr_sum", at::zeros({}, sum_dtype), Reduction::Sum);
  add_state("images", at::zeros({}, at::kLong), Reduction::Sum);
}

void PSNR::update_state(const Batch& batch) {
  const std::string& m = name();
  require_defined(m, "input", batch.input, "images shaped [N, *]");
  require_defined(m, "target", batch.target, "images shaped like input");
  require_absent(m, "weight", batch.weight, m + " takes no sample weights");
  require_floating(m, "input", batch.input);
  require_floating(m, "target", batch.target);
  if (batch.input.dim() < 2) throw InputError(m, "input", "images shaped [N, *] (at least 2 dimensions)", describe(batch.input));
  require_same_shape(m, "target", batch.target, "input", batch.input);
  const std::int64_t n = batch.input.size(0);
  if (n > 0) {
    const at::Tensor e = (batch.input.to(at::kDouble) - batch.target.to(at::kDouble)).reshape({n, -1});
    const at::Tensor mse = (e * e).mean(1);
    const at::Tensor psnr = 10.0 * at::log10(data_range_ * data_range_ / mse);
    at::Tensor& sum = state("psnr_sum");
    sum += psnr.sum().to(sum.scalar_type());
  }
  state("images") += n;
}

Value PSNR::compute_from(const StateValues& synced) const {
  const std::int64_t n = synced["images"].to(at::kCPU).item<std::int64_t>();
  if (n == 0) throw NotComputableError(name(), "no images on any rank");
  return synced["psnr_sum"].to(at::kCPU, at::kDouble).item<double>() / static_cast<double>(n);
}

}  // namespace distmetrics::metrics

// --- Registration in the reference registry (registry.h), next to the classes ------------

namespace distmetrics::metrics::detail {

void register_image(MetricRegistry& registry) {
  registry.add({"PSNR", "image",
                "mean over images of 10 log10(data_range^2 / MSE_image); input and target float images [N,*]",
                {param("data_range", "float", nullptr, "the value range of the images (1.0 for [0,1], 255 for 8-bit), > 0"),
                 sum_dtype_param()},
                [](const nlohmann::json& p) {
                  return std::make_unique<PSNR>(p.at("data_range").get<double>(), sum_dtype_of("PSNR", p));
                }});
}

}  // namespace distmetrics::metrics::detail
