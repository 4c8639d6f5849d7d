#include "distmetrics/plugin/catalog.h"

#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "distmetrics/harness/metric_catalog.h"
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

std::string qualified_metric_name(const std::string& metric, const std::string& plugin_path) {
  return metric + "@" + plugin_path;
}

std::optional<std::pair<std::string, std::string>> split_qualified_name(const std::string& name) {
  const auto at = name.find('@');
  if (at == std::string::npos || at == 0 || at + 1 == name.size()) return std::nullopt;
  return std::make_pair(name.substr(0, at), name.substr(at + 1));
}

const metrics::MetricRegistry& qualified_registry(const Plugin& plugin) {
  std::lock_guard<std::mutex> lock(registries_mutex());
  auto& registries = qualified_registries();
  auto it = registries.find(&plugin);
  if (it != registries.end()) return *it->second;
  auto registry = std::make_unique<metrics::MetricRegistry>();
  for (const auto& name : plugin.registry.names()) {
    metrics::MetricSpec spec = *plugin.registry.find(name);
    const std::string qualified = qualified_metric_name(name, plugin.path);
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
      const auto parts = split_qualified_name(name);
      // Plugins are named by absolute paths; other qualified names (Python's "python:...") are
      // for other resolvers.
      if (!parts || parts->second.empty() || parts->second.front() != '/') return nullptr;
      // Only code named on the command line is loaded: a scenario file may name a plugin given
      // with --plugin, never make us load one. A rank worker loads what its supervisor (the one
      // process that could connect to it) sends, which the supervisor checked so.
      const Plugin* loaded = find_loaded_plugin(parts->second);
      if (!loaded && !runtime::this_process_is_a_rank_worker()) {
        throw std::runtime_error("metric '" + name + "' names the plugin " + parts->second +
                                 ", which was not given with --plugin: a scenario cannot make distmetrics load code; "
                                 "check the plugin with `distmetrics conform --plugin " + parts->second + "`");
      }
      const Plugin& plugin = loaded ? *loaded : load_plugin(parts->second);
      const auto& registry = qualified_registry(plugin);
      if (!registry.find(name))
        throw std::runtime_error("plugin " + plugin.path + " (" + plugin.name + ") has no metric '" + parts->first + "'");
      return &registry;
    });
    return true;
  }();
  (void)installed;
}

}  // namespace distmetrics::plugin
