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

// The data the ranks of a variant of `dtype` get ("" or unknown: `data` as it is).
Dataset cast_to_input_dtype(const Dataset& data, const std::string& dtype);
// The data the single-process reference gets: the same values, in the generated dtypes.
Dataset rounded_through_input_dtype(const Dataset& data, const std::string& dtype);
// The scenario a variant of `dtype` is judged with: its tolerance widened to the dtype's.
Scenario judged_for_input_dtype(const Scenario& scenario, const std::string& dtype);

}  // namespace distmetrics::harness
