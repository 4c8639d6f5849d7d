#include "distmetrics/harness/engine.h"

// The engine (engine.h): plans a variant, runs it on the ranks (who follow that plan) with its
// single-process reference beside them, and hands the result to the judging rules
// (harness/src/judging/).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <future>
#include <iomanip>
#include <memory>
#include <optional>
#include <sstream>

#include "distmetrics/harness/input_dtype.h"
#include "distmetrics/harness/internal/blame.h"
#include "distmetrics/harness/internal/judging.h"
#include "distmetrics/harness/number_text.h"
#include "distmetrics/harness/placement.h"
#include "distmetrics/harness/scenario_python.h"
#include "distmetrics/runtime/child_call.h"
#include "distmetrics/runtime/text.h"
#include "rank_variant.h"

namespace distmetrics::harness {
namespace {

using Clock = std::chrono::steady_clock;
using runtime::first_line;

std::chrono::milliseconds ms(double seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(seconds * 1000.0)));
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// The run's phases in the verdict's: the supervisor's as they are, each rank phase as the mean of
// the ranks that measured theirs (a rank ended in a hang sent none).
void add_run_phases(runtime::PhaseSeconds& phases, const runtime::JobResult& run) {
  for (const auto& [name, seconds] : run.phases) runtime::add_phase(phases, name, seconds);
  runtime::PhaseSeconds ranks;
  int measured = 0;
  for (const auto& rank : run.ranks) {
    if (rank.phases.empty()) continue;
    ++measured;
    for (const auto& [name, seconds] : rank.phases) runtime::add_phase(ranks, name, seconds);
  }
  for (const auto& [name, seconds] : ranks) runtime::add_phase(phases, name, seconds / measured);
}

// Adds the time from its making to its end to one phase.
class TimedPhase {
 public:
  TimedPhase(runtime::PhaseSeconds& phases, const char* phase) : phases_(phases), phase_(phase) {}
  ~TimedPhase() { runtime::add_phase(phases_, phase_, seconds_since(start_)); }
  TimedPhase(const TimedPhase&) = delete;
  TimedPhase& operator=(const TimedPhase&) = delete;

 private:
  runtime::PhaseSeconds& phases_;
  const char* phase_;
  Clock::time_point start_ = Clock::now();
};


}  // namespace

runtime::Job make_variant_job(const Scenario& scenario, const Variant& variant, const VariantPlan* plan,
                              double deadline_seconds, const std::string& plan_error) {
  RankVariant sent;
  sent.scenario = rank_scenario_of(scenario);
  sent.placement = variant.placement;
  sent.dtype = variant.dtype;
  sent.backend = variant.backend;
  if (plan) sent.plan = plan->to_json();
  sent.plan_error = plan ? "" : plan_error;
  runtime::Job job;
  job.id = variant.id;
  job.task = kScenarioTask;
  job.params = sent.to_json();
  job.backend = variant.backend;
  job.comm_device = comm_device_for(variant.placement, variant.backend);
  job.deadline = ms(deadline_seconds);
  // Collectives give up well before the variant's deadline, so that ranks report where they
  // were blocked instead of being ended as stuck.
  job.op_timeout = ms(std::max(0.5, deadline_seconds / 2));
  return job;
}

VariantPlan plan_variant(const Scenario& scenario, const Dataset& data, const std::string& shard, int world_size) {
  VariantPlan plan;
  plan.shards = make_shard_plan(shard, ShardSamples{data.size(), [&] { return data.sort_keys(); }}, world_size,
                                scenario.batch_size, scenario.data.seed);
  if (scenario.single_process == "per_step") pad_to_common_steps(plan.shards);
  std::vector<std::size_t> batches_per_rank;
  for (int r = 0; r < world_size; ++r) batches_per_rank.push_back(plan.shards.batches_of(r));
  plan.script = simulate_script(scenario.script, batches_per_rank);
  return plan;
}

Verdict skip_verdict(const Variant& variant) {
  Verdict v;
  v.variant = variant;
  v.outcome = Outcome::Skip;
  v.reason = variant.skip ? variant.skip->text : "skipped";
  v.skip_gist = variant.skip ? variant.skip->gist : "skipped";
  return v;
}

Engine::Engine(EngineOptions options) : options_(std::move(options)), baselines_(std::make_unique<judging::Baselines>()) {}

