// Metrics computed from a multiclass confusion matrix: ConfusionMatrix, IoU, MeanIoU, Dice, CohenKappa.
//
// Inputs (Batch fields), as multiclass classification (classification.h):
//   target: [N, *] integer labels in [0, num_classes). Every element is one sample
//           ([N] for classification, [N, H, W] for segmentation).
//   input:  [N, num_classes, *] float scores (the predicted class is the first maximal score along
//           dim 1), or integer labels shaped like target.
//   weight: not read; giving one is an InputError.
// Binary problems: num_classes = 2 with 0/1 labels (or two score columns).
// NaN scores, labels out of range, a wrong number of classes: InputError.
//
// State: matrix, int64 [num_classes, num_classes], SUM (rows: true class, columns: predicted
// class, as scikit-learn's confusion_matrix): one collective per compute. Counts are exact.
// No samples on any rank (the synced matrix sums to 0): NotComputableError.
#pragma once

#include <cstdint>
#include <string>

#include "distmetrics/metrics/stateful_metric.h"

namespace distmetrics::metrics {

class ConfusionCounts : public StatefulMetric {
 public:
  std::int64_t num_classes() const { return num_classes_; }

 protected:
  ConfusionCounts(std::string name, std::int64_t num_classes);
  void update_state(const Batch& batch) override;
  // The synced matrix as float64 on the CPU; NotComputableError when it is empty.
  at::Tensor matrix_of(const StateValues& synced) const;

 private:
  std::int64_t num_classes_;
};

// The confusion matrix itself. Normalize (as scikit-learn): None: int64 counts; True: each row
// divided by its sum; Pred: each column by its sum; All: by the total. A zero row or column
// normalizes to zeros. Result: a [num_classes, num_classes] tensor.
class ConfusionMatrix : public ConfusionCounts {
 public:
  enum class Normalize { None, True, Pred, All };
  explicit ConfusionMatrix(std::int64_t num_classes, Normalize normalize = Normalize::None);
  static Normalize parse_normalize(const std::string& metric, const std::string& text);

 protected:
  Value compute_from(const StateValues& synced) const override;

 private:
  Normalize normalize_;
};

// How per-class IoU and Dice values combine: None: float64 tensor [num_classes]; Macro: their mean
// over all classes (a class never seen counts, with zero_division).
enum class ClassAverage { None, Macro };
ClassAverage parse_class_average(const std::string& metric, const std::string& text);

// Intersection over union (Jaccard index) per class: tp / (tp + fp + fn). A class with an empty
// union (never true, never predicted) gets zero_division (0 or 1).
class IoU : public ConfusionCounts {
 public:
  explicit IoU(std::int64_t num_classes, ClassAverage average = ClassAverage::None, double zero_division = 0.0);

 protected:
  IoU(std::string name, std::int64_t num_classes, ClassAverage average, double zero_division);
  Value compute_from(const StateValues& synced) const override;

 private:
  ClassAverage average_;
  double zero_division_;
};

// mIoU: IoU averaged over all classes (a float64 scalar).
class MeanIoU : public IoU {
 public:
  explicit MeanIoU(std::int64_t num_classes, double zero_division = 0.0);
};

// Dice (= per-class F1) : 2 tp / (2 tp + fp + fn); a class never true nor predicted gets zero_division.
class Dice : public ConfusionCounts {
 public:
  explicit Dice(std::int64_t num_classes, ClassAverage average = ClassAverage::Macro, double zero_division = 0.0);

 protected:
  Value compute_from(const StateValues& synced) const override;

 private:
  ClassAverage average_;
  double zero_division_;
};

// Cohen's kappa between the targets and the predictions, with disagreement weights none (0/1),
// linear (|i - j|) or quadratic ((i - j)^2), as scikit-learn's cohen_kappa_score. When the expected
// disagreement is 0 (e.g. one class only, everywhere) kappa is 0/0: NaN, as scikit-learn.
class CohenKappa : public ConfusionCounts {
 public:
  enum class Weights { None, Linear, Quadratic };
  explicit CohenKappa(std::int64_t num_classes, Weights weights = Weights::None);
  static Weights parse_weights(const std::string& metric, const std::string& text);

 protected:
  Value compute_from(const StateValues& synced) const override;

 private:
  Weights weights_;
};

}  // namespace distmetrics::metrics
