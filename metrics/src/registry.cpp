#include "distmetrics/metrics/registry.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "distmetrics/metrics/errors.h"
#include "distmetrics/runtime/params.h"
#include "distmetrics/runtime/text.h"
#include "reference_metrics.h"

namespace distmetrics::metrics {
namespace {

// Parameters whose torchmetrics name differs from ours: the torchmetrics spelling is accepted
// for the same parameter (one table; `distmetrics metrics` lists them).
const std::map<std::string, std::vector<std::string>>& alias_table() {
  static const std::map<std::string, std::vector<std::string>> table = {
      {"num_classes", {"num_labels"}},  // torchmetrics' multilabel metrics
  };
  return table;
}

}  // namespace

const std::vector<std::string>& param_aliases(const std::string& param) {
  static const std::vector<std::string> none;
  const auto it = alias_table().find(param);
  return it == alias_table().end() ? none : it->second;
}

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
  // Aliases (torchmetrics' names) become the parameter's own name.
  nlohmann::json given = params;
  if (params.is_object()) {
    std::vector<std::string> known;
    for (const ParamSpec& p : spec->params) known.push_back(p.name);
    for (const auto& [key, value] : params.items()) {
      if (std::find(known.begin(), known.end(), key) != known.end()) continue;
      for (const std::string& canonical : known) {
        const auto& aliases = param_aliases(canonical);
        if (std::find(aliases.begin(), aliases.end(), key) == aliases.end()) continue;
        if (params.contains(canonical)) {
          throw ParamError(name, key, "\"" + key + "\" is another name for \"" + canonical +
                                          "\", which is given too: give only one of them");
        }
        given.erase(key);
        given[canonical] = value;
      }
    }
  }
  nlohmann::json resolved;
  try {
    resolved = runtime::resolve_declared_params("metric '" + name + "'", spec->params, given);
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
