// Registry entries of the aggregation metrics (aggregation.h).
#include "distmetrics/metrics/aggregation.h"
#include "reference_metrics.h"

namespace distmetrics::metrics::detail {

void register_aggregation(MetricRegistry& registry) {
  registry.add({"Average", "aggregation", "weighted mean of values; input [N] numbers, weight optional [N] >= 0",
                {sum_dtype_param()},
                [](const nlohmann::json& p) { return std::make_unique<Average>(sum_dtype_of("Average", p)); }});
  registry.add({"Loss", "aggregation",
                "weighted mean of per-sample losses, given (input [N]) or computed from input and target; "
                "weight optional [N] >= 0",
                {param("loss", "string", nullptr,
                       "per_sample (input holds the losses), cross_entropy (logits [N,C], labels [N]), nll "
                       "(log-probabilities [N,C], labels [N]), binary_cross_entropy (probabilities [N], targets [N] "
                       "in [0,1]), binary_cross_entropy_with_logits (logits [N], targets [N]), mse or l1 ([N,*] "
                       "each, averaged per sample)",
                       {"per_sample", "cross_entropy", "nll", "binary_cross_entropy",
                        "binary_cross_entropy_with_logits", "mse", "l1"}),
                 sum_dtype_param()},
                [](const nlohmann::json& p) {
                  return std::make_unique<Loss>(Loss::parse_kind("Loss", p.at("loss").get<std::string>()),
                                                sum_dtype_of("Loss", p));
                }});
  registry.add({"GeometricAverage", "aggregation", "exp(mean(log v)); input [N] numbers >= 0", {sum_dtype_param()},
                [](const nlohmann::json& p) {
                  return std::make_unique<GeometricAverage>(sum_dtype_of("GeometricAverage", p));
                }});
  registry.add({"RunningAverage", "aggregation",
                "EMA over global steps of each step's mean (step t = the t-th update on every rank; every rank "
                "must update equally often); input [N] numbers, N may be 0",
                {param("alpha", "float", 0.98, "weight of the previous value, in (0, 1]"), sum_dtype_param()},
                [](const nlohmann::json& p) {
                  return std::make_unique<RunningAverage>(p.at("alpha").get<double>(), sum_dtype_of("RunningAverage", p));
                }});
}

}  // namespace distmetrics::metrics::detail
