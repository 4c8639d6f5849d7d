// The scenario engine: runs one variant of a scenario on a set of ranks and judges it.
//
//   Engine engine;
//   LocalPools pools;                              // rank pools, reused across variants (session.h)
//   for (const auto& v : expand_variants(scenario, runtime::visible_gpu_count()))
//     Verdict verdict = engine.run(scenario, v, pools.runner_for(v));
//
// Each variant is planned once, here (its data, shards and script), and runs the
// "scenario_variant" task on every rank (a fresh process group per variant, from the runner),
// which follows that plan; beside them, the engine builds the single-process reference in a
// child process (or, with EngineOptions::single_process, where conform says: its helper worker),
// and hands the ranks' results to the judging rules (harness/src/judging/), which check the
// scenario's properties and turn hangs and crashes into verdicts with a diagnosis and a rank to
// blame.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "distmetrics/harness/check.h"
#include "distmetrics/harness/data.h"
#include "distmetrics/runtime/deadline.h"
#include "distmetrics/runtime/rank_pool.h"
#include "distmetrics/harness/scenario.h"
#include "distmetrics/harness/shard.h"
#include "distmetrics/runtime/task.h"
#include "distmetrics/harness/variant.h"
#include "distmetrics/runtime/job.h"
#include "distmetrics/harness/verdict.h"

namespace distmetrics::runtime {
class ChildCall;
}
namespace distmetrics::harness::judging {
class Baselines;
struct ReferenceBuilt;
}

namespace distmetrics::harness {

// The task every rank runs for a variant; registered with the runtime::TaskRegistry as "scenario_variant".
constexpr const char* kScenarioTask = "scenario_variant";

// One rank's part of a variant's plan: its own batches (global sample indices) and the script.
struct RankPlan {
  std::vector<SampleIndices> batches;
  ScriptPlan script;
};

// What every rank of a variant does: the shard plan (step-synchronous for single_process =
// "per_step") and the script simulated over it. The supervisor plans it once (plan_variant);
// the ranks and conform's helper worker receive it as JSON and follow it as it is.
struct VariantPlan {
  ShardPlan shards;
  ScriptPlan script;

  // The one wire form of a plan: each rank's batches as runs of index ranges (a few numbers per
  // rank for a policy that cuts ranges, whatever the number of samples; variant_plan.cpp), the
  // script's steps and computes.
  nlohmann::json to_json() const;
  static VariantPlan from_json(const nlohmann::json& j);
  // Rank `rank`'s part of to_json's form, the other ranks' batches left unread: a rank holds only
  // its own index lists.
  static RankPlan rank_from_json(const nlohmann::json& j, int rank);
};
VariantPlan plan_variant(const Scenario& scenario, const Dataset& data, const std::string& shard, int world_size);

// The job the engine has every rank run for a variant (harness/src/variants/rank_variant.h): what
// a rank reads of the scenario and the supervisor's plan, which every rank follows as it is (a
// rank never plans). `plan` null: the supervisor could not plan the variant, and every rank
// records `plan_error` as the error of its setup.
runtime::Job make_variant_job(const Scenario& scenario, const Variant& variant, const VariantPlan* plan,
                              double deadline_seconds, const std::string& plan_error = "");

// Which samples the single-process reference of a compute feeds: the union of what the ranks
// fed, each sample once (what a variant must equal: the answer on the data), or every sample as
// often as the ranks fed it (what a correct metric gives on those shards, duplicates counted:
// the like-with-like yardstick of agrees_with_reference).
enum class ReferenceData { Union, AsFed };

// What the single-process metric gave on the same data over the same batches, kept across the
// variants that share them (one scenario's world sizes and shard policies: the full result, and
// every compute whose fed samples coincide). A run is a function of the metric, its parameters,
// the data and the batches: `data_key` names the first three (the caller's scenario and input
// dtype); a new key drops what the old one kept, so one scenario's entries are held at a time.
struct ReferenceMemo {
  struct Entry {
    ComputeResult result;
    std::optional<std::vector<TraceEntry>> collectives;
    std::string failure;  // a run that could not reach compute() (building or an update raised)
  };
  void use(const std::string& key);
  std::string data_key;
  std::map<std::pair<std::vector<SampleIndices>, bool>, Entry> entries;  // by (batches, traced)
  std::size_t hits = 0;
  std::size_t runs = 0;
};

// Single-process results of a scenario for one variant's shard plan and script; with a memo,
// runs it already holds are not run again.
SingleProcessReference build_reference(const Scenario& scenario, const Dataset& data, const ShardPlan& shards,
                                       const ScriptPlan& script, ReferenceData what = ReferenceData::Union,
                                       ReferenceMemo* memo = nullptr);
// The metric run in this process, without a communicator, over the given batches.
ComputeResult single_process_result(const Scenario& scenario, const Dataset& data,
                                    const std::vector<SampleIndices>& batches);

// The verdict on a variant that cannot run here (variant.skip holds why).
Verdict skip_verdict(const Variant& variant);

struct EngineOptions {
  // Overrides every scenario's deadline (seconds per variant), e.g. from --deadline.
  std::optional<double> deadline_seconds;
  // Builds a variant's single-process reference instead of build_reference() in a child process:
  // `distmetrics conform` builds a plugin's on a helper worker, so that a plugin that crashes or
  // hangs without a communicator cannot take the supervisor down. Called on a thread of its own,
  // beside the ranks (it needs nothing of theirs), once per variant; run() waits for it.
  std::function<SingleProcessReference(const Scenario&, const Variant&, const Dataset&, const VariantPlan&)>
      single_process;
  // Properties judged after the scenario's own on a variant whose ranks all finished (e.g.
  // agrees_with_reference in `distmetrics conform`); a Fail fails the variant. `until` is the
  // variant's deadline: a check that cannot finish by then returns the outcome Hang, saying what
  // it was waiting for, and the variant is a hang.
  std::vector<std::function<PropertyResult(const CheckContext&, const Dataset&, const ShardPlan&, const runtime::Deadline& until)>>
      extra_checks;
};

class Engine {
 public:
  explicit Engine(EngineOptions options = {});
  ~Engine();
  Engine(Engine&&) noexcept;
  Engine& operator=(Engine&&) noexcept;

