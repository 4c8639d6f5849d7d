// `distmetrics explore` (docs/explore.md): random scenarios around a metric for a time budget,
// each failure shrunk to a minimal scenario file.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}
namespace distmetrics::plugin {
struct Plugin;
}

namespace distmetrics::app {

struct ExploreOptions {
  std::string metric;
  std::vector<std::string> params;  // --param key=value
  std::string base;                 // a base scenario file (optional)
  double budget = 0;                // seconds of search (required)
  std::uint64_t seed = 0;
  std::vector<int> world_sizes;     // default: 1 .. what the local pool allows, at most 8
  std::string backend = "gloo";
  std::string plugin;               // --plugin PATH
  std::string python;               // --python SOURCE
  std::string save_dir;             // --save DIR: the shrunk scenarios
  std::string log_file;             // --log FILE: a JSON line per tried case
  std::string json_file;            // --json FILE: the summary
  std::string markdown_file;        // --markdown FILE: the summary as Markdown
  std::string junit_file, html_file;  // --junit, --html: the shrunk findings as variants (write_reports)
  double deadline = 10;             // each case's deadline
  std::int64_t max_samples = 20000;
  std::int64_t max_cases = 0;       // 0: as many as the budget allows
  int batch = 0;                    // cases per world size; 0: 8, or 16 for a Python source
  int shrink_attempts = 150;        // candidate cases at most, per failure
  bool quiet = false;
  bool verbose = false;
  bool allow_python = false;
};

// Gives `explore` (a command of `app`: commands.cpp) its flags, filling `options`; returns it.
CLI::App* add_explore_command(CLI::App& app, ExploreOptions& options);
int run_explore(const ExploreOptions& options, std::ostream& out, std::ostream& err);

// How `explore --python` loads a Python source as a plugin (python_support.cpp registers it
// where distmetrics was built with Python metrics).
void register_explore_python_loader(std::function<const plugin::Plugin&(const std::string& source)> loader);

}  // namespace distmetrics::app
