// The "scenario_variant" task: what every rank does for one variant. It generates the global
// data from the seed, takes its shard, places it, builds the metric with the variant's fresh
// communicator, runs the script and returns what it saw (a RankObservation).
//
// A metric error (InputError, NotComputableError, ...) is recorded and ends the script on this
// rank (but an empty batch's update() that raises is only recorded: the script goes on without it); the task still returns, so the supervisor sees which rank raised where. A collective
// error (timeout, mismatch) is rethrown: the runtime records where this rank was blocked.
#include <ATen/ATen.h>

#include <chrono>
#include <functional>
#include <memory>

#include "distmetrics/harness/engine.h"
#include "distmetrics/harness/input_dtype.h"
#include "distmetrics/runtime/backends.h"
#include "distmetrics/runtime/errors.h"
#include "distmetrics/runtime/phases.h"
#include "distmetrics/harness/metric_catalog.h"
#include "distmetrics/harness/observation.h"
#include "distmetrics/harness/placement.h"
#include "distmetrics/harness/property.h"
#include "distmetrics/runtime/text.h"
#include "../properties/rank_probe.h"

namespace distmetrics::harness {
namespace {

using Clock = std::chrono::steady_clock;
using runtime::PhaseScope;  // the rank's phases (runtime/phases.h), sent back with its outcome

double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }


metrics::Batch on_device(metrics::Batch batch, const c10::Device& device) {
  if (device.is_cpu()) return batch;
  batch.input = batch.input.to(device);
  if (batch.target.defined()) batch.target = batch.target.to(device);
  if (batch.weight.defined()) batch.weight = batch.weight.to(device);
  return batch;
}

std::string digest_of(const metrics::Metric& metric) {
  PhaseScope digesting("digest");
  return metric.state_digest();
}

}  // namespace

ComputeResult computed_result(metrics::Metric& metric, int step) {
  ComputeResult result;
  try {
    result.value = metric.compute().to_json();
  } catch (const runtime::CollectiveError&) {
    throw;
  } catch (const std::exception& e) {
    if (runtime::is_allocation_failure(e)) throw;
    const StepError raised = step_error(step, "compute", e);
    result.error_type = raised.type;
    result.error = raised.message;
  }
  return result;
}

// The task body: returns a RankObservation as JSON. Outside the anonymous namespace, so that a
// crash report's backtrace names it (distmetrics::harness::run_scenario_variant_task).
nlohmann::json run_scenario_variant_task(runtime::TaskContext& ctx);

// Registered once, when the library loads: the supervisor and every worker process have it.
static const bool scenario_task_registered = [] {
  runtime::TaskRegistry::instance().add(kScenarioTask, run_scenario_variant_task);
  return true;
}();

