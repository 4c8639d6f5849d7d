// Image metrics: PSNR.
#pragma once

#include <ATen/core/ScalarType.h>

#include "distmetrics/metrics/stateful_metric.h"

namespace distmetrics::metrics {

// Peak signal-to-noise ratio: the MEAN OF PER-IMAGE PSNR (as PyTorch-Ignite's PSNR), not the PSNR
// of the pooled MSE:  PSNR_i = 10 log10(data_range^2 / MSE_i), MSE_i the mean squared error over
// image i's elements; the result is the mean of PSNR_i over all images of all ranks. An image
// identical to its target has PSNR +inf, and so has the mean.
// Inputs (Batch fields): input [N, *] (e.g. [N, C, H, W]; at least 2 dimensions) floating-point
// images, target the same shape and dtype kind; every row of dim 0 is one image. data_range > 0
// (e.g. 1.0 for [0, 1] images, 255 for 8-bit). weight: not read (InputError when given).
// NaN propagates: the result is NaN.
// States: psnr_sum (sum_dtype, SUM), images (int64, SUM): two collectives per compute.
// No images on any rank: NotComputableError.
class PSNR : public StatefulMetric {
 public:
  explicit PSNR(double data_range, at::ScalarType sum_dtype = at::kDouble);

 protected:
  void update_state(const Batch& batch) override;
  Value compute_from(const StateValues& synced) const override;

 private:
  double data_range_;
};

}  // namespace distmetrics::metrics
