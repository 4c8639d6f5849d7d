// Registry entries of the regression metrics (regression.h).
#include "distmetrics/metrics/regression.h"
#include "reference_metrics.h"

namespace distmetrics::metrics::detail {
namespace {

template <typename M>
std::unique_ptr<Metric> with_sum_dtype(const char* name, const nlohmann::json& p) {
  return std::make_unique<M>(sum_dtype_of(name, p));
}

}  // namespace

void register_regression(MetricRegistry& registry) {
  const std::string elements = "; input predictions and target values, float, same shape [N,*] (every element a sample)";
  registry.add({"MeanAbsoluteError", "regression", "mean |input - target|" + elements, {sum_dtype_param()},
                [](const nlohmann::json& p) { return with_sum_dtype<MeanAbsoluteError>("MeanAbsoluteError", p); }});
  registry.add({"MeanSquaredError", "regression", "mean (input - target)^2" + elements, {sum_dtype_param()},
                [](const nlohmann::json& p) { return with_sum_dtype<MeanSquaredError>("MeanSquaredError", p); }});
  registry.add({"RootMeanSquaredError", "regression", "sqrt of the mean (input - target)^2" + elements, {sum_dtype_param()},
                [](const nlohmann::json& p) { return with_sum_dtype<RootMeanSquaredError>("RootMeanSquaredError", p); }});
  registry.add({"MaximumAbsoluteError", "regression", "max |input - target| (a MAX state)" + elements, {sum_dtype_param()},
                [](const nlohmann::json& p) { return with_sum_dtype<MaximumAbsoluteError>("MaximumAbsoluteError", p); }});
  registry.add({"MeanPairwiseDistance", "regression",
                "mean over rows of ||input - target + eps||_p; input and target float [N,D] (every row a sample)",
                {param("p", "float", 2.0, "order of the norm, > 0"),
                 param("eps", "float", 1e-6, "added to every difference (as torch pairwise_distance), >= 0"),
                 sum_dtype_param()},
                [](const nlohmann::json& p) {
                  return std::make_unique<MeanPairwiseDistance>(p.at("p").get<double>(), p.at("eps").get<double>(),
                                                                sum_dtype_of("MeanPairwiseDistance", p));
                }});
  registry.add({"R2Score", "regression", "coefficient of determination 1 - SS_res/SS_tot; input and target float [N]",
                {sum_dtype_param()},
                [](const nlohmann::json& p) { return with_sum_dtype<R2Score>("R2Score", p); }});
  registry.add({"PearsonCorrelation", "regression", "Pearson's r between input and target, float [N]",
                {sum_dtype_param()},
                [](const nlohmann::json& p) { return with_sum_dtype<PearsonCorrelation>("PearsonCorrelation", p); }});
}

}  // namespace distmetrics::metrics::detail
