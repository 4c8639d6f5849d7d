// Input dtypes, a variant axis (`[variants] dtypes`): ONE table, one descriptor per dtype. A
// variant of dtype D feeds its ranks the generated data with every tensor of D's kind (floating
// point or integer) cast to D, while the single-process reference is fed the same values (rounded
// through D) in the generated dtype: a metric that keeps its sums or counts in the input's dtype
// (float16 counts stop at 2048) differs from it by more than D's tolerance. Tolerances widen to
// D's (the larger of the scenario's and the table's). docs/scenarios.md lists exactly these names.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

#include "distmetrics/harness/data.h"
#include "distmetrics/harness/scenario.h"

namespace distmetrics::harness {

struct InputDtype {
  std::string name;          // "float16"
  at::ScalarType type;
  bool floating = true;      // casts the floating-point tensors (else the integer ones: labels)
  double rtol = 0, atol = 0; // the least tolerance its variants are judged with
  std::string why;           // where the tolerance comes from
};

const std::vector<InputDtype>& input_dtypes();
const InputDtype* find_input_dtype(const std::string& name);
std::vector<std::string> input_dtype_names();

// One tensor as a variant of `dtype` has it: cast to it (and back to its own dtype when `back`)
// when it is of the dtype's kind, else as it is ("" or unknown: as it is).
at::Tensor to_input_dtype(const at::Tensor& t, const std::string& dtype, bool back);
// The data the ranks of a variant of `dtype` get ("" or unknown: `data` as it is). Lazy data
// (data.h) stay lazy: their rows are cast as they are made.
Dataset cast_to_input_dtype(const Dataset& data, const std::string& dtype);
// The data the single-process reference gets: the same values, in the generated dtypes.
Dataset rounded_through_input_dtype(const Dataset& data, const std::string& dtype);
// The scenario a variant of `dtype` is judged with: its tolerance widened to the dtype's.
Scenario judged_for_input_dtype(const Scenario& scenario, const std::string& dtype);

// "float32" when every floating number in `values` (Value JSON, nested dicts and lists too) is a
// float32 number and some need more bits than a short binary fraction (0.75 is exact in any
// precision); "" otherwise (float64, or no evidence). Values reach the harness as float64, so
// the numbers themselves are the evidence of the precision a metric computed in.
std::string observed_float_dtype(const std::vector<const nlohmann::json*>& values);

// A tolerance for values computed in a lower precision than float64: `tolerance` widened to the
// table's row of observed_float_dtype(values), and of `variant_dtype`. A float32 library's result is at best the
// float32 rounding of the exact value, so a golden value written to 1e-12 cannot judge it.
// `why`, when given, is set to what widened it ("the result is float32 (unit roundoff 6e-8)"),
// or left empty.
Tolerance widened_for_dtypes(const Tolerance& tolerance, const std::vector<const nlohmann::json*>& values,
                             const std::string& variant_dtype = "", std::string* why = nullptr);

}  // namespace distmetrics::harness
