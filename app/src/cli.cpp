#include "distmetrics/app/cli.h"

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdlib>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <ostream>
#include <sstream>

#include "commands.h"
#include "conform_command.h"
#include "explore_command.h"
#include "metrics_command.h"
#include "distmetrics/build_config.h"
#include "distmetrics/harness/engine.h"
#include "distmetrics/harness/report.h"
#include "distmetrics/harness/report_model.h"
#include "distmetrics/harness/scenario_files.h"
#include "distmetrics/harness/scenario_python.h"
#include "distmetrics/harness/session.h"
#include "distmetrics/harness/tables.h"
#include "distmetrics/harness/variant.h"
#include "distmetrics/plugin/conform.h"
#include "distmetrics/runtime/backends.h"
#include "distmetrics/runtime/launchers.h"
#include "distmetrics/runtime/peer_runner.h"
#include "distmetrics/runtime/rank_pool.h"
#include "distmetrics/runtime/text.h"

namespace distmetrics::app {
namespace {

using namespace harness;  // the CLI is a thin layer over the scenario engine

struct Options {
  std::vector<std::string> paths;
  Selection selection;
  bool json = false;
  std::optional<double> deadline;
  std::optional<double> rank_memory_gib;  // --rank-memory; default: runtime::default_rank_memory_bytes()
  std::string launcher;  // empty: the launcher that started this process, else local
  ReportFiles reports;  // --json, --junit, --html, --markdown
  ConsoleOptions console;
  bool allow_python = false;  // scenario files may call the Python they name
};

// --allow-python: without it, a scenario that names Python (data.python, data.structured,
// reference.python) is an error on that field, as a plugin a scenario names without --plugin is.
void add_allow_python_flag(CLI::App& command, bool& allow) {
  command.add_flag("--allow-python", allow,
                   "let scenario files call the Python callables they name (data.python, data.structured, reference.python; "
                   "docs/scenarios.md); without it such a scenario is an error");
}

void add_selection(CLI::App* cmd, Options& o) { add_selection_options(*cmd, o.paths, o.selection); }

// No scenario path was given and none was found: say where it looked (exit code 2).
bool report_not_found(const LoadedScenarios& loaded, std::ostream& err) {
  if (loaded.not_found.empty()) return false;
  err << "distmetrics: " << loaded.not_found << "\n";
  return true;
}

int cmd_validate(const Options& o, std::ostream& out, std::ostream& err) {
  const auto loaded = load_scenarios(o.paths);
  if (report_not_found(loaded, err)) return kBadInput;
  print_scenario_diagnostics(loaded.diagnostics, out);
  std::map<std::string, int> bad_files;
  for (const auto& d : loaded.diagnostics) ++bad_files[d.file];
  out << "distmetrics: " << loaded.files << " scenario file(s): " << loaded.scenarios.size() << " valid, "
      << bad_files.size() << " with errors (" << loaded.diagnostics.size() << " error(s))\n";
  return loaded.diagnostics.empty() && loaded.files > 0 ? 0 : kBadInput;
}

int cmd_list(const Options& o, std::ostream& out, std::ostream& err) {
  const auto loaded = load_scenarios(o.paths);
  if (report_not_found(loaded, err)) return kBadInput;
  print_scenario_diagnostics(loaded.diagnostics, err);
  const auto variants = selected_variants(loaded, o.selection);
  if (o.json) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& entry : variants) list.push_back(entry.second.to_json());
    out << list.dump(2) << "\n";
  } else {
    for (const auto& entry : variants) out << entry.second.id << "\n";
  }
  return loaded.diagnostics.empty() ? 0 : kBadInput;
}

// Everything a run needs before it starts: the selected variants, or an exit code.
struct SelectedRun {
  LoadedScenarios loaded;
  std::vector<std::pair<const Scenario*, Variant>> variants;
};

std::optional<int> prepare_run(const Options& o, SelectedRun& selected, std::ostream& err, bool quiet_errors) {
  if (o.deadline && !(*o.deadline > 0)) {
    if (!quiet_errors) err << "distmetrics: --deadline must be a positive number of seconds\n";
    return kBadInput;
  }
  auto loaded = load_scenarios_or_say(o.paths, "distmetrics", err, quiet_errors);
  if (!loaded) return kBadInput;
  selected.loaded = std::move(*loaded);
  selected.variants = selected_variants(selected.loaded, o.selection);
  return std::nullopt;
}

