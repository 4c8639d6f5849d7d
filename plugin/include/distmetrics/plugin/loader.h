// Loading plugins (the distmetrics side of abi.h).
//
// load_plugin() reads a plugin's build record from the file first and refuses, without loading
// it, a plugin built for another plugin interface, LibTorch or C++ ABI; then it loads the
// library, checks the same facts again from its entry point, and lets it register its metrics.
// Every refusal is a PluginError whose message names the file, what was expected and what was
// found, and what to do. A plugin is loaded once per process and never unloaded (its metrics'
// code must stay mapped).
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "distmetrics/metrics/registry.h"

namespace distmetrics::plugin {

enum class PluginErrorKind {
  Missing,             // no such file
  NotSharedLibrary,    // not an ELF file (or a folder)
  NotPlugin,           // a shared library, but without the build record or the entry point
  WrongInterface,      // built for another DISTMETRICS_PLUGIN_INTERFACE_VERSION
  WrongTorch,          // built against another LibTorch
  WrongCxxAbi,         // built with another _GLIBCXX_USE_CXX11_ABI
  LoadFailed,          // the dynamic loader refused it (missing library, undefined symbol)
  RegistrationFailed,  // its registration raised, or registered no metric
};
const char* to_string(PluginErrorKind kind);

class PluginError : public std::runtime_error {
 public:
  PluginError(PluginErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  PluginErrorKind kind() const { return kind_; }

 private:
  PluginErrorKind kind_;
};

// The facts a plugin was built with (abi.h, "build record").
struct BuildRecord {
  int interface_version = -1;
  std::string torch_version;
  std::string cxx11_abi;  // "0", "1" or "none"
  std::string distmetrics_version;
  std::string compiler;
  std::string text;  // as found

  // nullopt unless `text` starts with the record prefix and holds an integer interface.
  static std::optional<BuildRecord> parse(const std::string& text);
};

// What this distmetrics expects: its interface version and the LibTorch and C++ ABI it was
// compiled with (from LibTorch's headers, as a plugin's are).
BuildRecord host_build_record();

// Reads the build record from the file without loading it. Throws PluginError (Missing,
// NotSharedLibrary, NotPlugin).
BuildRecord read_build_record(const std::string& path);

// nullopt when a plugin built with `plugin` can be loaded by this distmetrics; else the
// refusal (WrongInterface, WrongTorch or WrongCxxAbi) naming `path`.
std::optional<PluginError> check_compatible(const BuildRecord& plugin, const std::string& path);

struct Plugin {
  std::string path;  // absolute, as loaded
  std::string name;
  std::string version;
  BuildRecord build;
  metrics::MetricRegistry registry;  // the plugin's metrics, under their own names

  std::vector<std::string> metric_names() const { return registry.names(); }
  // "acme_metrics 1.0.0 (interface 2, LibTorch 1.13.0, GCC 12.2.0)"
  std::string describe() const;
};

// Loads the plugin at `path` (once per process, by absolute path) with all the checks above.
// Throws PluginError. The returned plugin lives as long as the process.
const Plugin& load_plugin(const std::string& path);
// The plugin at `path` if this process has loaded it already (by the same absolute path), else
// nullptr. Never loads anything.
const Plugin* find_loaded_plugin(const std::string& path);

}  // namespace distmetrics::plugin