nlohmann::json run_scenario_variant_task(runtime::TaskContext& ctx) {
  const auto start = Clock::now();
  const Scenario scenario = Scenario::from_json(ctx.params.at("scenario"));
  const std::string shard = ctx.params.at("shard");
  const std::string placement = ctx.params.at("placement");
  const std::string dtype = ctx.params.value("dtype", "");

  RankObservation obs;
  obs.rank = ctx.rank;
  obs.comm_device = ctx.comm.device().str();
  int step = -1;
  std::string op = "setup";
  // A compute raised: the script stops there (obs.error says where), for peers may be waiting
  // in a collective this rank will never enter.
  bool stopped = false;
  // The rank-side probes of the properties the scenario checks (state_roundtrip's restored
  // instance, merge_state's merge), in table order on every rank.
  std::vector<std::pair<std::string, std::unique_ptr<RankProbe>>> probes;
  try {
    PhaseScope data_phase("data");
    const Dataset data = cast_to_input_dtype(generate_data(scenario.data), dtype);
    const VariantPlan planned = plan_variant(scenario, data, shard, ctx.world_size);
    data_phase.end();
    const ShardPlan& plan = planned.shards;
    const ScriptPlan& script = planned.script;
    const Placement* where = find_placement(placement);
    // GPUs are counted only for a GPU placement: counting initialises CUDA.
    const c10::Device gpu = where != nullptr && where->uses_gpu
                                ? rank_gpu(ctx.params.value("backend", ""), ctx.local_rank, runtime::visible_gpu_count())
                                : c10::Device(c10::kCPU);
    const RankDevices devices = place(placement, ctx.rank, gpu);
    // The rank is about to put tensors on a GPU: LibTorch's CUDA side first (runtime/backends.h).
    if (devices.state.is_cuda() || devices.input.is_cuda()) {
      if (auto why = runtime::load_cuda_side()) throw std::runtime_error("placement " + placement + ": " + *why);
    }
    obs.state_device = devices.state.str();
    obs.input_device = devices.input.str();
    obs.samples = plan.samples_of(ctx.rank);
    obs.batches = static_cast<std::int64_t>(plan.batches_of(ctx.rank));
    runtime::post_task_record(observation_header_record(obs));

    const auto* registry = MetricCatalog::instance().registry_for(scenario.metric);
    if (!registry)
      throw std::runtime_error("metric '" + scenario.metric + "' is not registered in this worker process (rank " +
                               std::to_string(ctx.rank) + "): the worker binary must register it as the supervisor does");
    auto make = [&] { return registry->make(scenario.metric, scenario.metric_params, devices.state); };
    PhaseScope build_phase("build");
    auto metric = make();
    metric->set_communicator(&ctx.comm);
    for (const auto& property : property_table())
      if (property.probe && scenario.checks(property.name))
        probes.emplace_back(property.name, property.probe(ProbeSetup{*metric, ctx.comm, make}));
    build_phase.end();

    const auto& mine = plan.ranks[ctx.rank];
    // [expect] error's compute raises, and the property that judges what follows is checked: the
    // script goes on past it (recovers_after_error), on every rank as in the single process.
    const bool past_expected_error = scenario.checks("recovers_after_error");
    for (std::size_t s = 0; s < script.steps.size(); ++s) {
      step = static_cast<int>(s);
      const std::size_t computes_before = obs.computes.size();
      const auto& action = script.steps[s];
      // What a crash report names: the step, its text and the method.
      const std::string where = "script step " + std::to_string(s + 1) + " ('" + scenario.script.at(s).text + "'): ";
      ctx.comm.set_issuer(step, action.compute);  // a desync is then named by compute
      // compute() number k on every rank: value (or error), digests, collectives; false when it
      // raised (the script stops there).
      auto compute_at = [&](int k) -> bool {
        ctx.comm.set_issuer(step, k);
        op = "compute";
        {
          PhaseScope probing("probes");
          for (auto& [name, probe] : probes) probe->before_compute(where);
        }
        runtime::set_task_context(where + "compute() " + std::to_string(k + 1));
        ComputeRecord record;
        record.index = k;
        record.step = step;
        record.digest_before = digest_of(*metric);
        const auto issued = ctx.comm.collectives_issued();
        const auto t0 = Clock::now();
        StepError raised;
        try {
          PhaseScope computing("compute");
          record.result.value = metric->compute().to_json();
        } catch (const runtime::CollectiveError&) {
          throw;
        } catch (const std::exception& e) {
          if (runtime::is_allocation_failure(e)) throw;  // the rank's memory limit: its outcome says so
          raised = step_error(step, op, e);
          record.result.error_type = raised.type;
          record.result.error = raised.message;
        }
        record.seconds = since(t0);
        record.collectives = ctx.comm.collectives_issued() - issued;
        record.digest_after = digest_of(*metric);
        if (!record.result.raised()) {
          // After the original's compute, on every rank alike, so the collectives pair up.
          PhaseScope probing("probes");
          for (auto& [name, probe] : probes)
            if (auto probed = probe->after_compute(step, where)) record.probed[name] = std::move(*probed);
        }
        obs.computes.push_back(record);
        if (record.result.raised() && past_expected_error && k == scenario.expect.compute &&
            raised.type == scenario.expect.error)
          return true;
        if (record.result.raised()) {
          // Peers may be waiting in a collective this rank will never enter: stop here.
          obs.error = raised;
          return false;
        }
        return true;
      };
      switch (action.op) {
        case Step::Op::Update:
        case Step::Op::Replay: {
          op = "update";
          const auto [from, to] = action.feed[ctx.rank];
          // A metric that rejects an empty batch: recorded (accepts_empty_batch judges it), and
          // the script goes on without this and every later empty update, so that the other
          // properties still judge the distributed result. Unsupported stops the script as any
          // error does (the variant is then a skip).
          if (!action.empty_update.empty() && action.empty_update[ctx.rank] && !obs.empty_rejected) {
            runtime::set_task_context(where + "update() of an empty batch");
            try {
              PhaseScope updating("update");
              metric->update(on_device(data.rows({}), devices.input));
            } catch (const runtime::CollectiveError&) {
              throw;
            } catch (const std::exception& e) {
              if (runtime::is_allocation_failure(e)) throw;
              StepError rejected = step_error(step, op, e);
              if (rejected.type == kUnsupportedType) throw;
              if (rejected.type == kNotApplicableType) {
                obs.empty_not_fed = rejected.message;  // a declared convention: nothing was fed
              } else {
                obs.empty_rejected = std::move(rejected);
              }
            }
            if (!obs.empty_rejected && obs.empty_not_fed.empty() && !probes.empty()) {
              PhaseScope probing("probes");
              const auto empty = on_device(data.rows({}), devices.input);
              for (auto& [name, probe] : probes) probe->updated(empty);
            }
          }
          auto feed = [&](std::size_t b) {
            runtime::set_task_context(where + "update() of batch " + std::to_string(b + 1) + " (" +
                                      std::to_string(mine[b].size()) + " samples)");
            PhaseScope slicing("data");
            const auto batch = on_device(data.rows(mine[b]), devices.input);
            slicing.end();
            {
              PhaseScope updating("update");
              metric->update(batch);
            }
            PhaseScope probing("probes");
            for (auto& [name, probe] : probes) probe->updated(batch);
          };
          if (action.round_computes.empty()) {
            for (std::size_t b = from; b < to; ++b) feed(b);
            break;
          }
          // After 'compute every': round t feeds this rank's t-th batch of the step, if it has
          // one, then every rank computes.
          for (std::size_t t = 0; t < action.round_computes.size() && !stopped; ++t) {
            op = "update";
            if (from + t < to) feed(from + t);
            if (!compute_at(action.round_computes[t])) stopped = true;
          }
          break;
        }
        case Step::Op::Reset:
          op = "reset";
          runtime::set_task_context(where + "reset()");
          metric->reset();
          for (auto& [name, probe] : probes) probe->reset();
          break;
        case Step::Op::Compute:
          if (!compute_at(action.compute)) stopped = true;
          break;
        case Step::Op::ComputeEvery:
          break;  // the update steps after it carry their computes (action.round_computes)
      }
      if (stopped) break;
      // The step is complete: the supervisor keeps it, whatever happens to this rank later.
      for (const auto& [name, probe] : probes) {
        if (!probe->skipped.empty()) obs.probe_skipped[name] = probe->skipped;
        if (!probe->error.empty()) obs.probe_error[name] = probe->error;
      }
      runtime::post_task_record(step_done_record(obs, step, computes_before));
    }
  } catch (const runtime::CollectiveError&) {
    throw;
  } catch (const std::exception& e) {
    if (runtime::is_allocation_failure(e)) throw;  // the rank's memory limit: its outcome says so
    obs.error = step_error(step, op, e);
  }
  for (const auto& [name, probe] : probes) {
    if (!probe->skipped.empty()) obs.probe_skipped[name] = probe->skipped;
    if (!probe->error.empty()) obs.probe_error[name] = probe->error;
  }
  probes.clear();  // they hold the metric's instances: gone with it
  runtime::set_task_context("");
  ctx.comm.set_issuer(-1, -1);
  obs.collectives = ctx.comm.collectives_issued();
  // Each record carries the step it was issued in (Communicator::set_issuer): the supervisor's
  // copy of the trace says it.
  for (const auto& record : ctx.comm.trace()) obs.trace.push_back(record.describe());
  obs.seconds = since(start);
  return obs.to_json();
}

}  // namespace distmetrics::harness
