// The "scenario_variant" task: what every rank does for one variant. It reads the variant as the
// supervisor planned it (rank_variant.h): its own batches and the script, followed as they are
// (a rank never plans); makes the rows it feeds from the data's spec, places them, builds the
// metric with the variant's fresh communicator, runs the script and returns what it saw (a
// RankObservation).
//
// A metric error (InputError, NotComputableError, ...) is recorded and ends the script on this
// rank (but an empty batch's update() that raises is only recorded: the script goes on without it); the task still returns, so the supervisor sees which rank raised where. A collective
// error (timeout, mismatch) is rethrown: the runtime records where this rank was blocked.
#include <ATen/ATen.h>

#include <algorithm>
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
#include "rank_variant.h"

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

namespace {

// One rank's run of one variant: what its steps share (the data and plan, the metric and the
// probes of the properties it checks, what the rank saw), each step a method.
// run_scenario_variant_task drives it.
class RankVariantRun {
 public:
  RankVariantRun(runtime::TaskContext& ctx, const RankScenario& scenario) : ctx_(ctx), scenario_(scenario) {
    obs_.rank = ctx.rank;
    obs_.comm_device = ctx.comm.device().str();
  }

  // The rank's part of the supervisor's plan, the rows it feeds; its devices; the metric and its
  // probes.
  void set_up(const RankVariant& variant);
  // The script, step by step, until its end or a compute that raised.
  void run_script();
  // An error of the metric (or of the setup): recorded where the rank was.
  void record_error(const std::exception& e) { obs_.error = step_error(step_, op_, e); }
  // What the rank saw, as it goes back to the supervisor.
  nlohmann::json finish(Clock::time_point start);

 private:
  void make_rows(const RankVariant& variant);
  void place(const std::string& placement, const std::string& backend);
  void build_metric();
  void run_update(const StepAction& action);
  void update_empty_batch();
  void feed(std::size_t b);
  bool compute_at(int k);
  void keep_probe_notes();

