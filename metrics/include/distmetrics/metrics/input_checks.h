// Input checks for update(): each throws InputError naming the metric, the argument, what was
// expected and what came. Metrics call them on the whole batch before changing any state.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>

#include "distmetrics/runtime/comm.h"

namespace distmetrics::metrics::checks {

using runtime::dtype_name;                         // "float64", "int64", "bool", ...
std::string shape_string(at::IntArrayRef shape);   // "[8, 5]"
std::string describe(const at::Tensor& t);         // "float32 [8, 5]", or "nothing" when undefined
std::string number_string(double v);               // shortest exact-enough form: "0.5", "1e-06", "nan"

bool is_label_dtype(at::ScalarType type);          // an integer type or bool

// `t` must be given.
void require_defined(const std::string& metric, const std::string& argument, const at::Tensor& t,
                     const std::string& expected);
// `t` must not be given (the metric does not read it: silently ignoring it would hide a mistake).
void require_absent(const std::string& metric, const std::string& argument, const at::Tensor& t,
                    const std::string& why);
void require_floating(const std::string& metric, const std::string& argument, const at::Tensor& t);
void require_labels_dtype(const std::string& metric, const std::string& argument, const at::Tensor& t);
void require_dim(const std::string& metric, const std::string& argument, const at::Tensor& t,
                 std::int64_t dim, const std::string& layout);
void require_same_shape(const std::string& metric, const std::string& argument, const at::Tensor& t,
                        const std::string& other_argument, const at::Tensor& other);
// No NaN anywhere in `t` (floating tensors only; others pass).
void require_no_nan(const std::string& metric, const std::string& argument, const at::Tensor& t);
// Every value in [low, high) (integer or bool tensors).
void require_in_range(const std::string& metric, const std::string& argument, const at::Tensor& t,
                      std::int64_t low, std::int64_t high);
// Checks and copies in one pass, for metrics that keep their own copy of every batch (epoch
// metrics): the same checks and errors as require_no_nan / require_in_range, writing `t` into
// `out` (float64, or int64; its shape; e.g. rows from StatefulMetric::reserve_rows). CPU tensors
// of the common dtypes (float32/float64 scores, int64 labels) are read once; others take the
// checks, then the copy. When a check throws, `out` may hold part of the batch.
void copy_float64_without_nan(const std::string& metric, const std::string& argument, const at::Tensor& t,
                              const at::Tensor& out);
void copy_int64_in_range(const std::string& metric, const std::string& argument, const at::Tensor& t,
                         std::int64_t low, std::int64_t high, const at::Tensor& out);
// Every value in [low, high] (NaN passes: callers that reject NaN check it first).
void require_between(const std::string& metric, const std::string& argument, const at::Tensor& t,
                     double low, double high);
// Every value >= low (or > low when strict).
void require_at_least(const std::string& metric, const std::string& argument, const at::Tensor& t,
                      double low, bool strict);

}  // namespace distmetrics::metrics::checks
