// What `distmetrics conform` (app/src/conform_command.h) adds to the scenario engine: does a
// plugin's metric behave like a distributed metric must?
//
// conform runs every scenario whose metric the plugin provides, with the plugin's metric on every rank,
// and checks every property of the scenario (docs/design.md) plus agrees_with_reference: on every
// variant, every rank's every compute equals the reference implementation's single-process
// result on the same data, within the scenario's tolerance. The plugin's own single-process
// runs happen on a helper worker, never in this process, so a plugin that throws, crashes,
// hangs or returns the wrong kind of value is reported on that variant and the run goes on.
// Exit codes as `distmetrics run`; a plugin that cannot be loaded, or has no scenario, is 2.
#pragma once

#include <nlohmann/json.hpp>

#include <iosfwd>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "distmetrics/harness/check.h"
#include "distmetrics/harness/data.h"
#include "distmetrics/runtime/job.h"
#include "distmetrics/harness/engine.h"
#include "distmetrics/runtime/deadline.h"
#include "distmetrics/runtime/rank_pool.h"
#include "distmetrics/harness/scenario.h"
#include "distmetrics/harness/shard.h"
#include "distmetrics/harness/variant.h"
#include "distmetrics/harness/verdict.h"
#include "distmetrics/plugin/loader.h"

namespace distmetrics::plugin {

constexpr const char* kAgreesWithReference = "agrees_with_reference";
// The task a helper worker runs to build a plugin's single-process reference.
constexpr const char* kPluginReferenceTask = "plugin_single_process";
// A no-op task: the helper worker is up (RemoteReference::warm_up).
constexpr const char* kHelperReadyTask = "plugin_helper_ready";
// The helper worker's task for agrees_with_reference: the reference implementation on the
// samples the ranks fed (harness::ReferenceData::AsFed).
constexpr const char* kReferenceAsFedTask = "reference_as_fed";

// Metrics from elsewhere than a plugin's shared library: Python sources (`--python`), which the
// CLI's main() registers when distmetrics was built with pyhost/. Such a source is presented as
// a Plugin (path: what its qualified names carry after '@'; registry: its metrics under their
// own names), so it is conformed exactly like a plugin.
struct ConformSource {
  // Loads the source; throws with a message that says what is wrong (conform exits 2).
  std::function<const Plugin&(const std::string& value, const std::vector<std::string>& metrics)> load;
  // Builds `metric` once with a scenario's parameters, before any variant runs; throws with why.
  // Returns the conventions it declares for them (a JSON object: "no_data", ...; docs/python.md).
  std::function<nlohmann::json(const Plugin& source, const std::string& metric, const nlohmann::json& params)> check;
  // Why a variant cannot run with this kind of metric (a backend it lacks), or empty.
  std::function<std::optional<runtime::Unavailable>(const harness::Variant& variant)> cannot_run;
  // The job every rank pool of the run (and the helper worker) runs as it starts: imports the
  // sources loaded so far, so that a pool's start, not a variant's deadline, pays for it.
  std::function<runtime::Job()> pool_warm_up;
  // Called once every source is loaded and checked, before any pool starts: lets workers start
  // with the sources already loaded (forked from a copy of this process); pool_warm_up then finds
  // them imported. Returns whether it could (false: the warm-up imports them).
  std::function<bool()> prepare_workers;
};
void register_python_conform_source(ConformSource source);
// The registered Python source, or null (distmetrics was built without pyhost/).
const ConformSource* python_conform_source();
// A Python source presented as a Plugin: its path starts with "python:".
bool is_python(const Plugin& plugin);

// The plugin's metrics to check into `metrics`: all, or those named by --metric (each must
// exist; false, with a message on `err`, when one does not).
bool select_metrics(const Plugin& plugin, const std::vector<std::string>& wanted, std::vector<std::string>& metrics,
                    std::ostream& err);

// Makes this process able to conform plugins and to serve as their rank worker: the resolver
// of qualified metric names (catalog.h), the helper task, and the `conform` command of the CLI.
// Call it first in main(), before runtime::run_worker_if_requested(). Idempotent.
void register_plugin_support();


// A scenario as conform runs it: the metric under its qualified name, with the parameters the
// plugin's metric takes; or why the plugin cannot run it (every variant is then a skip).
struct PluginScenario {
  harness::Scenario scenario;   // metric: qualified; metric_params: the plugin's
  harness::Scenario reference;  // as loaded: the reference implementation's
  std::string metric;           // the unqualified name
  std::optional<runtime::Unavailable> cannot_run;
};
PluginScenario adapt_scenario(const harness::Scenario& scenario, const Plugin& plugin,
                              const std::string& registered = "");
// What the metric declares for these parameters (ConformSource::check: "no_data", "precision",
// ...; docs/python.md), applied to how its variants are judged:
//  - no_data "zero"/"nan": a scenario that expects NotComputableError (no data anywhere) also
//    accepts that value, given alike by every rank and the single process (check_expected_error);
//  - precision "float32": judged within float32 rounding (the tolerance and golden's), as a
//    result observed to be float32 is (widened_for_dtypes), for a metric whose value cannot show
//    it (a float32 sum divided as a Python float).
void apply_declared_conventions(PluginScenario& ps, const nlohmann::json& conventions);

// `distmetrics conform --plugin P --metric M <file> --filter '<id>'` (and --deadline and
// --rank-memory if given: both can decide the outcome); `--python SOURCE` for a Python source
// (a Plugin whose path starts with "python:").
std::string conform_reproduce_command(const Plugin& plugin, const std::string& metric, const harness::Variant& variant,
                                      std::optional<double> deadline, std::optional<double> rank_memory_gib = std::nullopt);

// The single-process reference as JSON (it travels from the helper worker) and back.
nlohmann::json reference_to_json(const harness::SingleProcessReference& reference);
harness::SingleProcessReference reference_from_json(const nlohmann::json& j);

// Builds a plugin's single-process reference on a helper worker (a rank pool of one, respawned
// after a crash or a hang). A worker that crashes, hangs or raises gives a reference whose
// `failure` says so.
class RemoteReference {
 public:
  explicit RemoteReference(std::optional<double> deadline_seconds);
  ~RemoteReference();
  // The plugin's metric in one process on the variant's data, over its plan as the engine made it.
  harness::SingleProcessReference build(const harness::Scenario& scenario, const harness::Variant& variant,
                                        const harness::VariantPlan& plan);
  // The reference implementation (`reference`: the scenario as written) on the samples the
  // variant's ranks fed (its plan), its first `computes` computes, on the helper worker (no fork of this
  // process per variant: a supervisor that imported torch and a library pays tens of ms for
  // each), ended at `until`. timed_out: it did not finish by then.
  struct AsFed {
    harness::SingleProcessReference reference;
    bool timed_out = false;
  };
  AsFed build_as_fed(const harness::Scenario& reference, const harness::Variant& variant,
                     const harness::VariantPlan& plan, std::size_t computes, const runtime::Deadline& until);
  // Starts the helper worker now (a no-op job), so that its start (loading the plugin, or the
  // interpreter and a Python source) is not charged to the first variant's deadline. A helper
  // that cannot start is left for build() to report.
  void warm_up();
  // Run by the helper worker each time it (re)starts (runtime::PoolOptions::warm_up). Set it
  // before the helper starts.
  void set_pool_warm_up(std::optional<runtime::Job> job) { pool_warm_up_ = std::move(job); }

