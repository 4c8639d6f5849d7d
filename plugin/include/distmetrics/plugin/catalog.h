// Plugin metrics in the scenario engine: a plugin's metric travels in a scenario under a
// qualified name, "<metric>@<absolute path of the plugin>" (harness::MetricId), which every process that meets it
// (the supervisor and each rank worker) resolves by loading the plugin (loader.h) through a
// resolver installed in the MetricCatalog. A rank thus builds the plugin's metric where the
// scenario names the reference one, with nothing else changed in the engine.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "distmetrics/metrics/registry.h"
#include "distmetrics/plugin/loader.h"

namespace distmetrics::plugin {

// The plugin's metrics under their qualified names (built once per plugin). Building one checks
// that the plugin's make() returned a metric.
const metrics::MetricRegistry& qualified_registry(const Plugin& plugin);

// Installs the resolver of qualified names in the process-wide MetricCatalog (idempotent). It
// resolves names of plugins this process loaded already (given with --plugin); a name of any
// other plugin throws, except in a rank worker, which loads the plugins its supervisor names.
// A name whose plugin cannot be loaded throws the loader's PluginError.
void install_plugin_resolver();

}  // namespace distmetrics::plugin
