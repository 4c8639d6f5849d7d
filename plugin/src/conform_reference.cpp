// The two single-process references of a conformance run:
// - the plugin's own (for equal_to_single and the other properties), built on a helper worker
//   so that a plugin that crashes or hangs without a communicator cannot take the supervisor
//   down: the "plugin_single_process" task and RemoteReference;
// - the reference implementation's, built here, for agrees_with_reference.
#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <sstream>

#include "distmetrics/runtime/backends.h"
#include "distmetrics/harness/engine.h"
#include "distmetrics/runtime/task.h"
#include "distmetrics/runtime/text.h"
#include "distmetrics/harness/input_dtype.h"
#include "distmetrics/harness/number_text.h"
#include "distmetrics/plugin/conform.h"
#include "distmetrics/runtime/launchers.h"

namespace distmetrics::plugin {
namespace {

using harness::ComputeResult;
using harness::Outcome;
using harness::PropertyResult;
using harness::SingleProcessReference;
using nlohmann::json;

std::chrono::milliseconds ms(double seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(seconds * 1000.0)));
}

using runtime::first_line;

// What both helper tasks start from: the job's scenario, the variant's data (for an input dtype's
// variant, the values the ranks were fed, rounded through that dtype, as the engine's own
// reference has them) and the variant's plan as the supervisor made it (the helper never plans).
// The helper worker serves a scenario's variants one after another: what depends only on the
// scenario and the input dtype (the data, and the single-process runs over the same batches) is
// made once and kept until the next scenario (issue 43: paid once, not per variant).
struct HelperInput {
  std::string data_key;  // the metric, its parameters, the data and the input dtype: the memo's key
  harness::Scenario scenario;
  harness::Dataset data;
  harness::VariantPlan plan;
};
const HelperInput& helper_input(const runtime::TaskContext& ctx) {
  static HelperInput in;
  static std::string made_from;  // the data spec and dtype in.data was made from
  const std::string dtype = ctx.params.value("dtype", std::string());
  // A run is a function of the metric, its parameters, the data and the batches (the memo's own
  // key): not of the scenario's name, world sizes, shards or script, which the own rows' .ws2 and
  // .ws4 scenarios of one class change.
  const json& given = ctx.params.at("scenario");
  in.data_key = json::array({given.at("metric"), given.at("metric_params"), given.at("data")}).dump() + "\n" + dtype;
  in.scenario = harness::Scenario::from_json(ctx.params.at("scenario"));
  std::string data_spec = ctx.params.at("scenario").at("data").dump() + "\n" + dtype;
  if (data_spec != made_from) {  // the conform run's two tasks share it: the metric's and the reference's data are one
    made_from.clear();           // until the data is made: a throw below leaves nothing half kept
    in.data = harness::rounded_through_input_dtype(harness::generate_data(in.scenario.data), dtype);
    made_from = std::move(data_spec);
  }
  in.plan = harness::VariantPlan::from_json(ctx.params.at("plan"));
  return in;
}

// Runs on the helper worker: the plugin's metric (resolved by its qualified name) in one
// process, without a communicator, on the variant's data.
json plugin_single_process_task(runtime::TaskContext& ctx) {
  static harness::ReferenceMemo memo;
  SingleProcessReference reference;
  try {
    const HelperInput& in = helper_input(ctx);
    memo.use(in.data_key);
    reference = harness::build_reference(in.scenario, in.data, in.plan.shards, in.plan.script,
                                         harness::ReferenceData::Union, &memo);
  } catch (const std::exception& e) {  // e.g. the plugin cannot be loaded here
    reference.failure = e.what();
  }
  json out = harness::reference_to_json(reference);
  out["memo"] = {{"runs", memo.runs}, {"hits", memo.hits}};  // read by the tests, ignored otherwise
  return out;
}

