// Batch: the input of one update(). Each metric's header says which fields it reads and what
// shapes, dtypes and value ranges it accepts.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>

namespace distmetrics::metrics {

struct Batch {
  at::Tensor input;   // predictions, scores, logits, values (rows are samples)
  at::Tensor target;  // labels or targets; undefined for metrics that take none
  at::Tensor weight;  // optional per-sample weights; undefined when absent
  // Samples that are not tensors (lists of dicts of boxes, strings; docs/scenarios.md,
  // "Structured data"), which only Python metrics take: `input` then holds each sample's index
  // (int64 [N]) into the samples saved in this file, and target and weight are undefined. Empty
  // for tensor data.
  std::string structured_file;

  // Number of samples (rows of input); 0 for an undefined input.
  std::int64_t size() const { return input.defined() ? (input.dim() == 0 ? 1 : input.size(0)) : 0; }
};

}  // namespace distmetrics::metrics
