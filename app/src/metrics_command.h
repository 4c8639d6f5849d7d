// The `metrics` subcommand: every metric a scenario can name, with its parameters (types,
// defaults, choices, aliases), from the registries' own tables.
//   distmetrics metrics [--json] [--plugin PATH]
#pragma once

#include <iosfwd>
#include <string>

namespace CLI {
class App;
}

namespace distmetrics::app {

struct MetricsOptions {
  bool json = false;
  std::string plugin;  // list this plugin's metrics instead of the reference ones
};

// Gives `metrics` (a command of `app`: commands.cpp) its flags, filling `options`; returns it.
CLI::App* add_metrics_command(CLI::App& app, MetricsOptions& options);
// Prints the metrics (text, or JSON with --json); 2 when the plugin cannot be loaded.
int run_metrics(const MetricsOptions& options, std::ostream& out, std::ostream& err);

}  // namespace distmetrics::app
