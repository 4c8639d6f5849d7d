// `distmetrics conform`: the command (its flags, and the run over a harness::Session); what
// conform adds to a variant is the plugin host's (plugin/conform.h).
#include "conform_command.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <ostream>
#include <set>
#include <sstream>

#include "conform_report.h"
#include "distmetrics/app/cli.h"
#include "distmetrics/build_config.h"
#include "distmetrics/harness/input_dtype.h"
#include "distmetrics/harness/metric_id.h"
#include "distmetrics/harness/metric_catalog.h"
#include "distmetrics/harness/outcome.h"
#include "distmetrics/harness/property.h"
#include "distmetrics/harness/report.h"
#include "distmetrics/harness/scenario_files.h"
#include "distmetrics/harness/session.h"
#include "distmetrics/harness/tables.h"
#include "distmetrics/plugin/conform.h"
#include "distmetrics/runtime/thread_pools.h"
#include "distmetrics/runtime/peer_runner.h"
#include "distmetrics/runtime/rank_pool.h"
#include "distmetrics/runtime/backends.h"
#include "distmetrics/runtime/text.h"

namespace distmetrics::app {
namespace {

using harness::Outcome;
using harness::Verdict;
using nlohmann::json;
using namespace plugin;

bool contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

bool contains_plugin(const std::vector<const Plugin*>& list, const Plugin* item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

// One model of the verdicts; the console and every report file are views of it. A metric's own
// findings are said once each (every variant's verdict has it as accepts_empty_batch).
int report(const ConformOptions& o, const conform_report::ConformResult& result, harness::ConsoleReport& console,
           std::ostream& out, std::ostream& err) {
  harness::ReportModel model = conform_report::report_model(result);
  for (const auto& f : conform_report::metric_findings(result))
    out << "distmetrics conform: " << f.metric << " " << f.finding << " (" << f.error << "): " << f.variants.size()
        << " variant(s) ran the rest of their script without the empty update, so their other properties were still "
           "judged\n";
  console.finish(model);
  // The JSON report last, with the run's phases: the setup before the first variant, and the
  // writing of the other views (the JSON's own writing is all it leaves out).
  const auto writing = std::chrono::steady_clock::now();
  harness::ReportFiles views = o.reports, json_only;
  std::swap(views.json, json_only.json);
  bool written = harness::write_reports(views, model, err);
  model.json_fields["phases"] = {
      {"setup", result.setup_seconds},
      {"report", std::chrono::duration<double>(std::chrono::steady_clock::now() - writing).count()}};
  written = harness::write_reports(json_only, model, err) && written;
  return harness::exit_code(result.verdicts, !written);
}

// The sources to check and their selected metrics: one plugin, or every --python source (all in
// this one run: one rank pool per world size, each worker starting its interpreter once for all).
struct Sources {
  std::vector<const Plugin*> plugins;
  std::map<const Plugin*, std::vector<std::string>> metrics_of;
  std::vector<std::string> metrics;  // every selected metric name, for the messages
  bool python = false;
};

std::optional<Sources> load_sources(const ConformOptions& o, std::ostream& err) {
  Sources sources;
  try {
    if (o.python.empty()) sources.plugins.push_back(&load_plugin(o.plugin));
    for (const auto& source : o.python) {
      const Plugin* loaded = &python_conform_source()->load(source, o.metrics);
      if (!contains_plugin(sources.plugins, loaded)) sources.plugins.push_back(loaded);
    }
  } catch (const std::exception& e) {
    err << "distmetrics conform: " << e.what() << "\n";
    return std::nullopt;
  }
  const Plugin* plugin = sources.plugins.front();
  sources.python = is_python(*plugin);
  if (sources.plugins.size() == 1) {
    if (!select_metrics(*plugin, o.metrics, sources.metrics_of[plugin], err)) return std::nullopt;
    sources.metrics = sources.metrics_of[plugin];
    return sources;
  }
  // --metric names what to check in any of the sources; each must be in one of them.
  std::vector<std::string> provided;
  for (const auto* p : sources.plugins)
    for (const auto& name : p->metric_names()) {
      if (o.metrics.empty() || contains(o.metrics, name)) sources.metrics_of[p].push_back(name);
      if (!contains(provided, name)) provided.push_back(name);
    }
  for (const auto& name : o.metrics)
    if (!contains(provided, name)) {
      err << "distmetrics conform: --metric: no source given has a metric '" << name << "'"
          << runtime::did_you_mean(name, provided) << " (they provide " << runtime::quoted_list(provided) << ")\n";
      return std::nullopt;
    }
  sources.metrics = o.metrics.empty() ? provided : o.metrics;
  return sources;
}

// Each selected metric runs its reference's scenarios (several may stand for one reference:
// "Average" and "Average[SumMetric]", harness::reference_metric_name), adapted to its source.
struct Adapted {
  std::vector<PluginScenario> scenarios;
  std::vector<const Plugin*> source_of;  // per scenario
};

Adapted adapt_scenarios(const Sources& sources, const harness::LoadedScenarios& loaded) {
  Adapted adapted;
  for (const auto* p : sources.plugins)
    for (const auto& s : loaded.scenarios)
      for (const auto& name : sources.metrics_of.at(p))
        if (harness::reference_metric_name(name) == s.metric) {
          adapted.scenarios.push_back(adapt_scenario(s, *p, name));
          adapted.source_of.push_back(p);
        }
  return adapted;
}

std::string build_key(const PluginScenario& ps) { return ps.scenario.metric + " " + ps.scenario.metric_params.dump(); }

// A Python metric that cannot be built with a scenario's parameters is found before any variant
// runs. A factory or adapter that raises Unsupported: those variants are skips with its reason.
// Any other error: those variants are errors naming the parameters; but a metric that builds with
// none of them (the factory always raises, update() has the wrong signature for its adapter) is
// bad input (nullopt). What each metric declares for its parameters is applied to its scenarios.
// build_key -> a skip with why, or an error's message
struct CannotBuildIt {
  std::optional<runtime::Unavailable> skip;
  std::string error;
};
using CannotBuild = std::map<std::string, CannotBuildIt>;

std::optional<CannotBuild> check_python_builds(Adapted& adapted, std::ostream& err) {
  CannotBuild cannot_build;
  std::set<std::string> checked, builds;       // keys checked; metrics that built with some parameters
  std::map<std::string, json> conventions_of;  // key -> what the metric declares for those parameters
  std::map<std::string, std::pair<std::string, std::string>> first_failure;  // qualified -> (name, first error)
  for (std::size_t i = 0; i < adapted.scenarios.size(); ++i) {
    const auto& ps = adapted.scenarios[i];
    if (ps.cannot_run) continue;
    const std::string key = build_key(ps);
    if (!checked.insert(key).second) continue;
    try {
      conventions_of[key] = python_conform_source()->check(*adapted.source_of[i], ps.metric, ps.scenario.metric_params);
      builds.insert(ps.scenario.metric);
    } catch (const std::exception& e) {
      const std::string params = ps.scenario.metric_params.dump();
      if (runtime::exception_type_name(e) == harness::kUnsupportedType) {
        cannot_build[key] = {runtime::Unavailable(ps.metric + " does not support the parameters " + params + ": " +
                                                  runtime::first_line(e.what())),
                             ""};
        continue;
      }
      cannot_build[key] = {std::nullopt, ps.metric + "'s factory cannot build it with the parameters " + params + ": " +
                                             runtime::first_line(e.what())};
      if (!first_failure.count(ps.scenario.metric))
        first_failure[ps.scenario.metric] = {ps.metric, std::string(e.what()) + "\n  (scenario " + ps.scenario.file +
                                                            ", parameters " + params + ")"};
    }
  }
  for (auto& ps : adapted.scenarios) apply_declared_conventions(ps, conventions_of[build_key(ps)]);
  for (const auto& [qualified, failure] : first_failure) {
    if (builds.count(qualified)) continue;
    err << "distmetrics conform: " << failure.second << ": " << failure.first
        << " builds with none of its scenarios' parameters; nothing was run\n";
    return std::nullopt;
  }
  return cannot_build;
}

// The variants to run, each reproduced by its own conform command; a launcher runs one world size.
struct Item {
  const PluginScenario* scenario;
  const Plugin* source;
  harness::Variant variant;
  std::optional<std::string> build_error;  // the factory cannot build its parameters: an error, not run
};

std::vector<Item> variant_items(const ConformOptions& o, const Adapted& adapted, const CannotBuild& cannot_build,
                                bool python, runtime::PeerRunner* peers, std::size_t& other_sizes) {
  std::vector<Item> items;
  const int gpus = runtime::visible_gpu_count();
  for (std::size_t i = 0; i < adapted.scenarios.size(); ++i) {
    const auto& ps = adapted.scenarios[i];
    for (auto& v : harness::expand_variants(ps.scenario, gpus)) {
      if (!o.selection.matches(v)) continue;
      if (peers && v.world_size != peers->world_size()) {
        ++other_sizes;
        continue;
      }
      v.reproduce_command = conform_reproduce_command(*adapted.source_of[i], ps.metric, v, o.deadline, o.rank_memory_gib);
      if (ps.scenario.names_python()) v.reproduce_command += " --allow-python";
      if (ps.cannot_run && !v.skip) v.skip = *ps.cannot_run;
      std::optional<std::string> build_error;
      if (const auto it = cannot_build.find(build_key(ps)); it != cannot_build.end() && !v.skip) {
        if (it->second.skip) v.skip = it->second.skip;
        else build_error = it->second.error;
      }
      if (python && !v.skip) {
        if (auto why = python_conform_source()->cannot_run(v)) v.skip = std::move(why);
      }
      items.push_back({&ps, adapted.source_of[i], std::move(v), std::move(build_error)});
    }
  }
  return items;
}

// Several sources: how rows and headers name each ("MeanAbsoluteError (ignite)"); sources of one
// name (peers/ignite/metrics.py, peers/torcheval/metrics.py) by their folder as well.
std::map<const Plugin*, std::string> source_labels(const std::vector<const Plugin*>& plugins) {
  std::map<const Plugin*, std::string> label;
  for (const auto* p : plugins) {
    const bool shared = std::count_if(plugins.begin(), plugins.end(), [&](const Plugin* q) { return q->name == p->name; }) > 1;
    const std::string path = harness::MetricSource::parse(p->path).location;
    const auto slash = path.find_last_of('/');
    const auto folder = slash == std::string::npos || slash == 0 ? std::string::npos : path.find_last_of('/', slash - 1);
    const auto from = folder == std::string::npos ? 0 : folder + 1;
    label[p] = shared && slash != std::string::npos ? path.substr(from, slash - from) + "/" + p->name : p->name;
  }
  return label;
}

// The session that runs the items: conform's checks, the sources imported as the pools start.
std::unique_ptr<harness::Session> conform_session(const ConformOptions& o, bool python, bool any_runs,
                                                  runtime::PeerRunner* peers, ConformChecks& checks, std::ostream& out) {
  std::optional<runtime::Job> pool_warm_up;
  // Local pools fork their workers with the sources imported; peers (each rank its own
  // process, started by a launcher) import them in the warm-up.
  bool prepared = false;
  if (python && !peers && python_conform_source()->prepare_workers) {
    prepared = python_conform_source()->prepare_workers();
    if (!prepared)
      out << "distmetrics conform: rank workers cannot be forked with the sources imported, since other threads run in "
             "this process (" << runtime::other_threads_description() << "; a library the sources import started them "
             "as it loaded, past the thread-pool variables held at 1: docs/runtime.md): each worker imports them as its "
             "pool starts (seconds per rank)\n";
  }
  // Forked with the sources imported, workers have nothing to import: no warm-up job, which would
  // cost each (re)start of a pool a round trip and a process group (docs/performance.md).
  if (python && !prepared && python_conform_source()->pool_warm_up) pool_warm_up = python_conform_source()->pool_warm_up();
  checks.set_pool_warm_up(pool_warm_up);
  if (any_runs) checks.warm_up();
  harness::SessionOptions session_options;
  session_options.engine = checks.engine_options();
  session_options.rank_memory_gib = o.rank_memory_gib;
  session_options.pool_warm_up = pool_warm_up;
  return peers ? std::make_unique<harness::Session>(std::move(session_options), *peers)
               : std::make_unique<harness::Session>(std::move(session_options));
}

int conform_with(const ConformOptions& o, runtime::PeerRunner* peers, std::ostream& out, std::ostream& err) {
  const auto setting_up = std::chrono::steady_clock::now();
  auto sources = load_sources(o, err);
  if (!sources) return kBadInput;
  // Scenarios may name a metric only the plugin has (no reference implementation): they are
  // validated with the plugin's parameters. The reference's metrics keep the reference's.
  for (const auto* p : sources->plugins) harness::MetricCatalog::instance().add("plugin " + p->path, &p->registry);
  const auto loaded = load_scenarios_or_say(o.paths, "distmetrics conform", err);
  if (!loaded) return kBadInput;
  Adapted adapted = adapt_scenarios(*sources, *loaded);
  CannotBuild cannot_build;
  if (sources->python) {
    auto checked = check_python_builds(adapted, err);
    if (!checked) return kBadInput;
    cannot_build = std::move(*checked);
  }
  const Plugin* plugin = sources->plugins.front();
  if (adapted.scenarios.empty()) {
    std::string where;
    for (const auto& p : o.paths) where += (where.empty() ? "" : ", ") + p;
    err << "distmetrics conform: " << harness::kConformNoScenario << " " << (where.empty() ? harness::default_scenario_path() : where)
        << " uses " << runtime::quoted_list(sources->metrics) << " (the metric(s) of "
        << (sources->plugins.size() == 1 ? "plugin " : "sources ") << plugin->name
        << (sources->plugins.size() == 1 ? "" : " and the others") << " to check): give scenario files for them "
        << "(docs/plugins.md)\n";
    return kBadInput;
  }
  std::size_t other_sizes = 0;
  const std::vector<Item> items = variant_items(o, adapted, cannot_build, sources->python, peers, other_sizes);
  ConformChecks checks(adapted.scenarios, o.deadline);
  const bool any_runs =
      std::any_of(items.begin(), items.end(), [](const Item& item) { return !item.variant.skip && !item.build_error; });
  auto session = conform_session(o, sources->python, any_runs, peers, checks, out);

  for (const auto* p : sources->plugins)
    out << "distmetrics conform: " << (sources->python ? "python " : "plugin ") << p->describe() << "\n  " << p->path << "\n";
  out << "  checking " << runtime::quoted_list(sources->metrics) << " on " << items.size() << " variant(s) of "
      << adapted.scenarios.size() << " scenario(s)\n";
  if (peers && other_sizes > 0)
    out << "distmetrics conform: the launcher runs world size " << peers->world_size() << " only: " << other_sizes
        << " selected variant(s) of other world sizes left out\n";
  const auto started = harness::now_iso8601();
  const auto start = std::chrono::steady_clock::now();
  conform_report::ConformResult result;
  result.setup_seconds = std::chrono::duration<double>(start - setting_up).count();
  result.plugin = plugin;
  result.plugins = sources->plugins;
  result.labels = source_labels(sources->plugins);
  for (const auto& item : items) {
    result.metrics.push_back(sources->plugins.size() == 1 ? item.scenario->metric
                                                          : item.scenario->metric + " (" + result.labels[item.source] + ")");
    result.sources.push_back(item.source);
  }
  for (const auto& ps : adapted.scenarios) {
    auto& checked = result.checked[ps.scenario.name];  // the same for every source
    if (!checked.empty()) continue;
    for (const auto& property : harness::property_table())
      if (ps.scenario.checks(property.name)) checked.push_back(property.name);
    checked.push_back(kAgreesWithReference);
  }
  harness::ConsoleReport console(out, static_cast<int>(items.size()), o.console);
  std::vector<harness::SessionItem> session_items;
  for (const auto& item : items) session_items.push_back({&item.scenario->scenario, item.variant, item.build_error});
  result.verdicts = session->run(session_items, [&](const Verdict& v) { console.progress(v); });
  session->close();
  if (peers && !peers->is_reporter()) return 0;  // rank 0 alone reports
  result.started = started;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report(o, result, console, out, err);
}

}  // namespace

CLI::App* add_conform_command(CLI::App& app, ConformOptions& options) {
  auto* cmd = app.get_subcommand("conform");  // its description: the command table (commands.cpp)
  // Not ->required(): run_conform says what is missing and where to read more.
  cmd->add_option("--plugin", options.plugin, std::string(kPluginValue) + "; this or --python is required");
  cmd->add_option("--python", options.python,
                  std::string("or a Python source of metrics: ") + kPythonSourceValue + " (docs/python.md); "
                  "repeatable: every source is checked in one run, on one rank pool per world size")
      ->expected(1)
      ->allow_extra_args(false)  // one source per --python: what follows is a scenario path
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--metric", options.metrics, "check only this metric of the plugin (repeatable)")
      ->expected(1)
      ->allow_extra_args(false)  // one name per --metric: what follows is a scenario path
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  add_selection_options(*cmd, options.paths, options.selection);
  add_deadline_option(*cmd, options.deadline);
  add_launch_options(*cmd, options.rank_memory_gib, options.launcher);
  add_report_options(*cmd, options.reports);
  add_console_flags(*cmd, options.console);
  return cmd;
}

int run_conform(const ConformOptions& o, std::ostream& out, std::ostream& err) {
  if (o.plugin.empty() == o.python.empty()) {  // one plugin, or one or more Python sources
    err << "distmetrics conform: give one of --plugin PATH (the shared library of a plugin) or --python SOURCE (a "
           "Python module:factory, module or file.py; docs/python.md; `distmetrics conform --help` lists the options)\n";
    return kBadInput;
  }
  if (!o.python.empty() && !python_conform_source()) {
    err << "distmetrics conform: --python: this distmetrics was built without Python metrics ("
        << DISTMETRICS_PYHOST_MISSING << "); install python3-dev, pybind11-dev and python3-torch and rebuild\n";
    return kBadInput;
  }
  if (o.deadline && !(*o.deadline > 0)) {
    err << "distmetrics conform: --deadline must be a positive number of seconds\n";
    return kBadInput;
  }
  if (!harness::check_selection(o.selection, err)) return kBadInput;
  std::string launcher = o.launcher.empty() ? runtime::detect_launcher() : o.launcher;
  if (launcher.empty() || !runtime::find_launcher(launcher)->peers) return conform_with(o, nullptr, out, err);
  // Peer launchers (mpi, env): every process is a rank and runs the same variants in lockstep;
  // rank 0 judges, prints and writes the reports, the others only take part (as `run` does).
  // Loaded before the runner starts: under mpirun it forks its MPI agent (where mpi-backend
  // tasks run) and the agent knows only what was loaded by then. A failure is conform_with's to
  // report.
  try {
    if (o.python.empty()) load_plugin(o.plugin);
    for (const auto& source : o.python) python_conform_source()->load(source, o.metrics);
  } catch (const std::exception&) {
  }
  auto peers = start_peers_or_say(launcher, o.rank_memory_gib, "distmetrics conform", err);
  if (!peers) return kBadInput;
  const bool reporter = peers->is_reporter();
  std::ostringstream quiet;
  const int code = reporter ? conform_with(o, peers.get(), out, err) : conform_with(o, peers.get(), quiet, quiet);
  // Every rank ends the run with the runner's code.
  return harness::finish_peer_run(*peers, reporter ? code : 0);
}

}  // namespace distmetrics::app