  // Runs and judges one variant. Never throws for a failing metric or runner: every outcome
  // (skip, pass, fail, hang, crash, error) is a verdict.
  Verdict run(const Scenario& scenario, const Variant& variant, runtime::JobRunner& runner);
  // The job of a peer rank that does not judge (Session): the variant planned here as run()
  // plans it, for its task to follow.
  runtime::Job job_for(const Scenario& scenario, const Variant& variant);

 private:
  // A variant's data (rounded through its input dtype) and its plan: made once per variant.
  struct Planned {
    Dataset data;
    VariantPlan plan;
  };
  Planned plan(const Scenario& scenario, const Variant& variant);
  // The single-process reference, computing beside the ranks since run() started it: in a child
  // process (`child`), or EngineOptions::single_process on a thread of its own (`beside`).
  struct StartedReference {
    std::unique_ptr<runtime::ChildCall> child;
    std::future<SingleProcessReference> beside;
  };
  // `planned`: run()'s plan (null: it could not be made, and `plan_error` says why).
  // `reference`: the single-process reference started beside the ranks at `started`; null or
  // empty: judge builds it after the ranks.
  Verdict judge(const Scenario& scenario, const Variant& variant, const runtime::JobResult& run, const Planned* planned,
                const std::string& plan_error, StartedReference* reference,
                std::chrono::steady_clock::time_point started);
  // The single-process reference of the planned variant, ended at its deadline.
  judging::ReferenceBuilt build_reference_for(const Scenario& scenario, const Variant& variant,
                                              const runtime::JobResult& run, const Planned& planned,
                                              StartedReference* reference, std::chrono::steady_clock::time_point started,
                                              double deadline);
  const Dataset& data_for(const Scenario& scenario);
  EngineOptions options_;
  // The judging's own phases of the variant being judged (single_process, reference).
  runtime::PhaseSeconds judged_phases_;
  std::map<std::string, Dataset> data_;  // per scenario name (+ seed)
  // What each scenario's metric issues per script step where the ranks agreed: the baseline of
  // an even split (harness/src/judging/blame.cpp).
  std::unique_ptr<judging::Baselines> baselines_;
};

}  // namespace distmetrics::harness