int finish_run(const Options& o, const std::vector<Verdict>& verdicts, ConsoleReport& console, const std::string& started,
               std::chrono::steady_clock::time_point start, std::ostream& err) {
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // One model of the verdicts; the console and every report file are views of it.
  const ReportModel model = report_model(verdicts, started, seconds);
  console.finish(model);
  const bool written = write_reports(o.reports, model, err);
  // A selection that matches nothing is a mistake (a typo in --filter), not a success.
  return exit_code(verdicts, !written || verdicts.empty());
}

std::vector<SessionItem> session_items(std::vector<std::pair<const Scenario*, Variant>> variants) {
  std::vector<SessionItem> items;
  for (auto& [scenario, variant] : variants) items.push_back({scenario, std::move(variant), std::nullopt});
  return items;
}

// Local launcher: this process supervises its own rank pools.
int run_local(const Options& o, std::ostream& out, std::ostream& err) {
  SelectedRun selected;
  if (auto code = prepare_run(o, selected, err, false)) return *code;
  const auto items = session_items(std::move(selected.variants));
  const auto started = now_iso8601();
  const auto start = std::chrono::steady_clock::now();
  SessionOptions options;
  options.engine.deadline_seconds = o.deadline;
  options.rank_memory_gib = o.rank_memory_gib;
  Session session(std::move(options));
  ConsoleReport console(out, static_cast<int>(items.size()), o.console);
  const auto verdicts = session.run(items, [&](const Verdict& v) { console.progress(v); });
  session.close();
  return finish_run(o, verdicts, console, started, start, err);
}

// Peer launchers (mpi, env): every process is a rank and runs the same variants in lockstep;
// rank 0 judges, prints and writes the reports, the others only take part.
int run_peers(const Options& o, const std::string& launcher, std::ostream& out, std::ostream& err) {
  auto runner = start_peers_or_say(launcher, o.rank_memory_gib, "distmetrics", err);
  if (!runner) return kBadInput;
  const bool reporter = runner->is_reporter();
  SelectedRun selected;
  // Every rank loads the same files; only rank 0 explains what is wrong with them.
  if (auto code = prepare_run(o, selected, err, !reporter)) return reporter ? *code : 0;
  const int world_size = runner->world_size();
  std::vector<std::pair<const Scenario*, Variant>> variants;
  std::size_t other_sizes = 0;
  for (auto& entry : selected.variants) {
    if (entry.second.world_size == world_size) variants.push_back(std::move(entry));
    else ++other_sizes;
  }
  if (reporter && other_sizes > 0)
    out << "distmetrics: launcher " << launcher << " runs world size " << world_size << " only: " << other_sizes
        << " selected variant(s) of other world sizes left out\n";
  const auto items = session_items(std::move(variants));

  const auto started = now_iso8601();
  const auto start = std::chrono::steady_clock::now();
  SessionOptions options;
  options.engine.deadline_seconds = o.deadline;
  Session session(std::move(options), *runner);
  std::ostringstream silent;
  ConsoleReport console(reporter ? out : silent, static_cast<int>(items.size()), o.console);
  const auto verdicts = session.run(items, [&](const Verdict& v) { console.progress(v); });
  // Every rank ends the run with the runner's code.
  return finish_peer_run(*runner, reporter ? finish_run(o, verdicts, console, started, start, err) : 0);
}

