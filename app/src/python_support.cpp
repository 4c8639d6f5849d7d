#include "python_support.h"

#include "distmetrics/harness/metric_id.h"

#include "explore_command.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "distmetrics/harness/variant.h"
#include "distmetrics/plugin/conform.h"
#include "distmetrics/pyhost/scenario_code.h"
#include "distmetrics/pyhost/source.h"
#include "distmetrics/runtime/task.h"

namespace distmetrics::app {
namespace {

constexpr const char* kPreloadSource = "DISTMETRICS_PYTHON_PRELOAD";
constexpr const char* kPreloadMetrics = "DISTMETRICS_PYTHON_PRELOAD_METRICS";

// Several sources travel in one variable, one per line (a spec is a path or a module name).
constexpr char kSourceSeparator = '\n';

std::vector<std::string> split(const std::string& list, char separator) {
  std::vector<std::string> out;
  for (std::size_t at = 0; at < list.size();) {
    const auto end = std::min(list.find(separator, at), list.size());
    if (end > at) out.push_back(list.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

// In a rank worker of `conform --python`: the sources, imported before the first variant. A
// failure here is left for the variant to report (the resolver raises it again there).
void preload_python_source() {
  const char* specs = std::getenv(kPreloadSource);
  if (!specs || !*specs) return;
  // Per source (line by line), its metric names.
  const auto metrics = split(std::getenv(kPreloadMetrics) ? std::getenv(kPreloadMetrics) : "", kSourceSeparator);
  const auto sources = split(specs, kSourceSeparator);
  for (std::size_t i = 0; i < sources.size(); ++i) {
    try {
      distmetrics::pyhost::load_python_source(sources[i], i < metrics.size() ? split(metrics[i], ',') : std::vector<std::string>{});
    } catch (const std::exception&) {
    }
  }
}

// The rank pools' warm-up (runtime::PoolOptions::warm_up): imports each source the supervisor
// loaded, with its metric names. Workers forked from the zygote, which started before any source
// was known, have not run preload_python_source(); this job makes them import at the pool's start.
constexpr const char* kPreloadTask = "python/preload";

nlohmann::json preload_task(distmetrics::runtime::TaskContext& ctx) {
  for (const auto& source : ctx.params.at("sources"))
    distmetrics::pyhost::load_python_source(source.at("spec"), source.at("metrics").get<std::vector<std::string>>());
  return nlohmann::json::object();
}

// The sources `conform --python` loaded, in order: (spec, comma-separated metric names).
std::vector<std::pair<std::string, std::string>>& loaded_sources() {
  static std::vector<std::pair<std::string, std::string>> loaded;
  return loaded;
}

// Python metrics: their qualified names resolve on every rank, and `conform --python` presents a
// Python source as a plugin.
void register_conform_source() {
  using distmetrics::plugin::Plugin;
  namespace pyhost = distmetrics::pyhost;
  pyhost::install_python_resolver();
  distmetrics::plugin::ConformSource source;
  source.load = [](const std::string& value, const std::vector<std::string>& metrics) -> const Plugin& {
    static std::map<std::string, std::unique_ptr<Plugin>> presented;
    const auto& python = pyhost::load_python_source(value, metrics);
    auto& plugin = presented[python.spec];
    if (!plugin) {
      plugin = std::make_unique<Plugin>();
      plugin->path = distmetrics::harness::MetricSource::python(python.spec).text();
      plugin->name = python.module;
      plugin->version = python.version;
      plugin->build.text = "Python module " + python.spec;
      plugin->build.torch_version = python.torch_version;
      for (const auto& name : python.registry.names()) plugin->registry.add(*python.registry.find(name));
    }
    // Rank workers exec'd from here on import the source as they start up (preload_python_source);
    // those forked from the zygote import it in the pools' warm-up job (loaded_sources_job).
    // Either way the pool's start pays for it, not a variant's deadline. Every source loaded so
    // far (conform takes several), in the order given, each with its names.
    auto& loaded = loaded_sources();
    if (std::none_of(loaded.begin(), loaded.end(), [&](const auto& l) { return l.first == python.spec; })) {
      std::string names;
      for (const auto& name : python.registry.names()) names += (names.empty() ? "" : ",") + name;
      loaded.emplace_back(python.spec, names);
    }
    std::string spec_list, name_list;
    for (const auto& [spec, names] : loaded) {
      spec_list += (spec_list.empty() ? "" : std::string(1, kSourceSeparator)) + spec;
      name_list += (name_list.empty() ? "" : std::string(1, kSourceSeparator)) + names;
    }
    ::setenv(kPreloadSource, spec_list.c_str(), 1);
    ::setenv(kPreloadMetrics, name_list.c_str(), 1);
    return *plugin;
  };
  source.check = [](const Plugin& plugin, const std::string& metric, const nlohmann::json& params) {
    const std::string spec = distmetrics::harness::MetricSource::parse(plugin.path).location;
    const auto checked = nlohmann::json::parse(pyhost::check_python_metric(pyhost::load_python_source(spec), metric, params));
    return checked.value("conventions", nlohmann::json::object());
  };
  source.pool_warm_up = [] {
    distmetrics::runtime::Job job;
    job.task = kPreloadTask;
    nlohmann::json sources = nlohmann::json::array();
    for (const auto& [spec, names] : loaded_sources()) sources.push_back({{"spec", spec}, {"metrics", split(names, ',')}});
    job.params = {{"sources", sources}};
    return job;
  };
  source.prepare_workers = [] { return pyhost::fork_workers_with_python_loaded(); };
  source.cannot_run = [](const distmetrics::harness::Variant& variant) {
    return pyhost::python_backend_unavailable(variant.backend);
  };
  register_explore_python_loader([load = source.load](const std::string& spec) -> const Plugin& { return load(spec, {}); });
  distmetrics::plugin::register_python_conform_source(std::move(source));
}
}  // namespace

void register_python_support() {
  distmetrics::runtime::TaskRegistry::instance().add(kPreloadTask, preload_task);
  register_conform_source();
  distmetrics::pyhost::install_scenario_python_hooks();  // data.python, reference.python (with --allow-python)
  preload_python_source();  // set only in the rank workers of `conform --python`
}

}  // namespace distmetrics::app

// The module's entry point, called by the command that loads it (entry.cpp).
extern "C" void distmetrics_register_python_support() { distmetrics::app::register_python_support(); }
