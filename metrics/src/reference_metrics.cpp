#include "reference_metrics.h"

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

void register_reference_metrics(MetricRegistry& registry) {
  register_classification(registry);
}

}  // namespace distmetrics::metrics::detail
