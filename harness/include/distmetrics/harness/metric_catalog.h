// Where scenarios find metrics by name: the reference registry first, then registries added by
// tests or plugins (e.g. deliberately broken metrics registered in a test binary). A name must
// be unique across registries: the first registry that knows it wins.
#pragma once

#include <functional>
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
  // Supplies the registry for names no added registry knows, e.g. a plugin's metrics under
  // qualified names ("MeanAbsoluteError@/path/libacme.so", plugin/catalog.h), loaded on first use
  // in every process that meets them. Returns nullptr for names that are not its kind; may throw
  // with a message (a plugin that cannot be loaded).
  using Resolver = std::function<const metrics::MetricRegistry*(const std::string& metric)>;
  void add_resolver(Resolver resolver);

  // The registry that knows `metric` (added registries first, then the resolvers), or nullptr.
  const metrics::MetricRegistry* registry_for(const std::string& metric) const;
  // The names the added registries know, each once (not what resolvers could supply).
  std::vector<std::string> metric_names() const;

 private:
  std::vector<std::pair<std::string, const metrics::MetricRegistry*>> registries_;
  std::vector<Resolver> resolvers_;
};

// The reference metric a registered name stands for: a source may register several classes
// under one reference name as "Average[SumMetric]" (selected with `conform --metric`), each run on
// the reference's scenarios and judged by it. Any other name is its own ("Average").
std::string reference_metric_name(const std::string& registered);

}  // namespace distmetrics::harness