// Runs on the helper worker: the reference implementation on the samples the ranks fed (as often
// as they fed them), through the variant's judged computes.
json reference_as_fed_task(runtime::TaskContext& ctx) {
  static harness::ReferenceMemo memo;
  const HelperInput& in = helper_input(ctx);
  memo.use(in.data_key);
  harness::ScriptPlan script = in.plan.script;
  const auto computes = ctx.params.at("computes").get<std::size_t>();
  if (computes < script.computes.size()) script.computes.resize(computes);
  return harness::reference_to_json(
      harness::build_reference(in.scenario, in.data, in.plan.shards, script, harness::ReferenceData::AsFed, &memo));
}

std::string rank_problem(const runtime::JobResult& run, double deadline) {
  if (run.ranks.empty()) return run.diagnosis.empty() ? "no answer from the helper worker" : run.diagnosis;
  const auto& r = run.ranks.front();
  std::ostringstream out;
  switch (run.status) {
    case runtime::RunStatus::Crash:
      out << "crashed (" << (r.how_died.empty() ? "the helper worker died" : r.how_died) << ")";
      break;
    case runtime::RunStatus::Hang:
      out << "did not finish within the deadline (" << deadline << " s)";
      break;
    default:
      out << "raised " << (r.error_type.empty() ? "an error" : r.error_type) << ": " << first_line(r.error);
      break;
  }
  if (!r.log_tail.empty()) out << "\nits last output:\n" << r.log_tail;
  return out.str();
}

std::string tolerance_text(const harness::Tolerance& tol) {
  std::ostringstream out;
  out << "rtol " << tol.rtol << ", atol " << tol.atol;
  return out.str();
}

// A job for the helper worker: a world of one on `backend`, on the CPU.
runtime::Job helper_job(const std::string& backend, std::string id, std::string task, json params,
                        std::chrono::milliseconds deadline) {
  runtime::Job job;
  job.id = std::move(id);
  job.task = std::move(task);
  job.params = std::move(params);
  job.backend = backend;
  job.comm_device = "cpu";
  job.deadline = deadline;
  return job;
}

// What helper_input() reads back on the worker: the scenario, the variant's input dtype and plan.
json helper_params(const harness::Scenario& scenario, const harness::Variant& variant, const harness::VariantPlan& plan) {
  return {{"scenario", scenario.to_json()}, {"dtype", variant.dtype}, {"plan", plan.to_json()}};
}

}  // namespace

// Called by register_plugin_support(): a worker must know the task before it serves a variant.
void register_reference_task() {
  runtime::TaskRegistry::instance().add(kPluginReferenceTask, plugin_single_process_task);
  runtime::TaskRegistry::instance().add(kHelperReadyTask, [](runtime::TaskContext&) { return json::object(); });
  runtime::TaskRegistry::instance().add(kReferenceAsFedTask, reference_as_fed_task);
}

json reference_to_json(const SingleProcessReference& reference) { return harness::reference_to_json(reference); }

SingleProcessReference reference_from_json(const json& j) { return harness::reference_from_json(j); }

RemoteReference::RemoteReference(std::optional<double> deadline_seconds) : deadline_seconds_(deadline_seconds) {
  // A world of one on the CPU: the first built backend (table order) whose collectives run on
  // the CPU, one that a pool starts directly before one that needs mpirun.
  auto cpu = [](const runtime::Backend& b) {
    return b.compiled && std::find(b.comm_devices.begin(), b.comm_devices.end(), "cpu") != b.comm_devices.end();
  };
  const auto& table = runtime::backends();
  auto found = std::find_if(table.begin(), table.end(),
                            [&](const auto& b) { return cpu(b) && !runtime::find_pool_launch(b.pool_launch).through_mpirun; });
  if (found == table.end()) found = std::find_if(table.begin(), table.end(), cpu);
  backend_ = found != table.end() ? found->name : table.front().name;
}

RemoteReference::~RemoteReference() = default;

void RemoteReference::warm_up() {
  const runtime::Job job = helper_job(backend_, "helper/warm-up", kHelperReadyTask, json::object(), std::chrono::seconds(60));
  try {
    ensure_pool();
    pool_->run(job);
  } catch (const std::exception&) {
  }
}

