// `distmetrics conform`: its flags and the command. What conform adds to the scenario engine
// (the adapted scenario, the helper worker's reference, agrees_with_reference) is the plugin
// host's: plugin/conform.h.
//
//   distmetrics conform --plugin PATH | --python SOURCE... [--metric NAME]... [PATHS...] [SELECTION]
//                       [--deadline S] [--rank-memory GIB] [--launcher local|mpi|env] [--json F]
//                       [--junit F] [--markdown F] [--html F] [--quiet | --verbose] [--hide-skips]
//
// Exit codes as `distmetrics run`; a plugin that cannot be loaded, or has no scenario, is 2.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "distmetrics/harness/report.h"
#include "distmetrics/harness/variant.h"

namespace CLI {
class App;
}

namespace distmetrics::app {

struct ConformOptions {
  std::string plugin;                // path of the plugin's shared library
  // Or Python sources (pkg.mod:factory, pkg.mod, file.py), all checked in one run: one rank pool
  // per world size for all of them, each worker starting its interpreter and importing torch once.
  std::vector<std::string> python;
  std::vector<std::string> metrics;  // --metric: only these of the plugin's metrics (empty: all)
  std::vector<std::string> paths;    // scenario files or folders (empty: the default scenarios)
  harness::Selection selection;
  std::optional<double> deadline;    // seconds per variant, overriding the scenarios'
  std::optional<double> rank_memory_gib;  // --rank-memory: each local rank's RLIMIT_AS (default: the pool's)
  std::string launcher;              // local, mpi or env; empty: the one that started this process
  harness::ReportFiles reports;      // --json, --junit, --markdown, --html
  harness::ConsoleOptions console;   // --quiet, --verbose, --hide-skips
};

// Gives `conform` (a command of `app`: commands.cpp) its flags, filling `options`; returns it.
CLI::App* add_conform_command(CLI::App& app, ConformOptions& options);

int run_conform(const ConformOptions& options, std::ostream& out, std::ostream& err);

}  // namespace distmetrics::app
