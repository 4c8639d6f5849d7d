// The input dtype table (input_dtype.h).
#include "distmetrics/harness/input_dtype.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>

namespace distmetrics::harness {

const std::vector<InputDtype>& input_dtypes() {
  // Float tolerances: about twice the dtype's unit roundoff, the error of one rounding of each
  // element before a correct metric widens it (float16 2^-11, bfloat16 2^-8, float32 2^-24).
  static const std::vector<InputDtype> table = {
      {"float16", at::kHalf, true, 1e-3, 1e-5, "unit roundoff 4.9e-4"},
      {"bfloat16", at::kBFloat16, true, 8e-3, 1e-4, "unit roundoff 3.9e-3"},
      {"float32", at::kFloat, true, 1e-6, 1e-9, "unit roundoff 6e-8"},
      {"float64", at::kDouble, true, 0, 0, "the scenario's tolerance"},
      {"int32", at::kInt, false, 0, 0, "labels: exact"},
      {"int64", at::kLong, false, 0, 0, "labels: exact"},
  };
  return table;
}

const InputDtype* find_input_dtype(const std::string& name) {
  for (const auto& d : input_dtypes())
    if (d.name == name) return &d;
  return nullptr;
}

std::vector<std::string> input_dtype_names() {
  std::vector<std::string> out;
  for (const auto& d : input_dtypes()) out.push_back(d.name);
  return out;
}

namespace {

at::Tensor cast(const at::Tensor& t, const InputDtype& d, bool back) {
  if (!t.defined()) return t;
  if ((d.floating && !t.is_floating_point()) || (!d.floating && t.is_floating_point())) return t;
  const at::Tensor cast = t.to(d.type);
  return back ? cast.to(t.scalar_type()) : cast;
}

Dataset convert(const Dataset& data, const std::string& dtype, bool back) {
  const auto* d = find_input_dtype(dtype);
  if (!d) return data;
  Dataset out = data;
  if (data.is_lazy()) {  // its rows are cast as rows() makes them
    if (!data.lazy_dtype.empty())
      throw std::logic_error("lazy data already cast to " + data.lazy_dtype + " cannot be cast to " + dtype + " as well");
    out.lazy_dtype = dtype;
    out.lazy_round_back = back;
    return out;
  }
  out.input = cast(data.input, *d, back);
  out.target = cast(data.target, *d, back);
  out.weight = cast(data.weight, *d, back);
  return out;
}

}  // namespace

at::Tensor to_input_dtype(const at::Tensor& t, const std::string& dtype, bool back) {
  const auto* d = find_input_dtype(dtype);
  return d ? cast(t, *d, back) : t;
}

Dataset cast_to_input_dtype(const Dataset& data, const std::string& dtype) { return convert(data, dtype, false); }
Dataset rounded_through_input_dtype(const Dataset& data, const std::string& dtype) { return convert(data, dtype, true); }

Scenario judged_for_input_dtype(const Scenario& scenario, const std::string& dtype) {
  Scenario out = scenario;
  if (const auto* d = find_input_dtype(dtype)) {
    out.tolerance.rtol = std::max(out.tolerance.rtol, d->rtol);
    out.tolerance.atol = std::max(out.tolerance.atol, d->atol);
  }
  return out;
}

namespace {

// Significant bits of a double's mantissa: a float32 result widened to double needs at most 24, a
// float64 result almost always more. 0 for a whole number (a count says nothing of precision).
int significant_bits(double v) {
  if (!std::isfinite(v) || v == std::floor(v)) return 0;
  int exponent = 0;
  const double mantissa = std::frexp(std::fabs(v), &exponent);  // [0.5, 1)
  auto bits = static_cast<std::uint64_t>(std::ldexp(mantissa, 53));
  int trailing = 0;
  while (trailing < 53 && (bits & 1u) == 0) {
    bits >>= 1;
    ++trailing;
  }
  return 53 - trailing;
}

double leaf_number(const nlohmann::json& v, bool& ok) {
  ok = v.is_number();
  return ok ? v.get<double>() : 0.0;
}

// The most significant bits any floating leaf of a Value JSON needs (integer tensors left out).
void widest_mantissa(const nlohmann::json& value, int& bits) {
  bool ok = false;
  if (value.is_object() && value.contains("dtype") && value.contains("values")) {
    const auto dtype = value.at("dtype");
    if (dtype == "int64" || dtype == "int32" || dtype == "bool") return;
    for (const auto& leaf : value.at("values")) {
      const double x = leaf_number(leaf, ok);
      if (ok) bits = std::max(bits, significant_bits(x));
    }
    return;
  }
  const double x = leaf_number(value, ok);
  if (ok) {
    bits = std::max(bits, significant_bits(x));
    return;
  }
  if (value.is_object() || value.is_array())
    for (const auto& item : value) widest_mantissa(item, bits);
}

}  // namespace

std::string observed_float_dtype(const std::vector<const nlohmann::json*>& values) {
  // Values reach the harness as float64 (metrics::Value), so the precision a metric computed in
  // shows in the values themselves: more than 11 significant bits (not a short binary fraction
  // such as 0.75, exact in any precision) and at most 24 is a float32 result.
  int bits = 0;
  for (const auto* v : values)
    if (v) widest_mantissa(*v, bits);
  return bits > 11 && bits <= 24 ? "float32" : "";
}

Tolerance widened_for_dtypes(const Tolerance& tolerance, const std::vector<const nlohmann::json*>& values,
                             const std::string& variant_dtype, std::string* why) {
  const InputDtype* observed = find_input_dtype(observed_float_dtype(values));
  const InputDtype* fed = find_input_dtype(variant_dtype);
  if (fed && !fed->floating) fed = nullptr;
  Tolerance out = tolerance;
  std::string said;
  for (const auto& [d, what] : {std::make_pair(observed, "the result is "), std::make_pair(fed, "the input is ")}) {
    if (!d || (d->rtol <= out.rtol && d->atol <= out.atol)) continue;
    out.rtol = std::max(out.rtol, d->rtol);
    out.atol = std::max(out.atol, d->atol);
    said = what + d->name + " (" + d->why + ")";
  }
  if (why) *why = said;
  return out;
}

}  // namespace distmetrics::harness