// `serve`: one long-lived runner for many requests (the pytest plugin keeps one per worker).
// Each stdin line names a variant: its id (looked up under PATHS), or a JSON object
// {"path": FILE_OR_FOLDER, "id": ID}. Each gets one stdout line: the variant's object of the JSON
// report. The rank pools live as long as the runner and respawn after a hang or a crash.
int cmd_serve(const Options& o, std::ostream& err) {
  // stdout carries the answers only: whatever else this process or its ranks write to fd 1 goes
  // to stderr, and the answers go to a private copy of the original stdout.
  std::cout.flush();
  std::fflush(stdout);
  const int answers_fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
  if (answers_fd < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
    err << "distmetrics serve: cannot set up stdout: " << std::strerror(errno) << "\n";
    return kBadInput;
  }
  FILE* answers = fdopen(answers_fd, "w");
  auto answer = [&](const Verdict& verdict) {
    const std::string line = verdict.to_json().dump() + "\n";
    std::fwrite(line.data(), 1, line.size(), answers);
    std::fflush(answers);
  };
  SessionOptions options;
  options.engine.deadline_seconds = o.deadline;
  options.rank_memory_gib = o.rank_memory_gib;
  // Requests come in the caller's order (pytest's: file by file, world sizes interleaved), not
  // grouped by pool as `run` groups them: keep a pool per world size of a usual file alive.
  options.max_pools = 3;
  Session session(std::move(options));
  std::map<std::vector<std::string>, LoadedScenarios> loaded_by_paths;  // each path list loaded once
  const int gpus = runtime::visible_gpu_count();
  std::string line;
  while (std::getline(std::cin, line)) {
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    if (line.empty()) continue;
    std::string id = line;
    std::vector<std::string> paths = o.paths;
    Verdict verdict;
    verdict.outcome = Outcome::Error;
    if (line.front() == '{') {
      const auto request = nlohmann::json::parse(line, nullptr, false);
      if (request.is_discarded() || !request.is_object() || !request.contains("id") || !request["id"].is_string()) {
        verdict.variant.id = line;
        verdict.reason = "a request must be a variant id or a JSON object {\"path\": ..., \"id\": ...}";
        answer(verdict);
        continue;
      }
      id = request["id"].get<std::string>();
      if (request.contains("path") && request["path"].is_string()) paths = {request["path"].get<std::string>()};
    }
    verdict.variant.id = id;
    auto found = loaded_by_paths.find(paths);
    if (found == loaded_by_paths.end()) found = loaded_by_paths.emplace(paths, load_scenarios(paths)).first;
    const LoadedScenarios& loaded = found->second;
    if (!loaded.not_found.empty() || !loaded.diagnostics.empty()) {
      std::ostringstream why;
      if (!loaded.not_found.empty()) why << loaded.not_found;
      print_scenario_diagnostics(loaded.diagnostics, why);
      verdict.reason = "the scenario files cannot be loaded: " + why.str();
      answer(verdict);
      continue;
    }
    // The id names its scenario and its parts: that one variant is made, no other expanded.
    const Scenario* scenario = nullptr;
    for (const auto& s : loaded.scenarios) {
      if (auto v = find_variant(s, id, gpus)) {
        scenario = &s;
        verdict.variant = std::move(*v);
        break;
      }
    }
    if (!scenario) {
      verdict.reason = "no variant '" + id + "' in the scenarios under " +
                       (paths.empty() ? default_scenario_path() : runtime::quoted_list(paths));
    } else {
      verdict = session.run(SessionItem{scenario, verdict.variant, std::nullopt});
    }
    answer(verdict);
  }
  session.close();
  std::fclose(answers);
  return 0;
}

int cmd_run(const Options& o, std::ostream& out, std::ostream& err) {
  std::string launcher = o.launcher;
  if (launcher.empty()) launcher = runtime::detect_launcher();
  if (launcher.empty()) launcher = runtime::local_launcher().name;
  if (!runtime::find_launcher(launcher)->peers) return run_local(o, out, err);
  return run_peers(o, launcher, out, err);
}

// The first word that is not a flag names the subcommand (the main command's own options are
// flags without values). One that does not exist is bad input naming it, with or without
// --help: CLI11 would print the main help and exit 0, or say only "A subcommand is required".
std::optional<std::string> unknown_subcommand(CLI::App& app, int argc, char** argv) {
  std::vector<std::string> names;
  for (const auto* sub : app.get_subcommands([](const CLI::App*) { return true; })) names.push_back(sub->get_name());
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "--") break;
    if (word.empty() || word.front() == '-') continue;
    if (std::find(names.begin(), names.end(), word) != names.end()) return std::nullopt;
    const auto close = runtime::closest_names(word, names);
    return "unknown subcommand '" + word + "' (" +
           (close.empty() ? "the subcommands are " + runtime::quoted_list(names)
                          : "did you mean " + std::string(close.size() > 1 ? "one of " : "") + runtime::quoted_list(close) + "?") +
           ")";
  }
  return std::nullopt;
}

