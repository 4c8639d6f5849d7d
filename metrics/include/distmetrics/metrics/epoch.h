// Epoch metrics: keep every (score, target) pair and compute on all of them at once. ROC-AUC and
// average precision, or any function of the whole epoch.
//
// Inputs (Batch fields): input [N] scores (float32/float64, no NaN: InputError), target [N]
// binary labels in {0, 1} (integer or bool). weight: not read; giving one is an InputError.
//
// States: scores (float64 rows, GATHER), targets (int64 rows, GATHER). Each rank may hold any
// number of rows, zero included. A compute issues one shape exchange plus one all_gather per dtype
// (float64 and int64: three collectives; a dtype no rank holds any row of is skipped). The
// gathered rows are in rank order; the results below do not depend on the order.
// No samples on any rank: NotComputableError.
#pragma once

#include <functional>
#include <string>

#include "distmetrics/metrics/stateful_metric.h"

namespace distmetrics::metrics {

class EpochMetric : public StatefulMetric {
 public:
  // scores [n] float64 and targets [n] int64 of the whole epoch (all ranks), on the CPU, n > 0.
  using EpochFn = std::function<Value(const at::Tensor& scores, const at::Tensor& targets)>;
  EpochMetric(std::string name, EpochFn fn);

 protected:
  void update_state(const Batch& batch) override;
  Value compute_from(const StateValues& synced) const override;

 private:
  EpochFn fn_;
};

// Area under the ROC curve, as scikit-learn's roc_auc_score: the trapezoidal area under the
// curve whose points are the distinct score thresholds, so tied scores form one step (a tie
// between a positive and a negative counts one half). Both classes must occur somewhere:
// NotComputableError otherwise (scikit-learn raises ValueError).
class RocAuc : public EpochMetric {
 public:
  RocAuc();
};

// Average precision, as scikit-learn's average_precision_score: sum over the distinct score
// thresholds, from the highest, of (R_k - R_{k-1}) * P_k. No positive target anywhere:
// NotComputableError (undefined; scikit-learn 1.2 returns NaN with a warning).
class AveragePrecision : public EpochMetric {
 public:
  AveragePrecision();
};

// The functions behind RocAuc and AveragePrecision, on float64 scores and int64 0/1 targets.
double roc_auc(const at::Tensor& scores, const at::Tensor& targets);
double average_precision(const at::Tensor& scores, const at::Tensor& targets);

}  // namespace distmetrics::metrics
