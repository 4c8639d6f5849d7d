#include "distmetrics/metrics/input_checks.h"

#include <ATen/ATen.h>

#include <cmath>
#include <sstream>

#include "distmetrics/metrics/errors.h"

namespace distmetrics::metrics::checks {
namespace {

// Position of the first true element of a bool tensor, as "[i, j]" (caller knows one exists).
std::string first_position(const at::Tensor& mask) {
  const at::Tensor index = mask.nonzero().select(0, 0).to(at::kCPU);
  std::vector<std::int64_t> pos(index.data_ptr<std::int64_t>(), index.data_ptr<std::int64_t>() + index.numel());
  return shape_string(pos);
}

}  // namespace

std::string number_string(double v) {
  std::ostringstream out;
  out.precision(10);
  out << v;
  return out.str();
}

std::string shape_string(at::IntArrayRef shape) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << "]";
  return out.str();
}

std::string describe(const at::Tensor& t) {
  if (!t.defined()) return "nothing";
  return runtime::dtype_name(t.scalar_type()) + " " + shape_string(t.sizes());
}

bool is_label_dtype(at::ScalarType type) { return at::isIntegralType(type, /*includeBool=*/true); }

void require_defined(const std::string& metric, const std::string& argument, const at::Tensor& t,
                     const std::string& expected) {
  if (!t.defined()) throw InputError(metric, argument, expected, "nothing");
}

void require_absent(const std::string& metric, const std::string& argument, const at::Tensor& t,
                    const std::string& why) {
  if (t.defined()) throw InputError(metric, argument, "nothing (" + why + ")", describe(t));
}

void require_floating(const std::string& metric, const std::string& argument, const at::Tensor& t) {
  if (!at::isFloatingType(t.scalar_type())) {
    throw InputError(metric, argument, "a floating-point tensor (float32 or float64)", describe(t));
  }
}

void require_labels_dtype(const std::string& metric, const std::string& argument, const at::Tensor& t) {
  if (!is_label_dtype(t.scalar_type())) {
    throw InputError(metric, argument, "integer labels (int64, int32, uint8 or bool)", describe(t));
  }
}

void require_dim(const std::string& metric, const std::string& argument, const at::Tensor& t,
                 std::int64_t dim, const std::string& layout) {
  if (t.dim() != dim) throw InputError(metric, argument, layout, describe(t));
}

void require_same_shape(const std::string& metric, const std::string& argument, const at::Tensor& t,
                        const std::string& other_argument, const at::Tensor& other) {
  if (!t.sizes().equals(other.sizes())) {
    throw InputError(metric, argument, "the shape of " + other_argument + " " + shape_string(other.sizes()),
                     describe(t));
  }
}

void require_no_nan(const std::string& metric, const std::string& argument, const at::Tensor& t) {
  if (!at::isFloatingType(t.scalar_type()) || t.numel() == 0) return;
  // One pass, no allocation: a NaN anywhere makes the sum NaN, so a sum that is not NaN proves
  // there is none. A NaN sum (a NaN, or inf - inf) falls through to the exact search.
  if (!std::isnan(t.sum().item<double>())) return;
  const at::Tensor nan = at::isnan(t);
  if (nan.any().item<bool>()) {
    throw InputError(metric, argument, "no NaN", "NaN at " + first_position(nan));
  }
}

void require_in_range(const std::string& metric, const std::string& argument, const at::Tensor& t,
                      std::int64_t low, std::int64_t high) {
  if (t.numel() == 0) return;
  // One pass, no allocation: the smallest and the largest value decide. Only a batch that fails
  // pays for finding the first offending position.
  if (at::isIntegralType(t.scalar_type(), /*includeBool=*/false)) {
    const auto [smallest, largest] = at::aminmax(t);
    if (smallest.item<std::int64_t>() >= low && largest.item<std::int64_t>() < high) return;
  } else if (t.scalar_type() == at::kBool && low <= 0 && high >= 2) {
    return;
  }
  const at::Tensor values = t.to(at::kLong);
  const at::Tensor bad = (values < low).logical_or(values >= high);
  if (bad.any().item<bool>()) {
    const std::string pos = first_position(bad);
    const std::int64_t value = values.masked_select(bad).select(0, 0).item<std::int64_t>();
    throw InputError(metric, argument,
                     "values in [" + std::to_string(low) + ", " + std::to_string(high) + ")",
                     std::to_string(value) + " at " + pos);
  }
}

