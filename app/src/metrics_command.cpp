// The `distmetrics metrics` command: every metric a scenario can name, with its parameters.
//
//   distmetrics metrics [--json] [--plugin PATH]
//
// Without --plugin: the reference metrics; with it: the plugin's. Derived from the registries'
// ParamSpec tables, so it lists exactly what `validate` accepts.
#include "metrics_command.h"

#include <CLI/CLI.hpp>

#include <iomanip>
#include <ostream>
#include <sstream>

#include "distmetrics/app/cli.h"
#include "distmetrics/harness/report.h"
#include "distmetrics/metrics/registry.h"
#include "distmetrics/plugin/loader.h"

namespace distmetrics::app {
namespace {

nlohmann::json param_json(const metrics::ParamSpec& p) {
  return {{"name", p.name},
          {"type", p.type},
          {"required", p.required()},
          {"default", p.default_value},
          {"choices", p.choices},
          {"aliases", metrics::param_aliases(p.name)},
          {"description", p.description}};
}

nlohmann::json metrics_json(const metrics::MetricRegistry& registry, const std::string& source) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& name : registry.names()) {
    const auto* spec = registry.find(name);
    nlohmann::json params = nlohmann::json::array();
    for (const auto& p : spec->params) params.push_back(param_json(p));
    list.push_back({{"name", name},
                    {"source", source},
                    {"family", spec->family},
                    {"description", spec->description},
                    {"params", params}});
  }
  return list;
}

void print_text(const nlohmann::json& list, std::ostream& out) {
  for (const auto& m : list) {
    out << m["name"].get<std::string>() << "  (" << m["family"].get<std::string>() << ", "
        << m["source"].get<std::string>() << ")\n    " << m["description"].get<std::string>() << "\n";
    if (m["params"].empty()) out << "    (no parameters)\n";
    for (const auto& p : m["params"]) {
      std::ostringstream line;
      line << "    " << std::left << std::setw(16) << p["name"].get<std::string>() << " " << std::setw(10)
           << p["type"].get<std::string>() << " "
           << (p["required"].get<bool>() ? std::string("required") : "default " + p["default"].dump());
      if (!p["choices"].empty()) {
        line << "; one of";
        for (const auto& c : p["choices"]) line << " " << c.get<std::string>();
      }
      if (!p["aliases"].empty()) {
        line << "; also";
        for (const auto& a : p["aliases"]) line << " " << a.get<std::string>();
      }
      out << line.str() << "\n        " << p["description"].get<std::string>() << "\n";
    }
  }
}

}  // namespace

int run_metrics(const MetricsOptions& o, std::ostream& out, std::ostream& err) {
  nlohmann::json list;
  if (o.plugin.empty()) {
    list = metrics_json(metrics::MetricRegistry::reference(), "reference");
  } else {
    try {
      const plugin::Plugin& plugin = plugin::load_plugin(o.plugin);
      list = metrics_json(plugin.registry, "plugin " + plugin.name);
    } catch (const plugin::PluginError& e) {
      err << "distmetrics metrics: " << e.what() << "\n";
      return kBadInput;
    }
  }
  if (o.json) {
    out << list.dump(2) << "\n";
  } else {
    print_text(list, out);
  }
  return 0;
}

CLI::App* add_metrics_command(CLI::App& app, MetricsOptions& options) {
  auto* cmd = app.get_subcommand("metrics");  // its description: the command table (commands.cpp)
  cmd->add_flag("--json", options.json,
                "print a JSON array: name, source, family, description and params (name, type, required, "
                "default, choices, aliases, description)");
  cmd->add_option("--plugin", options.plugin, "list this plugin's metrics (its shared library) instead");
  return cmd;
}

}  // namespace distmetrics::app
