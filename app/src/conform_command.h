// The `conform` subcommand's flags (the checking itself is the plugin host's: conform.h).
#pragma once

#include "distmetrics/plugin/conform.h"

namespace CLI {
class App;
}

namespace distmetrics::app {

// Adds `conform` to `app`, its flags filling `options`; returns the subcommand.
CLI::App* add_conform_command(CLI::App& app, plugin::ConformOptions& options);

}  // namespace distmetrics::app
