// Conversions the metric families share (one copy, not one per source: a unity build compiles
// several families in one translation unit): a scalar state's count or number on the CPU, an
// element-wise division with a fallback, zero counts to start a state from.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

namespace distmetrics::metrics::detail {

inline std::int64_t count_of(const at::Tensor& t) { return t.to(at::kCPU).item<std::int64_t>(); }
inline double number_of(const at::Tensor& t) { return t.to(at::kCPU, at::kDouble).item<double>(); }
// A count state: a scalar, or n counts (one per class).
inline at::Tensor zero_count(std::int64_t n = -1) {
  return n < 0 ? at::zeros({}, at::kLong) : at::zeros({n}, at::kLong);
}

// Element-wise num / den, with `fallback` where den == 0.
inline at::Tensor divide_or(const at::Tensor& num, const at::Tensor& den, double fallback) {
  const at::Tensor positive = den.gt(0);
  return at::where(positive, num / at::where(positive, den, at::ones_like(den)), at::full_like(num, fallback));
}

}  // namespace distmetrics::metrics::detail
