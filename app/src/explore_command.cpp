// `distmetrics explore` (explore_command.h): its flags, and what it prints as the search goes.
// The search, the shrinking and the summary are the harness's (harness/explorer.h); a plugin's
// or Python source's cases run through conform's checks (plugin/explore.h).
#include "explore_command.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "distmetrics/app/cli.h"
#include "distmetrics/harness/explorer.h"
#include "distmetrics/harness/metric_catalog.h"
#include "distmetrics/harness/number_text.h"
#include "distmetrics/harness/outcome.h"
#include "distmetrics/harness/report.h"
#include "distmetrics/harness/scenario_python.h"
#include "distmetrics/metrics/registry.h"
#include "distmetrics/plugin/explore.h"
#include "distmetrics/plugin/loader.h"
#include "distmetrics/runtime/rank_pool.h"
#include "distmetrics/runtime/text.h"

namespace distmetrics::app {
namespace {

namespace ex = harness::explore;
using Clock = std::chrono::steady_clock;
constexpr int kMaxWorldSize = 8;

std::function<const plugin::Plugin&(const std::string&)>& python_loader() {
  static std::function<const plugin::Plugin&(const std::string&)> loader;
  return loader;
}

std::string fixed(double v) { return harness::fixed_text(v, 1); }

// What the search says as it goes: a progress line every 5 s (each run with --verbose; none but
// the last with --quiet), each failure and its shrinking, and a JSON line per case for --log.
class Printer : public ex::Listener {
 public:
  Printer(const ExploreOptions& options, std::ostream& out) : options_(options), out_(out) {}
  std::ofstream log;
  void case_ran(const ex::CaseRecord& record) override {
    if (log.is_open()) log << ex::log_line(record) << "\n" << std::flush;
  }
  void progress(const ex::Progress& p, bool last) override {
    if (options_.quiet && !last) return;
    if (!last && std::chrono::duration<double>(Clock::now() - last_).count() < 5 && !options_.verbose) return;
    last_ = Clock::now();
    out_ << "explore: " << fixed(p.seconds) << " s, " << p.cases << " case(s) tried (" << p.refused
         << " drawn and refused by the loader; " << p.slow << " slow hang(s) that finished with 3x the deadline"
         << (p.unjudged ? "; " + std::to_string(p.unjudged) + " past the budget, not judged" : std::string()) << "), "
         << p.shrink_cases << " shrink case(s), " << fixed(p.variants_per_second()) << " variants/s, " << p.failures
         << " failure(s)\n"
         << std::flush;
  }
  void not_judged(std::uint64_t index, const std::string& size) override {
    out_ << "explore: case " << index << " ran past its deadline with no sign of a bug (" << size
         << ") and the budget left no time to rerun it with 3x the deadline: not judged\n"
         << std::flush;
  }
  void failing(std::uint64_t index, const ex::Signature& sig, const harness::Verdict& v, const std::string& size) override {
    out_ << "explore: case " << index << " fails: " << sig.text() << ": " << runtime::first_line(v.reason)
         << "\n  shrinking " << size << " ...\n"
         << std::flush;
  }
  void shrunk(const ex::ShrunkFailure& f) override {
    out_ << "  shrunk in " << f.shrink_steps << " step(s) (" << f.shrink_tried << " candidate(s)"
         << (f.shrink_cut.empty() ? "" : "; " + f.shrink_cut) << ") to " << f.shrunk_size
         << (f.saved.empty() ? "" : ": " + f.saved) << "\n"
         << std::flush;
  }