// `tables`: harness::tables_json(), as JSON (--json) or one line per table for a person.
int cmd_tables(bool as_json, std::ostream& out) {
  const nlohmann::json tables = tables_json();
  if (as_json) {
    out << tables.dump(2) << "\n";
    return 0;
  }
  for (const auto& [key, value] : tables.items()) {
    std::string line;
    auto add = [&line](const std::string& text) { line += (line.empty() ? "" : ", ") + text; };
    if (value.is_array()) {
      for (const auto& entry : value) add(entry.is_object() ? entry.value("name", entry.dump()) : entry.get<std::string>());
    } else if (value.is_object()) {
      for (const auto& [name, v] : value.items()) add(name + " " + v.dump());
    } else {
      add(value.dump());
    }
    out << key << ": " << line << "\n";
  }
  return 0;
}

std::function<std::string()>& python_support_loader() {
  static std::function<std::string()> load;
  return load;
}

}  // namespace

void set_python_support_loader(std::function<std::string()> load) { python_support_loader() = std::move(load); }

namespace {

// The options of the commands cli.cpp runs itself (list, validate, run, serve) on the command
// table's commands.
void add_core_command_options(CLI::App& app, Options& o) {
  auto* list = app.get_subcommand("list");
  add_selection(list, o);
  list->add_flag("--json", o.json, "print a JSON array of variants with their markers and skip reasons");
  add_allow_python_flag(*list, o.allow_python);
  auto* validate = app.get_subcommand("validate");
  validate->add_option("paths", o.paths, "scenario files or folders (default: $DISTMETRICS_SCENARIOS, else ./scenarios, else the installed ones)");
  add_allow_python_flag(*validate, o.allow_python);
  auto* run = app.get_subcommand("run");
  add_selection(run, o);
  add_deadline_option(*run, o.deadline);
  add_launch_options(*run, o.rank_memory_gib, o.launcher);
  add_report_options(*run, o.reports);
  add_console_flags(*run, o.console);
  add_allow_python_flag(*run, o.allow_python);
  auto* serve = app.get_subcommand("serve");
  serve->add_option("paths", o.paths,
                    "where plain ids are looked up (default: $DISTMETRICS_SCENARIOS, else ./scenarios, else the "
                    "installed ones)");
  add_deadline_option(*serve, o.deadline);
  add_allow_python_flag(*serve, o.allow_python);
  serve->add_option("--rank-memory", o.rank_memory_gib, "GiB of address space each rank may use, as for `run`")
      ->check(CLI::Range(0.0, 4096.0));
}

// Parses the command line; the exit code when that is all there is to do (help, version, an
// error), nullopt when a command is to run.
std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv, std::ostream& out, std::ostream& err) {
  if (const auto unknown = unknown_subcommand(app, argc, argv)) {
    err << "distmetrics: " << *unknown << "\nRun 'distmetrics --help' for usage.\n";
    return kBadInput;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    out << app.help("", CLI::AppFormatMode::All);
    return 0;
  } catch (const CLI::CallForVersion& e) {
    out << e.what() << "\n";
    return 0;
  } catch (const CLI::ParseError& e) {
    // Point at the help of the command that was given, if one was.
    std::string command;
    for (const auto* sub : app.get_subcommands()) command = sub->get_name();
    err << "distmetrics: " << e.what() << "\n"
        << (command.empty() ? std::string("Run 'distmetrics --help' for usage.\n")
                            : "Run 'distmetrics " + command + " --help' for usage.\n");
    return kBadInput;
  }
  // A subcommand's --help is raised from within parse() as well; nothing else to do here.
  return std::nullopt;
}

}  // namespace

