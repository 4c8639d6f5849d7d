#include "distmetrics/harness/metric_catalog.h"

#include <algorithm>

namespace distmetrics::harness {

std::string reference_metric_name(const std::string& registered) {
  const auto open = registered.find('[');
  if (open == std::string::npos || open == 0 || registered.back() != ']' || open + 2 > registered.size() - 1)
    return registered;
  return registered.substr(0, open);
}

MetricCatalog& MetricCatalog::instance() {
  static MetricCatalog catalog = [] {
    MetricCatalog c;
    c.add("reference", &metrics::MetricRegistry::reference());
    return c;
  }();
  return catalog;
}

void MetricCatalog::add(const std::string& source, const metrics::MetricRegistry* registry) {
  for (auto& entry : registries_) {
    if (entry.first == source) {
      entry.second = registry;
      return;
    }
  }
  registries_.emplace_back(source, registry);
}

const metrics::MetricRegistry* MetricCatalog::registry_for(const std::string& metric) const {
  for (const auto& entry : registries_)
    if (entry.second->find(metric)) return entry.second;
  for (const auto& resolve : resolvers_)
    if (const auto* registry = resolve(metric)) return registry;
  return nullptr;
}

void MetricCatalog::add_resolver(Resolver resolver) { resolvers_.push_back(std::move(resolver)); }

std::vector<std::string> MetricCatalog::metric_names() const {
  // A name a later registry knows too (the reference's Accuracy and a Python source's) resolves to
  // the first: listed once.
  std::vector<std::string> names;
  for (const auto& entry : registries_)
    for (const auto& name : entry.second->names())
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  return names;
}

}  // namespace distmetrics::harness
