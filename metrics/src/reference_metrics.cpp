#include "reference_metrics.h"

#include "distmetrics/metrics/regression.h"

namespace distmetrics::metrics::detail {

ParamSpec param(std::string name, std::string type, nlohmann::json default_value, std::string description,
                std::vector<std::string> choices) {
  ParamSpec spec;
  spec.name = std::move(name);
  spec.type = std::move(type);
  spec.default_value = std::move(default_value);
  spec.description = std::move(description);
  spec.choices = std::move(choices);
  return spec;
}

ParamSpec drawn(ParamSpec spec, std::vector<nlohmann::json> draws) {
  spec.draws = std::move(draws);
  return spec;
}

ParamSpec sum_dtype_param() {
  return param("sum_dtype", "string", "float64", "dtype of the floating-point sums (counts are always int64)",
               {"float64", "float32"});
}

at::ScalarType sum_dtype_of(const std::string& metric, const nlohmann::json& params) {
  return parse_sum_dtype(metric, params.at("sum_dtype").get<std::string>());
}

void register_reference_metrics(MetricRegistry& registry) {
  register_classification(registry);
  register_confusion_matrix(registry);
  register_regression(registry);
  register_aggregation(registry);
  register_epoch(registry);
  register_image(registry);
  register_composite(registry);
}

}  // namespace distmetrics::metrics::detail
