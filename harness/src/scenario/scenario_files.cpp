#include "distmetrics/harness/scenario_files.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <ostream>

#include "distmetrics/harness/placement.h"
#include "distmetrics/harness/shard.h"
#include "distmetrics/harness/input_dtype.h"
#include "distmetrics/runtime/backends.h"
#include "distmetrics/runtime/text.h"

namespace distmetrics::harness {

namespace fs = std::filesystem;


std::vector<ScenarioFile> find_scenario_files(const std::vector<std::string>& paths, std::vector<Diagnostic>& diagnostics) {
  std::vector<ScenarioFile> files;
  auto name_for = [](const fs::path& file, const fs::path& fallback_root) {
    const fs::path absolute = fs::weakly_canonical(fs::absolute(file));
    for (fs::path dir = absolute.parent_path(); !dir.empty() && dir != dir.root_path(); dir = dir.parent_path()) {
      if (dir.filename() == "scenarios") return fs::relative(absolute, dir).replace_extension("").generic_string();
    }
    return fs::relative(absolute, fs::weakly_canonical(fs::absolute(fallback_root))).replace_extension("").generic_string();
  };
  for (const auto& p : paths) {
    std::error_code ec;
    const fs::path path(p);
    if (fs::is_regular_file(path, ec)) {
      files.push_back({path.generic_string(), name_for(path, path.parent_path().empty() ? fs::path(".") : path.parent_path())});
    } else if (fs::is_directory(path, ec)) {
      std::vector<fs::path> found;
      for (fs::recursive_directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec))
        if (it->is_regular_file(ec) && it->path().extension() == ".toml") found.push_back(it->path());
      if (ec) diagnostics.push_back({p, 0, 0, "", "cannot read the folder: " + ec.message()});
      for (const auto& f : found) files.push_back({f.generic_string(), name_for(f, path)});
    } else {
      diagnostics.push_back({p, 0, 0, "", "no such scenario file or folder"});
    }
  }
  std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  files.erase(std::unique(files.begin(), files.end(), [](const auto& a, const auto& b) { return a.name == b.name && a.path == b.path; }),
              files.end());
  return files;
}

ScenarioSearch find_default_scenarios() {
  ScenarioSearch search;
  auto consider = [&](const fs::path& folder, const std::string& why) {
    search.looked.push_back(folder.generic_string() + " (" + why + ")");
    std::error_code ec;
    if (!search.found && fs::is_directory(folder, ec)) search.found = folder.generic_string();
  };
  // An explicit override is the only place looked: a typo in it must not fall back silently.
  if (const char* env = std::getenv("DISTMETRICS_SCENARIOS"); env && *env) {
    consider(env, "$DISTMETRICS_SCENARIOS");
    return search;
  }
  consider("scenarios", "the current folder");
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec)
    consider((exe.parent_path() / DISTMETRICS_SCENARIOS_FROM_BINDIR).lexically_normal(),
             "the installed scenarios, beside " + exe.generic_string());
  return search;
}

std::string ScenarioSearch::not_found_message() const {
  std::string text = "no scenario path given and no scenario folder found; looked in:";
  for (const auto& place : looked) text += "\n  " + place;
  return text + "\ngive scenario files or folders as arguments, or set DISTMETRICS_SCENARIOS to a scenario folder";
}

std::string default_scenario_path() { return find_default_scenarios().found.value_or("scenarios"); }

LoadedScenarios load_scenarios(std::vector<std::string> paths) {
  LoadedScenarios loaded;
  if (paths.empty()) {
    const auto search = find_default_scenarios();
    if (!search.found) {
      loaded.not_found = search.not_found_message();
      return loaded;
    }
    paths.push_back(*search.found);
  }
  const auto files = find_scenario_files(paths, loaded.diagnostics);
  loaded.files = static_cast<int>(files.size());
  for (const auto& f : files) {
    auto result = load_scenario(f.path, f.name);
    if (result.scenario) loaded.scenarios.push_back(std::move(*result.scenario));
    for (auto& d : result.diagnostics) loaded.diagnostics.push_back(std::move(d));
  }
  std::map<std::string, std::string> seen;
  for (const auto& s : loaded.scenarios) {
    auto [it, fresh] = seen.emplace(s.name, s.file);
    if (!fresh && it->second != s.file)
      loaded.diagnostics.push_back({s.file, 0, 0, "", "scenario name '" + s.name + "' is also the name of " + it->second +
                                                         ": variant ids would collide; pass only one of them"});
  }
  return loaded;
}

void print_scenario_diagnostics(const std::vector<Diagnostic>& diagnostics, std::ostream& os) {
  for (const auto& d : diagnostics) os << d.to_string() << "\n";
}

bool check_selection(const Selection& s, std::ostream& err) {
  bool ok = true;
  auto check = [&](const std::vector<std::string>& given, const std::vector<std::string>& known, const char* flag) {
    for (const auto& g : given) {
      if (std::find(known.begin(), known.end(), g) != known.end()) continue;
      err << "distmetrics: " << flag << ": unknown value '" << g << "'" << runtime::did_you_mean(g, known)
          << " (known: " << runtime::quoted_list(known) << ")\n";
      ok = false;
    }
  };
  check(s.backends, runtime::backend_names(), "--backend");
  check(s.shards, shard_policy_names(), "--shard");
  check(s.placements, placement_names(), "--placement");
  check(s.dtypes, input_dtype_names(), "--dtype");
  for (int ws : s.world_sizes) {
    if (ws < 1 || ws > 64) {
      err << "distmetrics: --world-sizes: " << ws << " is not a world size (1 to 64)\n";
      ok = false;
    }
  }
  return ok;
}

std::vector<std::pair<const Scenario*, Variant>> selected_variants(const LoadedScenarios& loaded,
                                                                   const Selection& selection) {
  const int gpus = runtime::visible_gpu_count();
  std::vector<std::pair<const Scenario*, Variant>> out;
  for (const auto& s : loaded.scenarios)
    for (auto& v : expand_variants(s, gpus))
      if (selection.matches(v)) out.emplace_back(&s, std::move(v));
  return out;
}

}  // namespace distmetrics::harness