 private:
  const ExploreOptions& options_;
  std::ostream& out_;
  Clock::time_point last_ = Clock::now();
};

// The coverage by axis ("world_size=3" -> axis world_size, value 3), each failure, the counts.
void print_summary(const ExploreOptions& o, const ex::Summary& s, std::ostream& out) {
  out << "explore: covered (cases per value):\n";
  for (const auto& [axis, values] : s.coverage_by_axis()) {
    out << "  " << axis << ":";
    for (const auto& [value, count] : values) out << " " << value << " (" << count << ")";
    out << "\n";
  }
  for (std::size_t i = 0; i < s.findings.size(); ++i) {
    const auto& f = s.findings[i];
    out << "explore: failure " << i + 1 << ": " << f.signature.text() << " (case " << f.index << ", after "
        << fixed(f.found_after) << " s): " << runtime::first_line(f.verdict.reason) << "\n  shrunk to " << f.shrunk_size
        << (f.saved.empty() ? "" : "\n  saved: " + f.saved) << "\n";
    if (o.verbose || f.saved.empty()) out << f.toml;
  }
  // Over the whole run (pool starts, respawns and reruns included), as a library run's.
  out << "explore: " << s.cases << " case(s) and " << s.shrink_cases << " shrink case(s) in " << fixed(s.seconds) << " s ("
      << fixed(s.variants_per_second()) << " variants/s; the first case ended after " << fixed(s.first_case_seconds.value_or(0))
      << " s, its rank pool's start included), " << s.findings.size() << " distinct failure(s)\n";
}

}  // namespace

void register_explore_python_loader(std::function<const plugin::Plugin&(const std::string& source)> loader) {
  python_loader() = std::move(loader);
}

CLI::App* add_explore_command(CLI::App& app, ExploreOptions& o) {
  auto* cmd = app.get_subcommand("explore");  // its description: the command table (commands.cpp)
  cmd->add_option("base", o.base, "a base scenario file whose metric, data generator and tolerance the cases start from "
                                  "(default: the metric's first scenario under the default scenarios, else a generated one)");
  cmd->add_option("--metric", o.metric, "the metric to explore (a reference metric, or one of --plugin/--python)");
  cmd->add_option("--param", o.params, "a metric parameter, key=value (repeatable); given ones are not varied")
      ->expected(1)->allow_extra_args(false)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--budget", o.budget, "seconds to search (required)")->required();
  cmd->add_option("--seed", o.seed, "the search's seed: the same seed draws the same cases (default 0)");
  cmd->add_option("--world-sizes", o.world_sizes, "world sizes to draw from, comma-separated (default: 1 to 8, as many as the local pool allows)")
      ->delimiter(',');
  cmd->add_option("--backend", o.backend, "the backend of every case (default gloo)");
  cmd->add_option("--plugin", o.plugin, std::string("explore a plugin's metric: ") + kPluginValue);
  cmd->add_option("--python", o.python, std::string("explore a Python source's metric: ") + kPythonSourceValue);
  cmd->add_option("--save", o.save_dir, "write each shrunk failure as a scenario file into DIR");
  cmd->add_option("--log", o.log_file, "write a JSON line per tried case to FILE");
  cmd->add_option("--json", o.json_file, "write the summary (findings, coverage, counts) as JSON to FILE");
  cmd->add_option("--markdown", o.markdown_file, "write the summary as Markdown to FILE");
  cmd->add_option("--junit", o.junit_file, "write JUnit XML to FILE: each finding's shrunk case as a failing test case "
                                           "(one passing case for the search when none was found)");
  cmd->add_option("--html", o.html_file, "write the HTML report of the findings' shrunk cases to FILE");
  cmd->add_option("--deadline", o.deadline, "seconds each case may take (default 10)")->check(CLI::Range(0.5, 600.0));
  cmd->add_option("--max-samples", o.max_samples, "the most samples a case draws (default 20000)")->check(CLI::Range(0, 1000000));
  cmd->add_option("--max-cases", o.max_cases, "stop after this many cases as well (default: the budget alone decides)")
      ->check(CLI::Range(0, 100000000));
  cmd->add_option("--batch", o.batch, "cases per world size before the next is drawn (default 8; 16 for a Python source)")
      ->check(CLI::Range(1, 256));
  cmd->add_option("--shrink-attempts", o.shrink_attempts, "candidate cases tried at most per failure (default 150)")
      ->check(CLI::Range(0, 100000));
  cmd->add_flag("--quiet", o.quiet, "print only the failures and the last lines");
  cmd->add_flag("--verbose", o.verbose, "a progress line after every run, and each shrunk scenario's text");
  cmd->add_flag("--allow-python", o.allow_python, "a base scenario may call the Python it names (as for `run`)");
  return cmd;
}

namespace {

// What explore runs: the metric's registry (the reference one, or the plugin's or Python
// source's), its source, the metric's parameters and the base scenario.
struct ExploredMetric {
  const metrics::MetricRegistry* registry = &metrics::MetricRegistry::reference();
  const plugin::Plugin* source = nullptr;
  ex::Target target;
  nlohmann::json params;
  std::optional<harness::Scenario> base;
};

// The plugin or Python source given (the space narrowed for it); what is wrong, or nullopt.
std::optional<std::string> load_source(const ExploreOptions& o, ex::Space& space, ExploredMetric& m) {
  try {
    if (!o.plugin.empty()) m.source = &plugin::load_plugin(o.plugin);
    if (!o.python.empty()) {
      if (!python_loader()) return "--python: this distmetrics was built without Python metrics";
      m.source = &python_loader()(o.python);
      space.max_batches_per_rank = 40;  // explore.h: a Python metric's call costs milliseconds
      space.max_batches_single = 100;
    }
  } catch (const std::exception& e) {
    const std::string what = e.what();
    const std::string option = o.plugin.empty() ? "--python" : "--plugin";
    if (what.rfind(option, 0) == 0) return what;  // the loader named it already
    return option + " " + (o.plugin.empty() ? o.python : o.plugin) + ": " + what;
  }
  if (m.source) {
    space.input_dtypes = false;  // explore.h: Space::input_dtypes
    m.registry = &m.source->registry;
    harness::MetricCatalog::instance().add("plugin " + m.source->path, &m.source->registry);
    m.target.source =
        o.python.empty() ? harness::MetricSource::plugin(m.source->path) : harness::MetricSource::python(o.python);
  }
  return std::nullopt;
}

// The metric, from the reference registry or the plugin or Python source given; its parameters
// and the base scenario. What is wrong, or nullopt.
std::optional<std::string> choose_metric(const ExploreOptions& o, ex::Space& space, ExploredMetric& m, std::ostream& err) {
  m.target.metric = o.metric;
  if (auto problem = load_source(o, space, m)) return problem;
  const auto& names = m.registry->names();
  if (o.metric.empty()) return "--metric NAME is required (it provides " + runtime::quoted_list(names) + ")";
  if (!m.registry->find(o.metric))
    return "--metric: no metric '" + o.metric + "'" + runtime::did_you_mean(o.metric, names) +
           (m.source ? " in " + m.source->name : std::string(" among the reference metrics")) + " (" +
           runtime::quoted_list(names) + ")";
  try {
    m.params = ex::metric_params(o.metric, m.registry->find(o.metric)->params, o.params);
  } catch (const std::invalid_argument& e) {
    return std::string(e.what());
  }
  space.vary_metric_params = m.params.empty();
  harness::allow_scenario_python(o.allow_python);
  try {
    m.base = ex::choose_base(o.metric, m.params, o.base, err);
  } catch (const std::invalid_argument& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

// "distmetrics explore: NAME (reference) around BASE, seed S, budget B s, world sizes ..., backend B"
void print_heading(const ExploreOptions& o, const ex::Space& space, const ExploredMetric& m, std::ostream& out) {
  out << "distmetrics explore: " << o.metric
      << (!m.source ? std::string(" (reference)")
                    : o.python.empty() ? " (plugin " + m.source->path + ")" : " (python " + o.python + ")")
      << " around " << (m.base->file.empty() ? std::string("a generated base") : m.base->file) << ", seed " << o.seed
      << ", budget " << fixed(o.budget) << " s, world sizes";
  for (int w : space.world_sizes) out << " " << w;
  out << ", backend " << space.backend << "\n";
}

}  // namespace

int run_explore(const ExploreOptions& o, std::ostream& out, std::ostream& err) {
  auto bad = [&err](const std::string& message) {
    err << "distmetrics explore: " << message << "\n";
    return kBadInput;
  };
  if (!(o.budget > 0)) return bad("--budget must be a positive number of seconds (the time to search)");
  if (!o.plugin.empty() && !o.python.empty()) return bad("give --plugin or --python, not both");
  ex::Options options{o.seed, o.budget, o.max_cases, o.batch, o.shrink_attempts, o.save_dir, {}};
  ex::Space& space = options.space;
  space.world_sizes = o.world_sizes;
  space.backend = o.backend;
  space.deadline_seconds = o.deadline;
  space.max_samples = o.max_samples;
  try {
    ex::check_space(space, std::min(kMaxWorldSize, runtime::max_local_world_size()));
  } catch (const std::invalid_argument& e) {
    return bad(e.what());
  }
  ExploredMetric m;
  if (const auto problem = choose_metric(o, space, m, err)) return bad(*problem);
  Printer printer(o, out);
  if (!o.log_file.empty()) {
    printer.log.open(o.log_file);
    if (!printer.log) return bad("--log: cannot write " + o.log_file);
  }
  // A C++ rank is light; a Python rank holds an interpreter and torch (about 0.3 GB).
  const std::size_t pools = std::min<std::size_t>(space.world_sizes.size(), o.python.empty() ? 8 : 3);
  const auto start = Clock::now();  // the budget counts from here: the runner's start is its first cost
  std::unique_ptr<ex::CaseRunner> runner;
  if (m.source) runner = std::make_unique<plugin::ExploreRunner>(*m.source, o.deadline, pools);
  else runner = std::make_unique<ex::SessionRunner>(pools);
  const double ready_after = std::chrono::duration<double>(Clock::now() - start).count();
  print_heading(o, space, m, out);
  ex::Summary summary;
  try {
    summary = ex::Explorer(options, *m.base, m.target, *runner, ready_after).run(printer);
  } catch (const std::runtime_error& e) {
    return bad(e.what());
  }
  runner.reset();  // ends the rank pools
  print_summary(o, summary, out);

  const harness::ReportFiles files{o.json_file, o.junit_file, o.html_file, o.markdown_file};
  if (!harness::write_reports(files, ex::report_model(summary), err)) return kBadInput;
  if (summary.cases == 0 && !summary.first_case_seconds)
    return bad("no case ran within the budget of " + fixed(o.budget) + " s (" + std::to_string(summary.refused) +
               " drawn and refused by the loader; starting the helper worker took " + fixed(summary.helper_ready_seconds) +
               " s): give a larger --budget");
  if (summary.cases == 0) return bad("no case ran (" + std::to_string(summary.refused) + " drawn, all refused by the loader)");
  // As a run exits (the outcome table's codes): nothing failed, or failures found.
  return harness::kind_of(summary.findings.empty() ? harness::Outcome::Pass : harness::Outcome::Fail).exit_code;
}

}  // namespace distmetrics::app
