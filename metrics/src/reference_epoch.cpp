// Registry entries of the epoch metrics (epoch.h).
#include "distmetrics/metrics/epoch.h"
#include "reference_metrics.h"

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
