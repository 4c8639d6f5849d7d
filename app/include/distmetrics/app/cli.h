// The distmetrics command line (docs/cli.md, docs/cli-contract.md):
//   distmetrics list     [PATHS...] [SELECTION] [--json]
//   distmetrics validate [PATHS...]
//   distmetrics run      [PATHS...] [SELECTION] [--deadline SECONDS] [--launcher local|mpi|env]
//                        [--json FILE] [--junit FILE] [--html FILE] [--markdown FILE]
//                        [--quiet | --verbose] [--hide-skips]
//   distmetrics serve    [PATHS...] [--deadline SECONDS] [--rank-memory GIB]
//   distmetrics conform  --plugin PATH [--metric NAME]... [PATHS...] [SELECTION] ...   (conform_command.h)
//   distmetrics metrics  [--json] [--plugin PATH]
//   SELECTION: [--backend B[,B..]] [--world-sizes 1,2,4] [--shard S[,S..]] [--placement P[,P..]]
//              [--filter GLOB]...
// The top layer: it parses flags and calls the harness and the plugin host; no checking or
// running logic lives here.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "distmetrics/harness/report.h"
#include "distmetrics/harness/report_model.h"
#include "distmetrics/harness/variant.h"

namespace CLI {
class App;
}

namespace distmetrics::app {

// Runs one command; returns the exit code (harness/report.h: exit_code(), kBadInputExitCode;
// the outcome table's codes). `argv[0]` is the program name.
int cli_main(int argc, char** argv, std::ostream& out, std::ostream& err);

// The exit code of bad input (flags, files), as every command returns it.
constexpr int kBadInput = harness::kBadInputExitCode;

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

}  // namespace distmetrics::app