Engine::~Engine() = default;
Engine::Engine(Engine&&) noexcept = default;
Engine& Engine::operator=(Engine&&) noexcept = default;

const Dataset& Engine::data_for(const Scenario& scenario) {
  const std::string key = scenario.name + "@" + scenario.data.to_json().dump();
  auto it = data_.find(key);
  if (it == data_.end()) it = data_.emplace(key, generate_data(scenario.data)).first;
  return it->second;
}

Verdict Engine::run(const Scenario& scenario, const Variant& variant, runtime::JobRunner& runner) {
  if (variant.skip) return skip_verdict(variant);
  const double deadline = options_.deadline_seconds.value_or(scenario.deadline_seconds);
  const auto start = Clock::now();
  runtime::PhaseSeconds phases;
  // Planned once, here: the ranks follow this plan (it travels in their job), and the reference,
  // the shards the verdict shows and the checks use it.
  std::optional<Planned> planned;
  std::string plan_error;
  try {
    planned = plan(scenario, variant);
  } catch (const std::exception& e) {
    plan_error = e.what();  // no data or plan here: judge() says why, after the ranks
  }
  // The single-process reference needs only the scenario and its data: it computes beside the
  // ranks (in a child process, or where EngineOptions::single_process says, from a thread of its
  // own), so it adds no wall time of its own, and is ended at the deadline. The scenario is the
  // one judge() judges with: an input dtype's tolerance.
  StartedReference reference;
  std::optional<Scenario> judged;
  if (planned) {
    const Dataset& data = planned->data;
    const VariantPlan& plan = planned->plan;
    if (!options_.single_process) {
      reference.child = std::make_unique<runtime::ChildCall>(
          [&] { return reference_to_json(build_reference(scenario, data, plan.shards, plan.script)); });
    } else {
      judged = judged_for_input_dtype(scenario, variant.dtype);
      reference.beside = std::async(std::launch::async,
                                    [&] { return options_.single_process(*judged, variant, data, plan); });
    }
  }
  const runtime::Job job = make_variant_job(scenario, variant, planned ? &planned->plan : nullptr, deadline, plan_error);
  runtime::add_phase(phases, "plan", seconds_since(start));
  runtime::JobResult run;
  try {
    run = runner.run(job);
  } catch (const std::exception& e) {
    Verdict v;
    v.variant = variant;
    v.outcome = Outcome::Error;
    v.reason = "the ranks could not run the variant: " + first_line(e.what());
    v.diagnosis = e.what();
    v.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    v.phases = std::move(phases);
    return v;
  }
  add_run_phases(phases, run);
  const auto judging = Clock::now();
  judged_phases_.clear();
  Verdict v = judge(scenario, variant, run, planned ? &*planned : nullptr, plan_error, &reference, start);
  double judged_apart = 0;
  for (const auto& [name, seconds] : judged_phases_) {
    runtime::add_phase(phases, name, seconds);
    judged_apart += seconds;
  }
  runtime::add_phase(phases, "judging", seconds_since(judging) - judged_apart);
  v.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  v.phases = std::move(phases);
  return v;
}

runtime::Job Engine::job_for(const Scenario& scenario, const Variant& variant) {
  const double deadline = options_.deadline_seconds.value_or(scenario.deadline_seconds);
  try {
    const Planned planned = plan(scenario, variant);
    return make_variant_job(scenario, variant, &planned.plan, deadline);
  } catch (const std::exception& e) {
    return make_variant_job(scenario, variant, nullptr, deadline, e.what());
  }
}

Engine::Planned Engine::plan(const Scenario& scenario, const Variant& variant) {
  Planned planned{rounded_through_input_dtype(data_for(scenario), variant.dtype), {}};
  planned.plan = plan_variant(scenario, planned.data, variant.shard, variant.world_size);
  return planned;
}

