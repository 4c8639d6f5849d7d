// Where scenarios find metrics by name: the reference registry first, then registries added by
// tests or plugins (e.g. deliberately broken metrics registered in a test binary). A name must
// be unique across registries: the first registry that knows it wins.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "distmetrics/metrics/registry.h"

namespace distmetrics::harness {

class MetricCatalog {
 public:
  // The process-wide catalog, holding the reference registry.
  static MetricCatalog& instance();

  // Adds a registry (not owned; it must outlive the catalog's use, e.g. a static).
  void add(const std::string& source, const metrics::MetricRegistry* registry);
  // The registry that knows `metric`, or nullptr.
  const metrics::MetricRegistry* registry_for(const std::string& metric) const;
  std::vector<std::string> metric_names() const;

 private:
  std::vector<std::pair<std::string, const metrics::MetricRegistry*>> registries_;
};

}  // namespace distmetrics::harness
