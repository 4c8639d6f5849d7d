// Registration of the reference metrics with their user-facing names and parameters.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "distmetrics/metrics/registry.h"

namespace distmetrics::metrics::detail {

void register_reference_metrics(MetricRegistry& registry);

// One registration function per family (reference_<family>.cpp).
void register_classification(MetricRegistry& registry);

// Shorthand for ParamSpecs.
ParamSpec param(std::string name, std::string type, nlohmann::json default_value, std::string description,
                std::vector<std::string> choices = {});

}  // namespace distmetrics::metrics::detail
