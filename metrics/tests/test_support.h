// Shared by the metric tests: the committed reference cases (tools/reference/generate_reference.py)
// and value comparison.
#pragma once

#include <ATen/core/Tensor.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "distmetrics/metrics/batch.h"
#include "distmetrics/metrics/value.h"

namespace distmetrics::metrics::testing {

// metrics/tests/data/reference_values.json, parsed once.
const nlohmann::json& reference_document();
// The cases whose "metric" is `metric` (all cases when empty).
std::vector<nlohmann::json> reference_cases(const std::string& metric = "");
// The metric names the reference cases cover, sorted.
std::vector<std::string> reference_metric_names();

// A batch of these tensors (an undefined one: the batch has none), and tensors from plain values.
Batch batch(at::Tensor input, at::Tensor target = {}, at::Tensor weight = {});
at::Tensor doubles(std::vector<double> v);
at::Tensor longs(std::vector<std::int64_t> v);

at::Tensor tensor_from_json(const nlohmann::json& j);  // {"dtype", "shape", "values"}, dtype kept
Batch batch_from_json(const nlohmann::json& j);
std::vector<Batch> dataset(const std::string& name);   // the batches of a reference dataset

// Whether a reference case's dataset has any sample.
bool holds_samples(const nlohmann::json& reference_case);
// The collectives a sync issues: the plan, less the per-dtype all_gathers when no rank holds any
// gathered row (the communicator skips a dtype no rank holds anything of).
std::vector<std::string> expected_collectives(std::vector<std::string> plan, bool any_rank_holds_rows);

// Equal within |a - b| <= atol + rtol * |b| (NaN equals NaN, infinities must match); tensors must
// match in shape; named values key by key.
::testing::AssertionResult values_close(const Value& actual, const Value& expected, double rtol, double atol);

}  // namespace distmetrics::metrics::testing
