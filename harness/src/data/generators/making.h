// What the data generators share (harness/src/data/generators/<name>.cpp): their counter-based
// streams, tensors made from the numbers they draw, class and score helpers.
#pragma once

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "../counter_rng.h"
#include "distmetrics/harness/data.h"
#include "../../unity_id.h"

namespace distmetrics::harness::generators {

using detail::CounterRng;
using Rows = std::vector<std::int64_t>;

// Streams: one per purpose, so adding a draw for one purpose never shifts another.
constexpr std::uint64_t kTargetStream = 1, kNoiseStream = 2, kWeightStream = 3, kOutlierStream = 4, kQueryStream = 5,
                        kGradeStream = 6;

// A declared parameter, with its range and the values explore draws.
runtime::ParamDecl param(std::string name, std::string type, std::string description, nlohmann::json default_value,
                         std::vector<std::string> choices = {});
runtime::ParamDecl ranged(runtime::ParamDecl decl, double min, double max);
runtime::ParamDecl drawn(runtime::ParamDecl decl, std::vector<nlohmann::json> draws, bool either_sign = false);
// "how far the true class's score sits above the noise (larger: easier)".
runtime::ParamDecl separation(double default_value);
// `num_classes` (>= 2) of classes C; `num_labels` (>= 1).
runtime::ParamDecl num_classes();
// "relative frequency of each class", checked against num_classes (check_class_weights).
runtime::ParamDecl class_weights(const std::string& description);
void check_class_weights(const std::string& owner, const nlohmann::json& params);
// The generator's own parameters, then the ones every generator takes.
std::vector<runtime::ParamDecl> with_common(std::vector<runtime::ParamDecl> params);

std::int64_t count_of(const Rows& rows);
at::ScalarType float_type(const std::string& dtype);
at::Tensor float_tensor(const std::vector<double>& values, std::vector<std::int64_t> shape, at::ScalarType type);
at::Tensor long_tensor(const std::vector<std::int64_t>& values, std::vector<std::int64_t> shape);
std::vector<std::int64_t> row_shape(std::int64_t n, std::int64_t dims);

std::vector<double> class_cdf(const nlohmann::json& weights, std::int64_t classes);
std::int64_t draw_class(const std::vector<double>& cdf, double u);
double sigmoid(double x);

// Per-sample score rows (n rows of k logits).
struct Scores {
  std::vector<double> logits;  // n * k
  std::int64_t n, k;
};
// Multiclass-style outputs: the logits, their softmax probabilities or log-probabilities (a -inf logit
// gives probability 0), or argmax labels.
at::Tensor class_output(const Scores& s, const std::string& output, std::vector<std::int64_t> shape,
                        std::vector<std::int64_t> label_shape, at::ScalarType type);
// Element-wise outputs (binary, multilabel): logits, sigmoid probabilities, or 0/1 labels.
at::Tensor elementwise_output(const std::vector<double>& logits, const std::string& output,
                              std::vector<std::int64_t> shape, at::ScalarType type);

// An integer parameter at least 1 (for sizes), or `fallback` when it is not one.
std::int64_t size_param(const nlohmann::json& params, const char* name, std::int64_t fallback);

}  // namespace distmetrics::harness::generators

namespace distmetrics::harness::generators {
// Magnitudes at the ends of what floating point holds well, and the degenerate ones: what explore
// draws for a float that declares no draws of its own.
const std::vector<nlohmann::json>& magnitudes();
}  // namespace distmetrics::harness::generators