 private:
  std::optional<double> deadline_seconds_;
  std::optional<runtime::Job> pool_warm_up_;
  std::string backend_;
  std::unique_ptr<runtime::RankPool> pool_;
  void ensure_pool();
};

// What conform adds to the engine: each variant's single-process reference built on a helper
// worker (RemoteReference), and agrees_with_reference against the reference implementation. The
// one set of checks of `conform` and of explore's plugin and Python cases (explore.h).
struct ConformJudging {
  // Whether agrees_with_reference judges the computes where no rank had fed a sample: what
  // compute() returns there (raise, 0 or NaN) is the no-data convention a source declares
  // (docs/python.md), which conform judges where a scenario expects it and explore leaves out.
  bool computes_without_data = true;
};
class ConformChecks {
 public:
  // `scenarios` (every scenario of the run, adapted) must outlive this object.
  ConformChecks(const std::vector<PluginScenario>& scenarios, std::optional<double> deadline_seconds,
                ConformJudging judging = {});
  // A scenario added after construction (explore's case), which must outlive its variants' runs;
  // it takes the place of one of the same name and metric.
  void track(const PluginScenario& scenario);
  void warm_up();  // RemoteReference::warm_up
  void set_pool_warm_up(std::optional<runtime::Job> job) { remote_.set_pool_warm_up(std::move(job)); }
  // --deadline, the reference and the extra check; they refer to this object, which must
  // outlive the engine that uses them.
  harness::EngineOptions engine_options();

 private:
  harness::PropertyResult agrees_with_reference(const harness::CheckContext& ctx, const harness::ShardPlan& shards,
                                                const runtime::Deadline& until);
  std::optional<double> deadline_seconds_;
  ConformJudging judging_;
  RemoteReference remote_;
  std::map<std::pair<std::string, std::string>, const PluginScenario*> by_name_;
};

// agrees_with_reference on one variant: `reference` is the scenario as written (the reference
// implementation's metric), run on the variant's data, `shards` and script (ctx.plan) on
// `remote`'s helper worker (RemoteReference::build_as_fed), ended at `until`, the variant's
// deadline: then the property's outcome is Hang, naming the reference implementation.
harness::PropertyResult check_agrees_with_reference(const harness::CheckContext& ctx, const harness::Scenario& reference,
                                                    const harness::ShardPlan& shards, RemoteReference& remote,
                                                    const runtime::Deadline& until);

}  // namespace distmetrics::plugin
