#include "distmetrics/metrics/registry.h"

#include <stdexcept>

#include "distmetrics/metrics/errors.h"
#include "distmetrics/runtime/params.h"
#include "distmetrics/runtime/text.h"
#include "reference_metrics.h"

namespace distmetrics::metrics {

MetricRegistry& MetricRegistry::reference() {
  static MetricRegistry* registry = [] {
    auto* r = new MetricRegistry();  // never destroyed: plugins may look it up during exit
    detail::register_reference_metrics(*r);
    return r;
  }();
  return *registry;
}

void MetricRegistry::add(MetricSpec spec) {
  if (spec.name.empty()) throw std::invalid_argument("MetricRegistry: a metric needs a name");
  if (!spec.make) throw std::invalid_argument("MetricRegistry: metric \"" + spec.name + "\" has no make function");
  if (specs_.count(spec.name)) {
    throw std::invalid_argument("MetricRegistry: metric \"" + spec.name + "\" is already registered");
  }
  const std::string name = spec.name;
  specs_.emplace(name, std::move(spec));
}

const MetricSpec* MetricRegistry::find(const std::string& name) const {
  auto it = specs_.find(name);
  return it == specs_.end() ? nullptr : &it->second;
}

std::vector<std::string> MetricRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& [name, spec] : specs_) out.push_back(name);
  return out;
}

nlohmann::json MetricRegistry::resolve_params(const std::string& name, const nlohmann::json& params) const {
  const MetricSpec* spec = find(name);
  if (spec == nullptr) {
    const auto known = names();
    throw ParamError(name, "", "unknown metric '" + name + "'" + runtime::did_you_mean(name, known) +
                                   " (known: " + runtime::quoted_list(known) + ")");
  }
  nlohmann::json resolved;
  try {
    resolved = runtime::resolve_declared_params("metric '" + name + "'", spec->params, params);
  } catch (const runtime::FieldError& e) {
    throw ParamError(name, e);
  }
  if (spec->validate) spec->validate(resolved);
  return resolved;
}

std::unique_ptr<Metric> MetricRegistry::make(const std::string& name, const nlohmann::json& params,
                                             c10::Device device) const {
  const nlohmann::json resolved = resolve_params(name, params);
  std::unique_ptr<Metric> metric;
  try {
    metric = find(name)->make(resolved);
  } catch (const InputError& e) {  // a constructor rejecting a value (e.g. num_classes 0 for multiclass)
    const std::string text = e.what();
    const std::string prefix = e.metric() + ": " + e.argument() + ": ";
    throw ParamError(name, e.argument(), text.rfind(prefix, 0) == 0 ? text.substr(prefix.size()) : text);
  }
  metric->to(device);
  return metric;
}

}  // namespace distmetrics::metrics
