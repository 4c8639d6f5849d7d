// The metric registry: builds metrics by name from JSON parameters. Scenario files name metrics
// this way; plugins add theirs to a registry of their own the same way.
#pragma once

#include <c10/core/Device.h>
#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "distmetrics/metrics/metric.h"
#include "distmetrics/runtime/params.h"

namespace distmetrics::metrics {

// A metric's parameter: the runtime's one parameter schema (params.h).
using ParamSpec = runtime::ParamDecl;

struct MetricSpec {
  std::string name;         // "Accuracy", "MeanSquaredError", ...
  std::string family;       // "classification", "regression", "aggregation", "epoch", "image", "composite"
  std::string description;  // one line: inputs and what it computes
  std::vector<ParamSpec> params;
  // Builds the metric from parameters already checked against `params` (defaults filled in).
  std::function<std::unique_ptr<Metric>(const nlohmann::json& params)> make;
  // Optional: checks that go beyond one field's type and choices (e.g. a composite's expression
  // and operands), run by resolve_params on the resolved parameters; throws ParamError.
  std::function<void(const nlohmann::json& params)> validate = nullptr;
};

// Other names accepted for a parameter (torchmetrics' spelling where it differs from ours, e.g.
// "num_labels" for "num_classes"); resolve_params treats them as the parameter itself.
const std::vector<std::string>& param_aliases(const std::string& param);

class MetricRegistry {
 public:
  // The reference metrics of this library.
  static MetricRegistry& reference();

  void add(MetricSpec spec);  // throws std::invalid_argument on a duplicate name
  const MetricSpec* find(const std::string& name) const;
  std::vector<std::string> names() const;

  // Checks `params` against the spec with the runtime's resolver (runtime::resolve_declared_params:
  // unknown names, types, choices, missing required ones; the message names the metric and the
  // field, and suggests close names), fills in defaults, runs the spec's validate.
  // Throws ParamError (errors.h); an unknown metric name too (field empty).
  nlohmann::json resolve_params(const std::string& name, const nlohmann::json& params) const;
  std::unique_ptr<Metric> make(const std::string& name, const nlohmann::json& params,
                               c10::Device device = c10::kCPU) const;

 private:
  std::map<std::string, MetricSpec> specs_;
};

}  // namespace distmetrics::metrics
