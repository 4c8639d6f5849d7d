// The distmetrics command line (docs/cli-contract.md):
//   distmetrics list     [PATHS...] [SELECTION] [--json]
//   distmetrics validate [PATHS...]
//   distmetrics run      [PATHS...] [SELECTION] [--deadline SECONDS] [--launcher local|mpi|env]
//                        [--json FILE] [--junit FILE] [--quiet]
//   SELECTION: [--backend B[,B..]] [--world-sizes 1,2,4] [--shard S[,S..]] [--placement P[,P..]]
//              [--filter GLOB]...
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "distmetrics/harness/scenario.h"
#include "distmetrics/harness/variant.h"

namespace CLI {
class App;
}

namespace distmetrics::harness {

// Runs one command; returns the exit code (0 ok, 1 a property failed or an error outcome,
// 2 bad input, 3 a hang, 4 a crash). `argv[0]` is the program name.
int cli_main(int argc, char** argv, std::ostream& out, std::ostream& err);

// Where scenarios are looked for when no path is given: ./scenarios if it exists, else the
// installed scenario folder.
std::string default_scenario_path();

// --- For commands added from other parts (e.g. `conform`, plugin/) --------------------------

// A subcommand registered before cli_main() runs: `setup` adds its options, `run` runs it when
// chosen and returns the exit code.
struct CliCommand {
  std::string name;
  std::string description;
  std::function<void(CLI::App& command)> setup;
  std::function<int(std::ostream& out, std::ostream& err)> run;
};
void register_cli_command(CliCommand command);

// PATHS and the SELECTION flags, as `list` and `run` take them.
void add_selection_options(CLI::App& command, std::vector<std::string>& paths, Selection& selection);
// Unknown names in the selection flags: a message each (with close names); false if any.
bool check_selection_flags(const Selection& selection, std::ostream& err);

struct LoadedScenarios {
  std::vector<Scenario> scenarios;
  std::vector<Diagnostic> diagnostics;
  int files = 0;
};
// Every scenario under `paths` (default_scenario_path() when empty), with every problem found.
LoadedScenarios load_scenarios(std::vector<std::string> paths);
void print_scenario_diagnostics(const std::vector<Diagnostic>& diagnostics, std::ostream& os);
// Writes a report file (creating its folder); false, with a message on `err`, when it cannot.
bool write_report_file(const std::string& path, const std::string& text, std::ostream& err);

}  // namespace distmetrics::harness