void RemoteReference::ensure_pool() {
  if (pool_) return;
  runtime::PoolOptions options;
  options.world_size = 1;
  options.launch = runtime::pool_launch_for(backend_);
  options.warm_up = pool_warm_up_;
  pool_ = std::make_unique<runtime::RankPool>(options);
}

SingleProcessReference RemoteReference::build(const harness::Scenario& scenario, const harness::Variant& variant,
                                              const harness::VariantPlan& plan) {
  const double deadline = deadline_seconds_.value_or(scenario.deadline_seconds);
  const runtime::Job job = helper_job(backend_, variant.id + "/single-process", kPluginReferenceTask,
                                      helper_params(scenario, variant, plan), ms(deadline));

  SingleProcessReference reference;
  const std::string what = "the plugin's metric, in its single-process run (no communicator; on a helper process)";
  try {
    ensure_pool();
    const runtime::JobResult run = pool_->run(job);
    if (run.status == runtime::RunStatus::Completed && !run.ranks.empty())
      return harness::reference_from_json(run.ranks.front().result);
    reference.failure = what + ", " + rank_problem(run, deadline);
    reference.failure_past_deadline = run.status == runtime::RunStatus::Hang;
  } catch (const std::exception& e) {
    reference.failure = what + ": the helper process could not run it: " + std::string(e.what());
  }
  return reference;
}

RemoteReference::AsFed RemoteReference::build_as_fed(const harness::Scenario& reference, const harness::Variant& variant,
                                                     const harness::VariantPlan& plan, std::size_t computes,
                                                     const runtime::Deadline& until) {
  json params = helper_params(reference, variant, plan);
  params["computes"] = computes;
  const runtime::Job job = helper_job(backend_, variant.id + "/reference-as-fed", kReferenceAsFedTask, std::move(params),
                                      std::max(until.remaining(), std::chrono::milliseconds(1)));
  AsFed built;
  try {
    ensure_pool();
    const runtime::JobResult run = pool_->run(job);
    if (run.status == runtime::RunStatus::Completed && !run.ranks.empty()) {
      try {
        built.reference = harness::reference_from_json(run.ranks.front().result);
      } catch (const std::exception& e) {
        built.reference.failure = std::string("its result could not be read back: ") + e.what();
      }
    } else if (run.status == runtime::RunStatus::Hang) {
      built.timed_out = true;
    } else {
      built.reference.failure = rank_problem(run, std::chrono::duration<double>(job.deadline).count());
    }
  } catch (const std::exception& e) {
    built.reference.failure = "the helper process could not run it: " + std::string(e.what());
  }
  return built;
}

namespace {

// agrees_with_reference when the reference implementation gave nothing to judge against: it ran
// past the variant's deadline (a hang), or it could not run on this data (a skip).
std::optional<PropertyResult> reference_not_had(const harness::Scenario& reference_scenario,
                                                const RemoteReference::AsFed& built,
                                                std::chrono::steady_clock::time_point started) {
  PropertyResult p;
  p.name = kAgreesWithReference;
  if (built.timed_out) {
    std::ostringstream msg;
    msg << "agrees_with_reference: the reference implementation of " << reference_scenario.metric
        << " did not finish within the variant's deadline (ended after "
        << harness::fixed_text(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), 2)
        << " s, what the ranks and the single-process run left of it)\n"
        << "It runs on the helper worker on all the data the ranks fed. Every phase of a variant counts against its "
           "deadline: raise it (--deadline or the scenario's `deadline`), or use less data.";
    p.outcome = Outcome::Hang;
    p.message = msg.str();
    return p;
  }
  if (!built.reference.failure.empty()) {
    p.outcome = Outcome::Skip;
    p.message = "agrees_with_reference skipped: the reference implementation of " + reference_scenario.metric +
                " could not run on this data: " + built.reference.failure;
    return p;
  }
  return std::nullopt;
}