Verdict Engine::judge(const Scenario& given, const Variant& variant, const runtime::JobResult& run,
                      const Planned* planned, const std::string& plan_error, StartedReference* started_reference,
                      Clock::time_point started) {
  // An input dtype's variant is judged with its tolerance, against its rounded values.
  const Scenario scenario = judged_for_input_dtype(given, variant.dtype);
  const double deadline = options_.deadline_seconds.value_or(scenario.deadline_seconds);
  judging::Judging j(scenario, variant, run, deadline);
  if (planned) {
    j.data = &planned->data;
    j.plan = &planned->plan;
  }
  j.plan_error = plan_error;
  j.elapsed = [started] { return std::chrono::duration<double>(Clock::now() - started).count(); };
  j.own_reference_builder = static_cast<bool>(options_.single_process);
  j.baselines = baselines_.get();
  j.build_reference = [&]() -> judging::ReferenceBuilt {
    return build_reference_for(scenario, variant, run, *planned, started_reference, started, deadline);
  };
  if (!options_.extra_checks.empty())
    j.extra_checks = [&](const CheckContext& ctx) {
      // Each ends at the variant's deadline: what the ranks and the reference left of it.
      const auto until = runtime::Deadline::after(ms(std::max(0.0, deadline - j.elapsed())));
      const auto checking = Clock::now();
      std::vector<PropertyResult> results;
      for (const auto& extra : options_.extra_checks) results.push_back(extra(ctx, planned->data, planned->plan.shards, until));
      runtime::add_phase(judged_phases_, "reference", seconds_since(checking));
      return results;
    };
  Verdict v = judging::judge(j);
  baselines_->record(j);
  return v;
}

judging::ReferenceBuilt Engine::build_reference_for(const Scenario& scenario, const Variant& variant,
                                                    const runtime::JobResult& run, const Planned& planned,
                                                    StartedReference* started, Clock::time_point started_at,
                                                    double deadline) {
  judging::ReferenceBuilt built;
  const Dataset& data = planned.data;
  const ShardPlan& shards = planned.plan.shards;
  const ScriptPlan& script = planned.plan.script;
  // The reference counts against the variant's deadline as the ranks do. Started beside the
  // ranks, it has the whole deadline from the variant's start; built after them, what they left.
  const double ranks_seconds = std::max(0.0, run.seconds - run.start_seconds);
  runtime::ChildCall* started_child = started ? started->child.get() : nullptr;
  const double budget = started_child ? deadline - std::chrono::duration<double>(Clock::now() - started_at).count()
                                      : deadline - ranks_seconds;
  SingleProcessReference& single = built.single;
  std::optional<TimedPhase> single_phase(std::in_place, judged_phases_, "single_process");
  if (options_.single_process) {
    // Started beside the ranks where run() could: its own deadline ends it (the helper's job).
    single = started && started->beside.valid() ? started->beside.get()
                                                : options_.single_process(scenario, variant, data, planned.plan);
  } else {
    // In a child process, so that a reference past its budget is ended, not waited for.
    const auto until = runtime::Deadline::after(ms(std::max(budget, 0.0)));
    const runtime::ChildCallResult child =
        started_child
            ? started_child->wait(until)
            : runtime::call_in_child(
                  [&] { return reference_to_json(build_reference(scenario, data, shards, script)); }, until);
    if (child.ended == runtime::ChildCallResult::Ended::TimedOut) {
      std::ostringstream left;
      if (started_child)
        left << "the variant's deadline of " << seconds_text(deadline) << " s (it ran beside the ranks, which took "
             << seconds_text(ranks_seconds) << " s)";
      else
        left << "the " << seconds_text(std::max(budget, 0.0)) << " s the ranks (" << seconds_text(ranks_seconds)
             << " s) left of the variant's deadline of " << seconds_text(deadline) << " s";
      built.timed_out = true;
      built.left = left.str();
      return built;
    }
    if (child.ended == runtime::ChildCallResult::Ended::Returned) {
      try {
        single = reference_from_json(child.value);
      } catch (const std::exception& e) {
        single.failure = std::string("its result could not be read back: ") + e.what();
      }
    } else {
      single.failure = child.ended == runtime::ChildCallResult::Ended::Died ? "it crashed (" + child.how_died + ")" : child.error;
    }
  }
  single_phase.reset();
  if (scenario.reference) {  // the Python callable on all the data: once per process (scenario_python.h)
    TimedPhase reference_phase(judged_phases_, "reference");
    ComputeResult reference;
    try {
      reference.value = python_reference_value(scenario, data);
    } catch (const std::exception& e) {
      reference.error_type = "ReferenceError";
      reference.error = e.what();
    }
    single.reference = std::move(reference);
  }
  return built;
}

}  // namespace distmetrics::harness
