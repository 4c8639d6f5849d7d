// Aggregation metrics: Average, Loss, GeometricAverage, RunningAverage.
//
// Sums are accumulated in `sum_dtype` (float64 by default, float32 on request), counts in int64.
// NaN values (or per-sample losses) propagate: the result is NaN on every rank. No samples on any
// rank: NotComputableError.
#pragma once

#include <ATen/core/ScalarType.h>

#include <string>

#include "distmetrics/metrics/stateful_metric.h"

namespace distmetrics::metrics {

// A weighted mean of per-sample values: sum(w * v) / sum(w), w = 1 for samples without weights.
// Batch: weight optional, [N] floating point, >= 0 and not NaN (InputError otherwise).
// States: value_sum, weight_sum (sum_dtype, SUM; weight_sum holds given weights only),
// unweighted_samples, samples (int64, SUM; unweighted samples are counted exactly, whatever the
// sum_dtype): two collectives per compute. Weights summing to 0: NotComputableError.
class WeightedMean : public StatefulMetric {
 protected:
  WeightedMean(std::string name, at::ScalarType sum_dtype);
  void update_state(const Batch& batch) override;
  Value compute_from(const StateValues& synced) const override;
  // The per-sample values of a batch ([N], float64), after checking the batch whole.
  virtual at::Tensor values_of(const Batch& batch) const = 0;
};

// The mean of the values. Batch: input [N] numbers (any real dtype); target: not read.
class Average : public WeightedMean {
 public:
  explicit Average(at::ScalarType sum_dtype = at::kDouble);

 protected:
  at::Tensor values_of(const Batch& batch) const override;
};

// The (weighted) mean of per-sample losses, computed from predictions and targets or given:
//   per_sample:   input [N] per-sample losses; no target.
//   cross_entropy: input [N, C] logits, target [N] labels in [0, C):  logsumexp(x) - x[t].
//   nll:          input [N, C] log-probabilities, target [N] labels:  -x[t].
//   binary_cross_entropy: input [N] probabilities in [0, 1], target [N] in [0, 1]:
//                 -(t log p + (1 - t) log(1 - p)), each log clamped at -100 (as torch.nn.BCELoss).
//   binary_cross_entropy_with_logits: input [N] logits, target [N] in [0, 1]:
//                 max(x, 0) - x t + log(1 + exp(-|x|)).
//   mse, l1:      input [N, *], target [N, *]: per-sample mean of (x - y)^2 or |x - y|.
// Targets may be integer or floating. NaN inputs propagate.
class Loss : public WeightedMean {
 public:
  enum class Kind { PerSample, CrossEntropy, Nll, BinaryCrossEntropy, BinaryCrossEntropyWithLogits, Mse, L1 };
  explicit Loss(Kind kind, at::ScalarType sum_dtype = at::kDouble);
  static Kind parse_kind(const std::string& metric, const std::string& text);

 protected:
  at::Tensor values_of(const Batch& batch) const override;

 private:
  Kind kind_;
};

// exp(mean(log v)). Batch: input [N] numbers >= 0 (a negative value is an InputError; a 0 makes
// the result 0). States: log_sum (sum_dtype, SUM), samples (int64, SUM): two collectives.
class GeometricAverage : public StatefulMetric {
 public:
  explicit GeometricAverage(at::ScalarType sum_dtype = at::kDouble);

 protected:
  void update_state(const Batch& batch) override;
  Value compute_from(const StateValues& synced) const override;
};

// An exponential moving average over steps: v_1 = m_1, v_t = alpha * v_{t-1} + (1 - alpha) * m_t,
// where m_t is the mean of the values of step t. Batch: input [N] numbers (N may be 0).
//
// Distributed design: an EMA over each rank's local batches cannot be combined across ranks, so
// update() stays local and appends the batch's (sum, count) to a per-step history; compute()
// sums the histories across ranks and applies the EMA over the GLOBAL steps, step t being the
// t-th update() on every rank. m_t is the mean of the union of the ranks' t-th batches, so a
// world-size-N run equals a single-process run whose t-th batch is that union (the scenario
// engine's single_process = "per_step"). Steps with no value on any rank are skipped.
//
// This demands that every rank call update() the same number of times (a rank with no data for
// a step passes an empty batch). compute() first syncs the step counts (one MAX collective over
// (steps, -steps): the largest and the smallest count), and when they differ raises SyncError on
// every rank together, naming both counts, before the histories' collectives.
// States: step_bounds (int64 [2], MAX), step_sums (sum_dtype [T], SUM), step_counts (int64 [T],
// SUM): three collectives per compute, in two phases.
class RunningAverage : public StatefulMetric {
 public:
  explicit RunningAverage(double alpha = 0.98, at::ScalarType sum_dtype = at::kDouble);

 protected:
  void update_state(const Batch& batch) override;
  Value compute_from(const StateValues& synced) const override;
  std::vector<std::vector<std::string>> sync_phases() const override;
  void check_phase(std::size_t phase, const StateValues& synced_so_far) const override;

 private:
  double alpha_;
};

}  // namespace distmetrics::metrics
