// Classification metrics: Accuracy, TopKCategoricalAccuracy, Precision, Recall, Fbeta.
//
// Inputs (Batch fields), by task. Labels are integer or bool tensors; scores are float32/float64.
//   binary      target: [N, *] labels in {0, 1}.
//               input:  same shape as target: scores (positive when score >= threshold) or labels
//                       in {0, 1}. Every element is one sample.
//   multiclass  target: [N, *] labels in [0, num_classes).
//               input:  [N, num_classes, *] scores (the predicted class is the first maximal score
//                       along dim 1), or labels shaped like target. Every element of target is one
//                       sample ([N] for plain classification, [N, H, W] for segmentation).
//   multilabel  target: [N, num_classes] labels in {0, 1} (one column per label).
//               input:  [N, num_classes] scores (label on when score >= threshold) or labels in {0, 1}.
//                       Every row is one sample.
//   weight: not read; giving one is an InputError.
// NaN: a NaN score cannot be classified: InputError naming its position. Labels out of range,
// a wrong dtype, or a number of classes other than num_classes (e.g. changing between updates):
// InputError naming the metric, the argument, what was expected and what came.
// An empty batch (N = 0) is accepted and changes nothing.
#pragma once

#include <cstdint>
#include <string>

#include "distmetrics/metrics/stateful_metric.h"

namespace distmetrics::metrics {

enum class Task { Binary, Multiclass, Multilabel };
const char* to_string(Task task);
Task parse_task(const std::string& metric, const std::string& text);  // InputError when unknown

struct ClassificationOptions {
  Task task = Task::Multiclass;
  // Classes (multiclass) or labels (multilabel); at least 2 for those tasks. Unused for binary.
  std::int64_t num_classes = 0;
  // Binary and multilabel scores: positive when score >= threshold.
  double threshold = 0.5;
};

// How per-class values combine. Binary always reports the positive class (class 1), whatever
// the average, as scikit-learn's average="binary".
//   None: a float64 tensor [num_classes];  Micro: from counts summed over classes;
//   Macro: the plain mean over ALL num_classes classes (including classes never seen);
//   Weighted: mean weighted by each class's support (true count).
enum class Average { None, Micro, Macro, Weighted };
const char* to_string(Average average);
Average parse_average(const std::string& metric, const std::string& text);

// Fraction of samples classified correctly. Multilabel: a sample is correct when ALL its labels
// are (subset accuracy, as scikit-learn's accuracy_score). Multiclass with top_k > 1 (scores
// only): correct when the target class is among the k best scores; ties are broken toward the
// lower class index, the same rule argmax follows, so top_k = 1 is plain accuracy.
// States: correct, total (int64, SUM): one collective per compute.
// Result: float64 scalar. No samples on any rank: NotComputableError.
class Accuracy : public StatefulMetric {
 public:
  explicit Accuracy(ClassificationOptions options, std::int64_t top_k = 1);

 protected:
  Accuracy(std::string name, ClassificationOptions options, std::int64_t top_k);
  void update_state(const Batch& batch) override;
  Value compute_from(const StateValues& synced) const override;

 private:
  ClassificationOptions options_;
  std::int64_t top_k_;
};

// Multiclass top-k accuracy (the PyTorch-Ignite name): Accuracy(multiclass, num_classes, top_k = k).
// input [N, num_classes, *] scores, target [N, *] labels.
class TopKCategoricalAccuracy : public Accuracy {
 public:
  TopKCategoricalAccuracy(std::int64_t k, std::int64_t num_classes);
};

// Shared by Precision, Recall and Fbeta: per-class counts from which all three follow.
// States (int64, SUM, one collective per compute): true_positives [K], predicted [K] (predicted
// positives), actual [K] (true positives + false negatives = support), samples (scalar);
// K = 1 for binary (the positive class), num_classes otherwise.
// A class with a zero denominator gets `zero_division` (0 or 1) for that value; F-beta is then
// computed from those precision and recall values, and is 0 when both are 0 (scikit-learn 1.2).
// Weighted average with no support anywhere (multilabel, all targets 0): zero_division when
// nothing was predicted either, else precision 0, recall zero_division, F 0 (as scikit-learn).
class ClassCountsMetric : public StatefulMetric {
 public:
  enum class Kind { Precision, Recall, Fbeta };

 protected:
  ClassCountsMetric(std::string name, Kind kind, ClassificationOptions options, Average average,
                    double zero_division, double beta);
  void update_state(const Batch& batch) override;
  Value compute_from(const StateValues& synced) const override;

 private:
  Kind kind_;
  ClassificationOptions options_;
  Average average_;
  double zero_division_;
  double beta_;
};

// tp / (tp + fp)
class Precision : public ClassCountsMetric {
 public:
  Precision(ClassificationOptions options, Average average = Average::Macro, double zero_division = 0.0);
};

// tp / (tp + fn)
class Recall : public ClassCountsMetric {
 public:
  Recall(ClassificationOptions options, Average average = Average::Macro, double zero_division = 0.0);
};

// (1 + beta^2) * P * R / (beta^2 * P + R), per class, then averaged (macro F is the mean of the
// per-class F, not F of the mean P and R). beta > 0; beta = 1 is F1.
class Fbeta : public ClassCountsMetric {
 public:
  Fbeta(ClassificationOptions options, double beta, Average average = Average::Macro,
        double zero_division = 0.0, std::string name = "Fbeta");
};

}  // namespace distmetrics::metrics
