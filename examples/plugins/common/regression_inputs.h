// Input checks shared by the example plugins: a regression batch is `input` and `target`, both
// floating point and of the same shape [N, *]; every element is one sample; no weights.
#pragma once

#include <ATen/ATen.h>
#include <distmetrics/metrics/batch.h>
#include <distmetrics/metrics/errors.h>

#include <sstream>
#include <string>

namespace example_plugins {

inline std::string describe(const at::Tensor& t) {
  if (!t.defined()) return "nothing";
  std::ostringstream out;
  out << c10::toString(t.scalar_type()) << " " << t.sizes();
  return out.str();
}

// |input - target| of a checked batch, in float64, on `device`.
inline at::Tensor absolute_errors(const std::string& metric, const distmetrics::metrics::Batch& batch,
                                  const c10::Device& device) {
  using distmetrics::metrics::InputError;
  if (!batch.input.defined() || !at::isFloatingType(batch.input.scalar_type()))
    throw InputError(metric, "input", "a floating-point tensor [N, *]", describe(batch.input));
  if (!batch.target.defined() || !at::isFloatingType(batch.target.scalar_type()))
    throw InputError(metric, "target", "a floating-point tensor [N, *]", describe(batch.target));
  if (batch.input.sizes() != batch.target.sizes())
    throw InputError(metric, "target", "the shape of input " + describe(batch.input), describe(batch.target));
  if (batch.weight.defined()) throw InputError(metric, "weight", "no weights", describe(batch.weight));
  const auto options = at::TensorOptions().device(device).dtype(at::kDouble);
  return (batch.input.to(options) - batch.target.to(options)).abs();
}

}  // namespace example_plugins
