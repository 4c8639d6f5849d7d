#include "distmetrics/plugin/catalog.h"

#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "distmetrics/harness/metric_catalog.h"
#include "distmetrics/harness/metric_id.h"
#include "distmetrics/runtime/rank_pool.h"

namespace distmetrics::plugin {
namespace {

std::mutex& registries_mutex() {
  static std::mutex m;
  return m;
}

std::map<const Plugin*, std::unique_ptr<metrics::MetricRegistry>>& qualified_registries() {
  static std::map<const Plugin*, std::unique_ptr<metrics::MetricRegistry>> registries;
  return registries;
}

}  // namespace

const metrics::MetricRegistry& qualified_registry(const Plugin& plugin) {
  std::lock_guard<std::mutex> lock(registries_mutex());
  auto& registries = qualified_registries();
  auto it = registries.find(&plugin);
  if (it != registries.end()) return *it->second;
  auto registry = std::make_unique<metrics::MetricRegistry>();
  for (const auto& name : plugin.registry.names()) {
    metrics::MetricSpec spec = *plugin.registry.find(name);
    const std::string qualified = harness::MetricId{name, harness::MetricSource::parse(plugin.path)}.qualified();
    auto make = spec.make;
    const std::string plugin_name = plugin.name;
    spec.make = [make, name, plugin_name](const nlohmann::json& params) {
      auto metric = make(params);
      if (!metric)
        throw std::runtime_error("plugin " + plugin_name + ": the make() of " + name + " returned no metric (a null pointer)");
      return metric;
    };
    spec.name = qualified;
    registry->add(std::move(spec));
  }
  return *registries.emplace(&plugin, std::move(registry)).first->second;
}

void install_plugin_resolver() {
  static const bool installed = [] {
    harness::MetricCatalog::instance().add_resolver([](const std::string& name) -> const metrics::MetricRegistry* {
      const auto id = harness::MetricId::parse(name);
      // Plugins are named by absolute paths; other sources (Python's) are for other resolvers.
      if (id.source.kind != harness::MetricSource::Kind::Plugin || id.source.location.front() != '/') return nullptr;
      const std::string& path = id.source.location;
      // Only code named on the command line is loaded: a scenario file may name a plugin given
      // with --plugin, never make us load one. A rank worker loads what its supervisor (the one
      // process that could connect to it) sends, which the supervisor checked so.
      const Plugin* loaded = find_loaded_plugin(path);
      if (!loaded && !runtime::this_process_is_a_rank_worker()) {
        throw std::runtime_error("metric '" + name + "' names the plugin " + path +
                                 ", which was not given with --plugin: a scenario cannot make distmetrics load code; "
                                 "check the plugin with `distmetrics conform --plugin " + path + "`");
      }
      const Plugin& plugin = loaded ? *loaded : load_plugin(path);
      const auto& registry = qualified_registry(plugin);
      if (!registry.find(name))
        throw std::runtime_error("plugin " + plugin.path + " (" + plugin.name + ") has no metric '" + id.name + "'");
      return &registry;
    });
    return true;
  }();
  (void)installed;
}

}  // namespace distmetrics::plugin