// Every rank's computes against the reference implementation's at the same compute.
struct Agreement {
  struct Difference {
    int place;  // the rank's place in CheckContext::ranks
    int rank;
    const harness::ComputeRecord* compute;
    harness::Comparison comparison;
  };
  std::vector<Difference> differences;  // rank by rank, each rank's computes in order
  int compared = 0;
  int by_convention = 0;  // computes expected_error judges instead (Expectation::no_data_value)
  double largest = 0;
};

// No data anywhere: where the reference raises the error the scenario expects and the metric
// declares a value instead (Expectation::no_data_value), expected_error judges that compute.
bool declared_no_data_value(const harness::Expectation& expect, const ComputeResult& reference,
                            const harness::ComputeRecord& record) {
  return !expect.no_data_value.empty() && record.index == expect.compute && reference.error_type == expect.error &&
         !record.result.raised();
}

Agreement compare_with_reference(const harness::CheckContext& ctx, const SingleProcessReference& reference,
                                 const harness::Tolerance& tolerance) {
  Agreement agreement;
  const auto expected_for = [&](int place, int k) -> const ComputeResult* {
    const auto* record = ctx.ranks[place].compute(k);
    if (record && declared_no_data_value(ctx.scenario.expect, reference.at_compute[k], *record)) return nullptr;
    return &reference.at_compute[k];
  };
  for (int k = 0; k < static_cast<int>(reference.at_compute.size()); ++k) {
    for (const auto& line : harness::compare_at_compute(ctx.ranks, k, expected_for, tolerance)) {
      if (!line.record) continue;
      if (!line.expected) {
        ++agreement.by_convention;
        continue;
      }
      ++agreement.compared;
      agreement.largest = std::max(agreement.largest, line.comparison.difference);
      if (!line.comparison.equal)
        agreement.differences.push_back({line.rank, ctx.ranks[line.rank].rank, line.record, line.comparison});
    }
  }
  std::stable_sort(agreement.differences.begin(), agreement.differences.end(),
                   [](const auto& a, const auto& b) { return a.place < b.place; });
  return agreement;
}

// "  rank 1, compute 2 of 3 (script step 4: 'compute'): plugin 0.5, reference 0.52\n"
std::string difference_line(const harness::CheckContext& ctx, const SingleProcessReference& reference,
                            const Agreement::Difference& d) {
  std::ostringstream line;
  const auto& point = ctx.plan.computes.at(d.compute->index);
  const auto& expected = reference.at_compute[d.compute->index];
  line << "  rank " << d.rank << ", compute " << d.compute->index + 1 << " of " << ctx.plan.computes.size()
       << " (script step " << point.step + 1 << ": '" << ctx.scenario.script.at(point.step).text << "'): plugin "
       << d.compute->result.text() << ", reference " << expected.text();
  // Two numbers say it all; otherwise say how they differ (kind, shape, entry).
  auto number = [](const std::optional<json>& v) {
    return v && (v->is_number() || (v->is_string() && (*v == "nan" || *v == "inf" || *v == "-inf")));
  };
  const bool numbers = number(expected.value) && number(d.compute->result.value);
  if (!numbers && !d.comparison.detail.empty()) line << " (" << d.comparison.detail << ")";
  line << "\n";
  return line.str();
}