int cli_main(int argc, char** argv, std::ostream& out, std::ostream& err) {
  // The help and the version are the front's answers (commands.cpp), before LibTorch is even loaded
  // there; the same function gives them here for a caller of cli_main.
  if (const auto code = answer_help_or_version(argc, argv, out)) return *code;
  const auto main_app = make_main_app();  // the command table's commands; their options are added here
  CLI::App& app = *main_app;
  Options o;
  add_core_command_options(app, o);
  ConformOptions conform_options;
  auto* conform = add_conform_command(app, conform_options);
  add_allow_python_flag(*conform, o.allow_python);
  MetricsOptions metrics_options;
  auto* metrics = add_metrics_command(app, metrics_options);
  ExploreOptions explore_options;  // explore_command.h
  auto* explore = add_explore_command(app, explore_options);
  bool tables_as_json = false;
  auto* tables = app.get_subcommand("tables");  // its description: the command table (commands.cpp)
  tables->add_flag("--json", tables_as_json,
                   "print one JSON object (docs/cli-contract.md, \"tables\"): what the Python package reads");
  if (const auto code = parse_command_line(app, argc, argv, out, err)) return *code;
  const bool wants_python = o.allow_python || !conform_options.python.empty() || !explore_options.python.empty() ||
                            explore_options.allow_python;
  if (wants_python && python_support_loader()) {
    if (const std::string why = python_support_loader()(); !why.empty()) {
      err << "distmetrics: " << why << "\n";
      return kBadInput;
    }
  }
  harness::allow_scenario_python(o.allow_python);
  if (*conform) return run_conform(conform_options, out, err);
  if (*metrics) return run_metrics(metrics_options, out, err);
  if (*explore) return run_explore(explore_options, out, err);
  if (*tables) return cmd_tables(tables_as_json, out);
  if (!check_selection(o.selection, err)) return kBadInput;
  if (*app.get_subcommand("validate")) return cmd_validate(o, out, err);
  if (*app.get_subcommand("list")) return cmd_list(o, out, err);
  if (*app.get_subcommand("serve")) return cmd_serve(o, err);
  return cmd_run(o, out, err);
}

void add_deadline_option(CLI::App& command, std::optional<double>& deadline) {
  auto in_range = [](const std::string& text) -> std::string {
    char* end = nullptr;
    const double seconds = std::strtod(text.c_str(), &end);
    const bool number = !text.empty() && end && *end == '\0';
    // !(a <= x && x <= b) also refuses nan.
    if (number && std::isfinite(seconds) && seconds >= kMinDeadlineSeconds && seconds <= kMaxDeadlineSeconds) return "";
    std::ostringstream message;
    message << "'" << text << "' is not a deadline: give the seconds each variant may take, a number from "
            << kMinDeadlineSeconds << " to " << kMaxDeadlineSeconds;
    return message.str();
  };
  command.add_option("--deadline", deadline, "seconds each variant may take, every phase included (overrides the scenarios' deadline; " +
                                               std::to_string(static_cast<int>(kMaxDeadlineSeconds)) + " at most)")
      ->check(CLI::Validator(in_range, "SECONDS", "deadline"));
}

void add_selection_options(CLI::App& command, std::vector<std::string>& paths, harness::Selection& selection) {
  CLI::App* cmd = &command;
  cmd->add_option("paths", paths, "scenario files or folders (default: $DISTMETRICS_SCENARIOS, else ./scenarios, else the installed ones)");
  // Each occurrence takes exactly one (comma-separated) value, so paths may follow a selection
  // option ("list --world-sizes 2 scenarios"); repeating an option adds to it.
  auto one_value = [](CLI::Option* option) {
    option->expected(1)->allow_extra_args(false)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  };
  std::string backends;
  for (const auto& name : runtime::backend_names()) backends += (backends.empty() ? "" : ", ") + name;
  one_value(cmd->add_option("--backend", selection.backends, "backends to run: " + backends + " (comma-separated)")
                ->delimiter(','));
  one_value(cmd->add_option("--world-sizes", selection.world_sizes, "world sizes to run: a comma-separated list, e.g. 1,2,4 (repeat or list to run several)")->delimiter(','));
  one_value(cmd->add_option("--shard", selection.shards, "shard policies to run (comma-separated)")->delimiter(','));
  one_value(cmd->add_option("--placement", selection.placements, "placements to run (comma-separated)")
                ->delimiter(','));
  one_value(cmd->add_option("--dtype", selection.dtypes,
                            "input dtypes to run (comma-separated; only scenarios that list [variants] dtypes have them)")
                ->delimiter(','));
  one_value(cmd->add_option("--filter", selection.filters, "glob on variant ids; repeat to OR several"));
}

