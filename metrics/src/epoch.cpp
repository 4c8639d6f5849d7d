#include "distmetrics/metrics/epoch.h"

#include <ATen/ATen.h>

#include <vector>

#include "distmetrics/metrics/errors.h"
#include "distmetrics/metrics/input_checks.h"
#include "reference_metrics.h"

namespace distmetrics::metrics {
namespace {

using namespace checks;

// Cumulative true and false positives at each distinct threshold, from the highest score down.
struct ThresholdCounts {
  std::vector<double> tp;
  std::vector<double> fp;
};

ThresholdCounts counts_by_threshold(const at::Tensor& scores, const at::Tensor& targets) {
  const at::Tensor order = std::get<1>(scores.sort(/*stable=*/true, /*dim=*/0, /*descending=*/true));
  const at::Tensor s = scores.index_select(0, order).contiguous();
  const at::Tensor t = targets.index_select(0, order).contiguous();
  const auto sa = s.accessor<double, 1>();
  const auto ta = t.accessor<std::int64_t, 1>();
  ThresholdCounts out;
  double tp = 0, fp = 0;
  const std::int64_t n = s.size(0);
  for (std::int64_t i = 0; i < n; ++i) {
    (ta[i] == 1 ? tp : fp) += 1;
    if (i == n - 1 || sa[i] != sa[i + 1]) {  // the last sample of a group of tied scores
      out.tp.push_back(tp);
      out.fp.push_back(fp);
    }
  }
  return out;
}

}  // namespace

EpochMetric::EpochMetric(std::string name, EpochFn fn) : StatefulMetric(std::move(name)), fn_(std::move(fn)) {
  add_state("scores", at::empty({0}, at::kDouble), Reduction::Gather);
  add_state("targets", at::empty({0}, at::kLong), Reduction::Gather);
}

void EpochMetric::update_state(const Batch& batch) {
  const std::string& m = name();
  require_defined(m, "input", batch.input, "scores shaped [N]");
  require_defined(m, "target", batch.target, "labels in {0, 1} shaped [N]");
  require_absent(m, "weight", batch.weight, m + " takes no sample weights");
  require_floating(m, "input", batch.input);
  require_dim(m, "input", batch.input, 1, "scores shaped [N]");
  require_labels_dtype(m, "target", batch.target);
  require_same_shape(m, "target", batch.target, "input", batch.input);
  // Checked while copied (one pass each) into room the states keep across epochs; committed only
  // once both passed.
  const std::int64_t n = batch.input.size(0);
  const at::Tensor scores = reserve_rows("scores", n);
  copy_float64_without_nan(m, "input", batch.input, scores);
  const at::Tensor targets = reserve_rows("targets", n);
  copy_int64_in_range(m, "target", batch.target, 0, 2, targets);
  commit_rows("scores", scores);
  commit_rows("targets", targets);
}

Value EpochMetric::compute_from(const StateValues& synced) const {
  const at::Tensor scores = synced["scores"].to(at::kCPU);
  if (scores.size(0) == 0) throw NotComputableError(name(), "no samples on any rank");
  return fn_(scores, synced["targets"].to(at::kCPU));
}

double roc_auc(const at::Tensor& scores, const at::Tensor& targets) {
  const ThresholdCounts c = counts_by_threshold(scores, targets);
  const double positives = c.tp.back(), negatives = c.fp.back();
  if (positives == 0 || negatives == 0) {
    throw NotComputableError("RocAuc", std::string("ROC AUC needs both classes in target; only class ") +
                                           (positives == 0 ? "0" : "1") + " occurs on all ranks together");
  }
  double area = 0, tpr_before = 0, fpr_before = 0;
  for (std::size_t k = 0; k < c.tp.size(); ++k) {
    const double tpr = c.tp[k] / positives, fpr = c.fp[k] / negatives;
    area += (fpr - fpr_before) * (tpr + tpr_before) / 2.0;
    tpr_before = tpr;
    fpr_before = fpr;
  }
  return area;
}

double average_precision(const at::Tensor& scores, const at::Tensor& targets) {
  const ThresholdCounts c = counts_by_threshold(scores, targets);
  const double positives = c.tp.back();
  if (positives == 0) {
    throw NotComputableError("AveragePrecision", "no positive target on any rank (average precision is undefined)");
  }
  double ap = 0, recall_before = 0;
  for (std::size_t k = 0; k < c.tp.size(); ++k) {
    const double recall = c.tp[k] / positives;
    const double precision = c.tp[k] / (c.tp[k] + c.fp[k]);
    ap += (recall - recall_before) * precision;
    recall_before = recall;
  }
  return ap;
}

RocAuc::RocAuc()
    : EpochMetric("RocAuc", [](const at::Tensor& s, const at::Tensor& t) { return Value(roc_auc(s, t)); }) {}

AveragePrecision::AveragePrecision()
    : EpochMetric("AveragePrecision",
                  [](const at::Tensor& s, const at::Tensor& t) { return Value(average_precision(s, t)); }) {}

}  // namespace distmetrics::metrics

// --- Registration in the reference registry (registry.h), next to the classes ------------

namespace distmetrics::metrics::detail {

void register_epoch(MetricRegistry& registry) {
  registry.add({"RocAuc", "epoch",
                "area under the ROC curve (as sklearn roc_auc_score, ties included); input scores [N], target "
                "labels [N] in {0,1}; gathers every sample",
                {}, [](const nlohmann::json&) { return std::make_unique<RocAuc>(); }});
  registry.add({"AveragePrecision", "epoch",
                "average precision (as sklearn average_precision_score); input scores [N], target labels [N] in "
                "{0,1}; gathers every sample",
                {}, [](const nlohmann::json&) { return std::make_unique<AveragePrecision>(); }});
}

}  // namespace distmetrics::metrics::detail