// What agrees_with_reference says once it compared: held, or the differences (at most four).
void say_agreement(const harness::CheckContext& ctx, const harness::Scenario& reference_scenario,
                   const SingleProcessReference& reference, const Agreement& agreement,
                   const std::string& tolerance_said, PropertyResult& p) {
  p.difference = agreement.largest;
  std::ostringstream msg;
  if (agreement.differences.empty()) {
    msg << "agrees_with_reference held: " << agreement.compared << " compute result(s) on " << ctx.ranks.size()
        << " rank(s) equal the reference implementation's (" << tolerance_said << ")";
    p.message = msg.str();
    return;
  }
  p.outcome = Outcome::Fail;
  msg << "agrees_with_reference failed: " << agreement.differences.size() << " of " << agreement.compared
      << " compute result(s) differ from the reference implementation of " << reference_scenario.metric << " ("
      << tolerance_said << ")\n";
  const std::size_t limit = 4;
  for (std::size_t i = 0; i < agreement.differences.size() && i < limit; ++i)
    msg << difference_line(ctx, reference, agreement.differences[i]);
  if (agreement.differences.size() > limit) msg << "  ... and " << agreement.differences.size() - limit << " more\n";
  p.message = msg.str();
  const auto& v = ctx.variant;
  std::ostringstream lines;
  lines << "  variant: " << v.id << " (backend " << v.backend << ", world size " << v.world_size << ", shard " << v.shard
        << ", placement " << v.placement << ", seed " << v.seed << ")\n"
        << "  reproduce: " << v.reproduce();
  p.variant_lines = lines.str();
}

PropertyResult judge_agrees_with_reference(const harness::CheckContext& ctx, const harness::Scenario& reference_scenario,
                                           const RemoteReference::AsFed& built, std::chrono::steady_clock::time_point started) {
  if (auto not_had = reference_not_had(reference_scenario, built, started)) return *not_had;
  const SingleProcessReference& reference = built.reference;
  PropertyResult p;
  p.name = kAgreesWithReference;
  // A plugin that computes in float32 is judged to float32's precision against the (float64)
  // reference implementation, as golden is (harness::widened_for_dtypes).
  std::vector<const json*> returned;
  for (const auto& obs : ctx.ranks)
    for (const auto& c : obs.computes)
      if (c.result.value) returned.push_back(&*c.result.value);
  std::string widened_by;
  const harness::Tolerance tolerance = harness::widened_for_dtypes(ctx.scenario.tolerance, returned, "", &widened_by);
  const std::string tolerance_said = tolerance_text(tolerance) + (widened_by.empty() ? "" : ", widened: " + widened_by);
  const Agreement agreement = compare_with_reference(ctx, reference, tolerance);
  // The values shown: the first differing compute (else the first compute) on every rank.
  const int shown = agreement.differences.empty() ? 0 : agreement.differences.front().compute->index;
  if (shown < static_cast<int>(reference.at_compute.size())) p.single = reference.at_compute[shown];
  for (const auto& obs : ctx.ranks) {
    const auto* c = obs.compute(shown);
    p.values.push_back(c ? std::optional<harness::ComputeResult>(c->result) : std::nullopt);
  }
  if (agreement.compared == 0) {
    const auto& expect = ctx.scenario.expect;
    p.outcome = Outcome::Skip;
    p.message = agreement.by_convention > 0
                    ? "agrees_with_reference skipped: the reference raises " + expect.error +
                          " where the metric declares that compute() with no data anywhere returns " +
                          expect.no_data_value + " (expected_error judges it)"
                    : "agrees_with_reference skipped: no rank reached a compute";
    return p;
  }
  say_agreement(ctx, reference_scenario, reference, agreement, tolerance_said, p);
  return p;
}

}  // namespace

// Like with like: the reference implementation on the samples the ranks fed, as often as they fed
// them, so that a sampler's padding (PyTorch #25162) counts the same in both; on the helper worker,
// where one past the variant's deadline is ended, not waited for.
PropertyResult check_agrees_with_reference(const harness::CheckContext& ctx, const harness::Scenario& reference_scenario,
                                           const harness::ShardPlan& shards, RemoteReference& remote,
                                           const runtime::Deadline& until) {
  const auto started = std::chrono::steady_clock::now();
  const auto built =
      remote.build_as_fed(reference_scenario, ctx.variant, {shards, ctx.plan}, ctx.plan.computes.size(), until);
  return judge_agrees_with_reference(ctx, reference_scenario, built, started);
}

}  // namespace distmetrics::plugin