namespace {

template <typename From>
bool copy_to_float64_finding_nan(const at::Tensor& from, at::Tensor& to) {
  const From* in = from.data_ptr<From>();
  double* out = to.data_ptr<double>();
  bool nan = false;
  const std::int64_t n = from.numel();
  for (std::int64_t i = 0; i < n; ++i) {
    const double v = static_cast<double>(in[i]);
    out[i] = v;
    nan |= v != v;
  }
  return nan;
}

}  // namespace

void copy_float64_without_nan(const std::string& metric, const std::string& argument, const at::Tensor& t,
                              const at::Tensor& out) {
  const at::ScalarType type = t.scalar_type();
  if (t.device().is_cpu() && out.device().is_cpu() && t.is_contiguous() && out.is_contiguous() &&
      out.scalar_type() == at::kDouble && out.numel() == t.numel() && (type == at::kFloat || type == at::kDouble)) {
    at::Tensor copy = out;
    const bool nan = type == at::kFloat ? copy_to_float64_finding_nan<float>(t, copy)
                                        : copy_to_float64_finding_nan<double>(t, copy);
    if (nan) require_no_nan(metric, argument, t);  // throws, naming the first NaN's position
    return;
  }
  require_no_nan(metric, argument, t);
  out.copy_(t.view(out.sizes()));
}

void copy_int64_in_range(const std::string& metric, const std::string& argument, const at::Tensor& t,
                         std::int64_t low, std::int64_t high, const at::Tensor& out) {
  if (t.device().is_cpu() && out.device().is_cpu() && t.is_contiguous() && out.is_contiguous() &&
      t.scalar_type() == at::kLong && out.scalar_type() == at::kLong && out.numel() == t.numel()) {
    const std::int64_t* in = t.data_ptr<std::int64_t>();
    std::int64_t* to = out.data_ptr<std::int64_t>();
    const std::int64_t n = t.numel();
    if (low == 0) {
      // The bitwise or of all values: >= 0 and < high proves every value in [0, high) (each is
      // between 0 and the or), and it vectorizes where a 64-bit min/max does not (SSE2).
      // Otherwise (a negative value, or values whose bits reach past high) the exact check decides.
      std::int64_t bits = 0;
      for (std::int64_t i = 0; i < n; ++i) {
        to[i] = in[i];
        bits |= in[i];
      }
      if (bits < 0 || bits >= high) require_in_range(metric, argument, t, low, high);  // throws, naming the first
      return;
    }
    std::int64_t smallest = low, largest = low;  // an empty tensor passes
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t v = in[i];
      to[i] = v;
      smallest = v < smallest ? v : smallest;
      largest = v > largest ? v : largest;
    }
    if (smallest < low || largest >= high) require_in_range(metric, argument, t, low, high);  // throws, naming the first
    return;
  }
  require_in_range(metric, argument, t, low, high);
  out.copy_(t.view(out.sizes()));
}

void require_at_least(const std::string& metric, const std::string& argument, const at::Tensor& t,
                      double low, bool strict) {
  if (t.numel() == 0) return;
  const at::Tensor bad = strict ? (t <= low) : (t < low);
  if (bad.any().item<bool>()) {
    const std::string pos = first_position(bad);
    const double value = t.masked_select(bad).select(0, 0).item<double>();
    throw InputError(metric, argument, std::string("values ") + (strict ? "> " : ">= ") + number_string(low),
                     number_string(value) + " at " + pos);
  }
}

void require_between(const std::string& metric, const std::string& argument, const at::Tensor& t,
                     double low, double high) {
  if (t.numel() == 0) return;
  const at::Tensor bad = (t < low).logical_or(t > high);
  if (bad.any().item<bool>()) {
    const std::string pos = first_position(bad);
    const double value = t.masked_select(bad).select(0, 0).item<double>();
    throw InputError(metric, argument, "values in [" + number_string(low) + ", " + number_string(high) + "]",
                     number_string(value) + " at " + pos);
  }
}

}  // namespace distmetrics::metrics::checks
