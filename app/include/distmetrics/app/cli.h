// The distmetrics command line (docs/cli.md, docs/cli-contract.md):
//   distmetrics list     [PATHS...] [SELECTION] [--json]
//   distmetrics validate [PATHS...]
//   distmetrics run      [PATHS...] [SELECTION] [--deadline SECONDS] [--launcher local|mpi|env]
//                        [--json FILE] [--junit FILE] [--html FILE] [--markdown FILE]
//                        [--quiet | --verbose] [--hide-skips]
//   distmetrics serve    [PATHS...] [--deadline SECONDS] [--rank-memory GIB]
//   distmetrics conform  --plugin PATH [--metric NAME]... [PATHS...] [SELECTION] ...   (conform_command.h)
//   distmetrics metrics  [--json] [--plugin PATH]
//   distmetrics tables   [--json]                                          (harness/tables.h)
//   SELECTION: [--backend B[,B..]] [--world-sizes 1,2,4] [--shard S[,S..]] [--placement P[,P..]]
//              [--filter GLOB]...
// The top layer: it parses flags and calls the harness and the plugin host; no checking or
// running logic lives here.
#pragma once

#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "distmetrics/harness/report.h"
#include "distmetrics/harness/report_model.h"
#include "distmetrics/harness/scenario_files.h"
#include "distmetrics/harness/variant.h"

namespace CLI {
class App;
}
namespace distmetrics::runtime {
class PeerRunner;
}

namespace distmetrics::app {

// Runs one command; returns the exit code (harness/report.h: exit_code(), kBadInputExitCode;
// the outcome table's codes). `argv[0]` is the program name.
int cli_main(int argc, char** argv, std::ostream& out, std::ostream& err);

// The exit code of bad input (flags, files), as every command returns it.
constexpr int kBadInput = harness::kBadInputExitCode;

// How cli_main loads the Python metrics' support when a command line asks for Python (--python,
// --allow-python): returns "" once loaded, else why not (the command then exits 2 saying so).
// The command sets it (entry.cpp: a module of its own, so that other commands start without
// Python and what it loads); unset, such a command goes on without (as a build without pyhost/).
void set_python_support_loader(std::function<std::string()> load);

// PATHS and the SELECTION flags, as `list`, `run` and `conform` take them.
void add_selection_options(CLI::App& command, std::vector<std::string>& paths, harness::Selection& selection);

// --deadline SECONDS, as `run` and `conform` take it: a finite number in [kMinDeadlineSeconds,
// kMaxDeadlineSeconds] (the scenario files' own limit), checked at parse time (exit 2).
constexpr double kMinDeadlineSeconds = 0.1;
constexpr double kMaxDeadlineSeconds = 3600;
void add_deadline_option(CLI::App& command, std::optional<double>& deadline);

// --rank-memory GIB and --launcher local|mpi|env, as `run` and `conform` take them.
void add_launch_options(CLI::App& command, std::optional<double>& rank_memory_gib, std::string& launcher);

// --quiet, --verbose and --hide-skips, as `run` and `conform` take them.
void add_console_flags(CLI::App& command, harness::ConsoleOptions& options);

// --json, --junit, --markdown and --html FILE: the report views, as `run` and `conform` take them.
void add_report_options(CLI::App& command, harness::ReportFiles& reports);

// What --plugin and --python take, as `conform` and `explore` say it.
extern const char* const kPluginValue;        // "the plugin's shared library (lib<name>.so)"
extern const char* const kPythonSourceValue;  // "pkg.module:factory, pkg.module or file.py"

// The scenarios of `paths` (the default library when none), or nullopt after saying on `err` what
// is wrong with them, each line headed `command` ("distmetrics conform"); nothing said when `quiet`
// (a peer rank other than 0).
std::optional<harness::LoadedScenarios> load_scenarios_or_say(const std::vector<std::string>& paths,
                                                              const std::string& command, std::ostream& err,
                                                              bool quiet = false);

// The peer runner of --launcher mpi|env, or null after saying why on `err` (exit 2).
std::unique_ptr<runtime::PeerRunner> start_peers_or_say(const std::string& launcher, std::optional<double> rank_memory_gib,
                                                         const std::string& command, std::ostream& err);

}  // namespace distmetrics::app