  runtime::TaskContext& ctx_;
  const RankScenario& scenario_;
  RankObservation obs_;
  int step_ = -1;
  std::string op_ = "setup";
  // A compute raised: the script stops there (obs_.error says where), for peers may be waiting
  // in a collective this rank will never enter.
  bool stopped_ = false;
  std::string where_;  // what a crash report names: the step and its text
  // The rows this rank feeds (data_.rows(batches_[b]) is its batch b), and the script.
  Dataset data_;
  std::vector<SampleIndices> batches_;
  ScriptPlan script_;
  RankDevices devices_{c10::Device(c10::kCPU), c10::Device(c10::kCPU)};
  std::function<std::unique_ptr<metrics::Metric>()> make_;
  // The rank-side probes of the properties the scenario checks (state_roundtrip's restored
  // instance, merge_state's merge), in table order on every rank. Declared before the metric, so
  // that the metric goes first, as it did when it was a local of the task's try block.
  std::vector<std::pair<std::string, std::unique_ptr<RankProbe>>> probes_;
  std::unique_ptr<metrics::Metric> metric_;
  // [expect] error's compute raises (any type), and the property that judges what follows is
  // checked: the script goes on past it (recovers_after_error), on every rank as in the single process.
  bool past_expected_error_ = false;
};

void RankVariantRun::set_up(const RankVariant& variant) {
  if (variant.plan.is_null())
    throw std::runtime_error("the supervisor could not plan the variant: " + variant.plan_error);
  PhaseScope data_phase("data");
  RankPlan mine = VariantPlan::rank_from_json(variant.plan, ctx_.rank);
  batches_ = std::move(mine.batches);
  script_ = std::move(mine.script);
  make_rows(variant);
  data_phase.end();
  place(variant.placement, variant.backend);
  for (const auto& batch : batches_) obs_.samples += static_cast<std::int64_t>(batch.size());
  obs_.batches = static_cast<std::int64_t>(batches_.size());
  runtime::post_task_record(observation_header_record(obs_));
  build_metric();
  past_expected_error_ = scenario_.checks("recovers_after_error");
}

// A generator's data: only the rows this rank feeds, made alone (its batches then index them);
// data that are read whole (a file, Python's) or made batch by batch (lazy) as they come.
void RankVariantRun::make_rows(const RankVariant& variant) {
  if (!generated_whole(scenario_.data)) {
    data_ = cast_to_input_dtype(generate_data(scenario_.data), variant.dtype);
    return;
  }
  SampleIndices rows;
  for (const auto& batch : batches_) rows.insert(rows.end(), batch.begin(), batch.end());
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  data_ = cast_to_input_dtype(generate_rows(scenario_.data, rows), variant.dtype);
  for (auto& batch : batches_)
    for (auto& index : batch) index = std::lower_bound(rows.begin(), rows.end(), index) - rows.begin();
}

void RankVariantRun::place(const std::string& placement, const std::string& backend) {
  const Placement* where = find_placement(placement);
  // GPUs are counted only for a GPU placement: counting initialises CUDA.
  const c10::Device gpu = where != nullptr && where->uses_gpu
                              ? rank_gpu(backend, ctx_.local_rank, runtime::visible_gpu_count())
                              : c10::Device(c10::kCPU);
  devices_ = harness::place(placement, ctx_.rank, gpu);
  // The rank is about to put tensors on a GPU: LibTorch's CUDA side first (runtime/backends.h).
  if (devices_.state.is_cuda() || devices_.input.is_cuda()) {
    if (auto why = runtime::load_cuda_side()) throw std::runtime_error("placement " + placement + ": " + *why);
  }
  obs_.state_device = devices_.state.str();
  obs_.input_device = devices_.input.str();
}

void RankVariantRun::build_metric() {
  const auto* registry = MetricCatalog::instance().registry_for(scenario_.metric);
  if (!registry)
    throw std::runtime_error("metric '" + scenario_.metric + "' is not registered in this worker process (rank " +
                             std::to_string(ctx_.rank) + "): the worker binary must register it as the supervisor does");
  make_ = [this, registry] { return registry->make(scenario_.metric, scenario_.metric_params, devices_.state); };
  PhaseScope build_phase("build");
  metric_ = make_();
  metric_->set_communicator(&ctx_.comm);
  for (const auto& property : property_table())
    if (property.probe && scenario_.checks(property.name))
      probes_.emplace_back(property.name, property.probe(ProbeSetup{*metric_, ctx_.comm, make_}));
}

void RankVariantRun::run_script() {
  const ScriptPlan& script = script_;
  for (std::size_t s = 0; s < script.steps.size(); ++s) {
    step_ = static_cast<int>(s);
    const std::size_t computes_before = obs_.computes.size();
    const auto& action = script.steps[s];
    where_ = "script step " + std::to_string(s + 1) + " ('" + scenario_.script.at(s).text + "'): ";
    ctx_.comm.set_issuer(step_, action.compute);  // a desync is then named by compute
    switch (action.op) {
      case Step::Op::Update:
      case Step::Op::Replay:
        run_update(action);
        break;
      case Step::Op::Reset:
        op_ = "reset";
        runtime::set_task_context(where_ + "reset()");
        metric_->reset();
        for (auto& [name, probe] : probes_) probe->reset();
        break;
      case Step::Op::Compute:
        if (!compute_at(action.compute)) stopped_ = true;
        break;
      case Step::Op::ComputeEvery:
        break;  // the update steps after it carry their computes (action.round_computes)
    }
    if (stopped_) break;
    // The step is complete: the supervisor keeps it, whatever happens to this rank later.
    keep_probe_notes();
    runtime::post_task_record(step_done_record(obs_, step_, computes_before));
  }
}

void RankVariantRun::run_update(const StepAction& action) {
  op_ = "update";
  const auto [from, to] = action.feed[ctx_.rank];
  // A metric that rejects an empty batch: recorded (accepts_empty_batch judges it), and the
  // script goes on without this and every later empty update, so that the other properties
  // still judge the distributed result. Unsupported stops the script as any error does (the
  // variant is then a skip).
  if (!action.empty_update.empty() && action.empty_update[ctx_.rank] && !obs_.empty_rejected) update_empty_batch();
  if (action.round_computes.empty()) {
    for (std::size_t b = from; b < to; ++b) feed(b);
    return;
  }
  // After 'compute every': round t feeds this rank's t-th batch of the step, if it has one, then
  // every rank computes.
  for (std::size_t t = 0; t < action.round_computes.size() && !stopped_; ++t) {
    op_ = "update";
    if (from + t < to) feed(from + t);
    if (!compute_at(action.round_computes[t])) stopped_ = true;
  }
}

void RankVariantRun::update_empty_batch() {
  runtime::set_task_context(where_ + "update() of an empty batch");
  try {
    PhaseScope updating("update");
    metric_->update(on_device(data_.rows({}), devices_.input));
  } catch (const runtime::CollectiveError&) {
    throw;
  } catch (const std::exception& e) {
    if (runtime::is_allocation_failure(e)) throw;
    StepError rejected = step_error(step_, op_, e);
    if (rejected.type == kUnsupportedType) throw;
    if (rejected.type == kNotApplicableType) {
      obs_.empty_not_fed = rejected.message;  // a declared convention: nothing was fed
    } else {
      obs_.empty_rejected = std::move(rejected);
    }
  }
  if (!obs_.empty_rejected && obs_.empty_not_fed.empty() && !probes_.empty()) {
    PhaseScope probing("probes");
    const auto empty = on_device(data_.rows({}), devices_.input);
    for (auto& [name, probe] : probes_) probe->updated(empty);
  }
}

void RankVariantRun::feed(std::size_t b) {
  runtime::set_task_context(where_ + "update() of batch " + std::to_string(b + 1) + " (" +
                            std::to_string(batches_[b].size()) + " samples)");
  PhaseScope slicing("data");
  const auto batch = on_device(data_.rows(batches_[b]), devices_.input);
  slicing.end();
  {
    PhaseScope updating("update");
    metric_->update(batch);
  }
  PhaseScope probing("probes");
  for (auto& [name, probe] : probes_) probe->updated(batch);
}

// compute() number k on every rank: value (or error), digests, collectives; false when it raised
// (the script stops there).
bool RankVariantRun::compute_at(int k) {
  ctx_.comm.set_issuer(step_, k);
  op_ = "compute";
  {
    PhaseScope probing("probes");
    for (auto& [name, probe] : probes_) probe->before_compute(where_);
  }
  runtime::set_task_context(where_ + "compute() " + std::to_string(k + 1));
  ComputeRecord record;
  record.index = k;
  record.step = step_;
  record.digest_before = digest_of(*metric_);
  const auto issued = ctx_.comm.collectives_issued();
  const auto t0 = Clock::now();
  StepError raised;
  try {
    PhaseScope computing("compute");
    record.result.value = metric_->compute().to_json();
  } catch (const runtime::CollectiveError&) {
    throw;
  } catch (const std::exception& e) {
    if (runtime::is_allocation_failure(e)) throw;  // the rank's memory limit: its outcome says so
    raised = step_error(step_, op_, e);
    record.result.error_type = raised.type;
    record.result.error = raised.message;
  }
  record.seconds = since(t0);
  record.collectives = ctx_.comm.collectives_issued() - issued;
  record.digest_after = digest_of(*metric_);
  if (!record.result.raised()) {
    // After the original's compute, on every rank alike, so the collectives pair up.
    PhaseScope probing("probes");
    for (auto& [name, probe] : probes_)
      if (auto probed = probe->after_compute(step_, k, where_)) record.probed[name] = std::move(*probed);
  }
  obs_.computes.push_back(record);
  // The declared compute raised: the script goes on whatever the type (another type than
  // [expect] error is expected_error's failure; what comes after is still recovers_after_error's).
  if (record.result.raised() && past_expected_error_ && k == scenario_.expect.compute) return true;
  if (record.result.raised()) {
    // Peers may be waiting in a collective this rank will never enter: stop here.
    obs_.error = raised;
    return false;
  }
  return true;
}

void RankVariantRun::keep_probe_notes() {
  for (const auto& [name, probe] : probes_) {
    if (!probe->skipped.empty()) obs_.probe_skipped[name] = probe->skipped;
    if (!probe->error.empty()) obs_.probe_error[name] = probe->error;
  }
}

nlohmann::json RankVariantRun::finish(Clock::time_point start) {
  metric_.reset();
  keep_probe_notes();
  probes_.clear();  // they hold the metric's instances: gone with it
  runtime::set_task_context("");
  ctx_.comm.set_issuer(-1, -1);
  obs_.collectives = ctx_.comm.collectives_issued();
  // Each record carries the step it was issued in (Communicator::set_issuer): the supervisor's
  // copy of the trace says it.
  for (const auto& record : ctx_.comm.trace()) obs_.trace.push_back(record.describe());
  obs_.seconds = since(start);
  return obs_.to_json();
}

}  // namespace

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
  const RankVariant variant = RankVariant::from_json(ctx.params);
  RankVariantRun run(ctx, variant.scenario);
  try {
    run.set_up(variant);
    run.run_script();
  } catch (const runtime::CollectiveError&) {
    throw;
  } catch (const std::exception& e) {
    if (runtime::is_allocation_failure(e)) throw;  // the rank's memory limit: its outcome says so
    run.record_error(e);
  }
  return run.finish(start);
}

}  // namespace distmetrics::harness