// The --launcher choices: the local pool, then every peer launcher some backend runs under (the
// backend table's peer_launchers), in table order.
static std::vector<std::string> launcher_choices() {
  std::vector<std::string> choices = {runtime::local_launcher().name};
  for (const auto& backend : runtime::backends())
    for (const auto& launcher : backend.peer_launchers)
      if (std::find(choices.begin(), choices.end(), launcher) == choices.end()) choices.push_back(launcher);
  return choices;
}

// --launcher's help, from the launcher table: "local (a supervised rank pool), mpi (...) or env
// (...); default: ...".
static std::string launcher_help() {
  const auto choices = launcher_choices();
  std::string help;
  for (size_t i = 0; i < choices.size(); ++i) {
    if (i > 0) help += i + 1 == choices.size() ? " or " : ", ";
    help += choices[i] + " (" + runtime::find_launcher(choices[i])->help + ")";
  }
  return help + "; default: the launcher that started this process, else " + runtime::local_launcher().name;
}

void add_launch_options(CLI::App& command, std::optional<double>& rank_memory_gib, std::string& launcher) {
  command.add_option("--rank-memory", rank_memory_gib,
                     "GiB of address space each rank of the local pool may use (RLIMIT_AS); past it the rank's "
                     "allocation fails and the variant's outcome is memory_exceeded, naming the rank; 0: no limit; default: a "
                     "third of this machine's memory, at least 4")
      ->check(CLI::Range(0.0, 4096.0));
  command.add_option("--launcher", launcher, launcher_help())->check(CLI::IsMember(launcher_choices()));
}

const char* const kPluginValue = "the plugin's shared library (lib<name>.so)";
const char* const kPythonSourceValue = "pkg.module:factory, pkg.module or file.py";

std::optional<LoadedScenarios> load_scenarios_or_say(const std::vector<std::string>& paths, const std::string& command,
                                                     std::ostream& err, bool quiet) {
  auto loaded = load_scenarios(paths);
  if (!loaded.not_found.empty()) {
    if (!quiet) err << command << ": " << loaded.not_found << "\n";
    return std::nullopt;
  }
  if (!loaded.diagnostics.empty()) {
    if (!quiet) {
      print_scenario_diagnostics(loaded.diagnostics, err);
      err << command << ": " << loaded.diagnostics.size() << " error(s) in the scenario files: nothing was run "
          << "(`distmetrics validate` lists them)\n";
    }
    return std::nullopt;
  }
  return loaded;
}

std::unique_ptr<runtime::PeerRunner> start_peers_or_say(const std::string& launcher, std::optional<double> rank_memory_gib,
                                                         const std::string& command, std::ostream& err) {
  try {
    return start_peer_runner(launcher, rank_memory_gib);
  } catch (const std::exception& e) {
    err << command << ": --launcher " << launcher << ": " << e.what() << "\n";
    return nullptr;
  }
}

void add_report_options(CLI::App& command, harness::ReportFiles& reports) {
  command.add_option("--json", reports.json, "write the JSON report to FILE");
  command.add_option("--junit", reports.junit, "write JUnit XML to FILE");
  command.add_option("--markdown", reports.markdown, "write a Markdown report (a pull-request comment) to FILE");
  command.add_option("--html", reports.html, "write a self-contained HTML report to FILE");
}

void add_console_flags(CLI::App& command, harness::ConsoleOptions& options) {
  command.add_flag("--quiet", options.quiet, "print only the variants that did not pass and the last line");
  command.add_flag("--verbose", options.verbose, "print a line per variant as it finishes (default: one symbol each)");
  command.add_flag("--hide-skips", options.hide_skips, "leave out the line that counts the skipped variants");
}

}  // namespace distmetrics::app
