// The input dtype table (input_dtype.h).
#include "distmetrics/harness/input_dtype.h"

#include <ATen/ATen.h>

#include <algorithm>

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
  out.input = cast(data.input, *d, back);
  out.target = cast(data.target, *d, back);
  out.weight = cast(data.weight, *d, back);
  return out;
}

}  // namespace

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

}  // namespace distmetrics::harness
