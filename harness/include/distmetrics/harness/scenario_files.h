// Scenario files as a command takes them: every scenario under the given paths (or the default
// scenario folder), with every problem found, and the variants a selection keeps. Shared by
// `list`, `validate`, `run` and `conform`.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "distmetrics/harness/scenario.h"
#include "distmetrics/harness/variant.h"

namespace distmetrics::harness {

struct ScenarioFile {
  std::string path;  // as found (relative to the working directory when the argument was)
  std::string name;
};

// Scenario files under the given paths (files, or folders searched recursively for *.toml),
// sorted by name. A path that does not exist becomes a diagnostic. The name of a file is its
// path relative to the nearest enclosing folder called "scenarios", else to the folder given
// on the command line (or the file's own folder), without ".toml".
std::vector<ScenarioFile> find_scenario_files(const std::vector<std::string>& paths,
                                              std::vector<Diagnostic>& diagnostics);

// Where scenarios are looked for when no path is given: $DISTMETRICS_SCENARIOS when set (and
// nowhere else), else ./scenarios, else ../share/distmetrics/scenarios beside the executable
// (/proc/self/exe), so an installed tree works wherever its prefix is moved.
struct ScenarioSearch {
  std::optional<std::string> found;  // the first of `looked` that is a folder
  std::vector<std::string> looked;   // each place tried, with why ("... ($DISTMETRICS_SCENARIOS)")
  // "no scenario path given and no scenario folder found; looked in: ...; give ... or set ..."
  std::string not_found_message() const;
};
ScenarioSearch find_default_scenarios();
// find_default_scenarios().found, else "scenarios".
std::string default_scenario_path();

struct LoadedScenarios {
  std::vector<Scenario> scenarios;
  std::vector<Diagnostic> diagnostics;
  int files = 0;
  // Set when no path was given and no scenario folder was found: what was looked for, where.
  std::string not_found;
};
// Every scenario under `paths` (the default scenario folder when empty), with every problem found;
// two files that give the same scenario name are a problem too (their variant ids would collide).
LoadedScenarios load_scenarios(std::vector<std::string> paths);
void print_scenario_diagnostics(const std::vector<Diagnostic>& diagnostics, std::ostream& os);

// Unknown names in a selection (backends, shards, placements) and world sizes out of range: a
// message each on `err`, with close names; false if any.
bool check_selection(const Selection& selection, std::ostream& err);

// The variants of the loaded scenarios that `selection` keeps, in file order, with skip reasons
// for what this machine cannot run.
std::vector<std::pair<const Scenario*, Variant>> selected_variants(const LoadedScenarios& loaded,
                                                                   const Selection& selection);

}  // namespace distmetrics::harness
