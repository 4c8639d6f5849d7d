// Turns a classification batch into predicted and true labels, after checking it whole.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

#include "distmetrics/metrics/batch.h"
#include "distmetrics/metrics/classification.h"

namespace distmetrics::metrics::detail {

// int64 labels on the batch's device. Binary and multiclass: pred and target are [M] (every
// element a sample). Multilabel: [N, num_classes] of 0/1.
struct DecodedLabels {
  at::Tensor pred;
  at::Tensor target;
  at::Tensor scores;  // multiclass with score input: [M, num_classes] float (for top-k); else undefined
};

DecodedLabels decode_labels(const std::string& metric, const ClassificationOptions& options, const Batch& batch);

// Constructor checks shared by the classification metrics (InputError on a bad value).
void check_options(const std::string& metric, const ClassificationOptions& options);

}  // namespace distmetrics::metrics::detail
