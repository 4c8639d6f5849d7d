// Regression metrics: MeanAbsoluteError, MeanSquaredError, RootMeanSquaredError,
// MaximumAbsoluteError, MeanPairwiseDistance, R2Score, PearsonCorrelation.
//
// Inputs (Batch fields): input = predictions, target = true values, both floating point
// (float32 or float64) and of the same shape:
//   MAE, MSE, RMSE, MaxAE:  [N, *]; every element is one sample (the mean is over all elements,
//                           as scikit-learn's uniform average over outputs).
//   MeanPairwiseDistance:   [N, D]; every row is one sample.
//   R2Score, Pearson:       [N].
//   weight: not read; giving one is an InputError.
// Sums are accumulated in `sum_dtype` (float64 by default; float32 on request, e.g. to study
// precision loss), counts in int64.
// NaN in input or target propagates: the result is NaN on every rank (MaxAE counts NaNs in a SUM
// state, because a MAX reduction may drop a NaN depending on the order of the ranks).
// No samples on any rank: NotComputableError.
#pragma once

#include <ATen/core/ScalarType.h>

#include <string>

#include "distmetrics/metrics/stateful_metric.h"

namespace distmetrics::metrics {

// float64 or float32 (InputError otherwise), for the `sum_dtype` parameter.
at::ScalarType parse_sum_dtype(const std::string& metric, const std::string& text);

// Mean of |e| or e^2 over every element (RMSE: the square root of the MSE), e = input - target.
// States: error_sum (sum_dtype, SUM), elements (int64, SUM): two collectives per compute.
class MeanError : public StatefulMetric {
 public:
  enum class Kind { Absolute, Squared, RootSquared };

 protected:
  MeanError(std::string name, Kind kind, at::ScalarType sum_dtype);
  void update_state(const Batch& batch) override;
  Value compute_from(const StateValues& synced) const override;

 private:
  Kind kind_;
};

class MeanAbsoluteError : public MeanError {
 public:
  explicit MeanAbsoluteError(at::ScalarType sum_dtype = at::kDouble);
};
class MeanSquaredError : public MeanError {
 public:
  explicit MeanSquaredError(at::ScalarType sum_dtype = at::kDouble);
};
class RootMeanSquaredError : public MeanError {
 public:
  explicit RootMeanSquaredError(at::ScalarType sum_dtype = at::kDouble);
};

// max |input - target| over every element.
// States: max_abs_error (sum_dtype, MAX, starts at -inf), elements and nans (int64, SUM): two
// collectives per compute.
class MaximumAbsoluteError : public StatefulMetric {
 public:
  explicit MaximumAbsoluteError(at::ScalarType sum_dtype = at::kDouble);

 protected:
  void update_state(const Batch& batch) override;
  Value compute_from(const StateValues& synced) const override;
};

// Mean over rows of the p-norm distance ||x - y + eps||_p = (sum_j |x_j - y_j + eps|^p)^(1/p)
// (the definition of torch.nn.functional.pairwise_distance). p > 0, eps >= 0.
// States: distance_sum (sum_dtype, SUM), rows (int64, SUM): two collectives per compute.
class MeanPairwiseDistance : public StatefulMetric {
 public:
  explicit MeanPairwiseDistance(double p = 2.0, double eps = 1e-6, at::ScalarType sum_dtype = at::kDouble);

 protected:
  void update_state(const Batch& batch) override;
  Value compute_from(const StateValues& synced) const override;

 private:
  double p_;
  double eps_;
};

// Coefficient of determination 1 - SS_res / SS_tot, as scikit-learn's r2_score: a constant target
// (SS_tot = 0) gives 1 when the predictions are exact, else 0. Fewer than 2 samples on all ranks
// together: NotComputableError (scikit-learn returns NaN with a warning).
// States: target_sum, target_square_sum, squared_error_sum (sum_dtype, SUM), samples (int64,
// SUM), target_extremes (sum_dtype [2] = (max y, -min y), MAX: the min travels negated in the
// same MAX collective; it tells a constant target exactly, where sums would leave rounding noise).
// Three collectives per compute. SS_tot comes from the sums (sum y^2 - (sum y)^2 / n): exact
// enough for data whose mean is not many orders of magnitude above its spread.
class R2Score : public StatefulMetric {
 public:
  explicit R2Score(at::ScalarType sum_dtype = at::kDouble);

 protected:
  void update_state(const Batch& batch) override;
  Value compute_from(const StateValues& synced) const override;
};

// Pearson's r between input and target (numpy.corrcoef). A constant input or target: NaN (as
// numpy). Fewer than 2 samples: NotComputableError.
// States: sums of x, y, x^2, y^2, xy (sum_dtype, SUM), samples (int64, SUM), extremes (sum_dtype
// [4] = (max x, -min x, max y, -min y), MAX). Three collectives per compute.
class PearsonCorrelation : public StatefulMetric {
 public:
  explicit PearsonCorrelation(at::ScalarType sum_dtype = at::kDouble);

 protected:
  void update_state(const Batch& batch) override;
  Value compute_from(const StateValues& synced) const override;
};

}  // namespace distmetrics::metrics
