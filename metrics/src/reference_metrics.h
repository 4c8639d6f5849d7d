// The reference registry's families: each metric family registers its metrics, with their
// user-facing names and parameters, at the end of its own source (metrics/src/<family>.cpp,
// beside the classes); register_reference_metrics() adds every family.
#pragma once

#include <ATen/core/ScalarType.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "distmetrics/metrics/registry.h"

namespace distmetrics::metrics::detail {

void register_reference_metrics(MetricRegistry& registry);

// One registration function per family, at the end of metrics/src/<family>.cpp.
void register_classification(MetricRegistry& registry);
void register_confusion_matrix(MetricRegistry& registry);
void register_regression(MetricRegistry& registry);
void register_aggregation(MetricRegistry& registry);
void register_epoch(MetricRegistry& registry);
void register_image(MetricRegistry& registry);
void register_composite(MetricRegistry& registry);

// Shorthand for ParamSpecs.
ParamSpec param(std::string name, std::string type, nlohmann::json default_value, std::string description,
                std::vector<std::string> choices = {});
// `spec` with the values explore draws for it (runtime::ParamDecl::draws).
ParamSpec drawn(ParamSpec spec, std::vector<nlohmann::json> draws);
// The `sum_dtype` parameter of metrics with floating-point sums, and its value.
ParamSpec sum_dtype_param();
at::ScalarType sum_dtype_of(const std::string& metric, const nlohmann::json& params);

}  // namespace distmetrics::metrics::detail
