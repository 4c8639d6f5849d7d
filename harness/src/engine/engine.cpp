#include "distmetrics/harness/engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <sstream>

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

#include "distmetrics/runtime/child_call.h"
#include "distmetrics/runtime/desync.h"
#include "distmetrics/runtime/errors.h"

#include "distmetrics/harness/input_dtype.h"
#include "distmetrics/harness/placement.h"
#include "distmetrics/harness/root_cause.h"
#include "distmetrics/harness/scenario_python.h"
#include "distmetrics/runtime/backends.h"
#include "distmetrics/runtime/text.h"

namespace distmetrics::harness {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;
using runtime::first_line;

std::chrono::milliseconds ms(double seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(seconds * 1000.0)));
}

std::string rank_list(const std::vector<int>& ranks) {
  std::ostringstream out;
  out << (ranks.size() == 1 ? "rank " : "ranks ");
  for (std::size_t i = 0; i < ranks.size(); ++i) out << (i ? (i + 1 == ranks.size() ? " and " : ", ") : "") << ranks[i];
  return out.str();
}

// A rank whose metric said it cannot take this variant (kUnsupportedType, from its factory, its
// update() or compute()): the variant is a skip with that reason, whatever the peers did after
// it stopped (they may have waited for it). "MeanAbsoluteError does not support this: ...".
std::optional<std::string> unsupported_by_a_rank(const Scenario& scenario, const runtime::JobResult& run) {
  for (const auto& r : run.ranks) {
    if (r.state != runtime::RankState::Finished || !r.result.is_object()) continue;
    const auto& e = r.result.value("error", json());
    if (!e.is_object() || e.value("type", "") != kUnsupportedType) continue;
    const std::string metric = scenario.metric.substr(0, scenario.metric.find('@'));
    const int step = e.value("step", -1);
    return metric + " does not support this: " + first_line(e.value("message", "")) + " (rank " +
           std::to_string(r.rank) + ", " + e.value("op", "setup") +
           (step >= 0 ? ", script step " + std::to_string(step + 1) : std::string()) + ")";
  }
  return std::nullopt;
}

// A rank that left its script on an error while others waited in a collective: the classic
// "raises alone" desync (PyTorch-Ignite #1242). Returns the diagnosis, or empty.
std::string raised_alone(const runtime::JobResult& run, int& blamed) {
  std::vector<int> raisers, waiters;
  std::string raised_what;
  for (const auto& r : run.ranks) {
    if (r.state == runtime::RankState::Finished && r.result.is_object() && r.result.contains("error") &&
        !r.result.at("error").is_null()) {
      const auto& e = r.result.at("error");
      if (raisers.empty())
        raised_what = e.value("type", "an error") + " at " + e.value("op", "a step") + " (script step " +
                      std::to_string(e.value("step", -1) + 1) + "): " + e.value("message", "");
      raisers.push_back(r.rank);
    } else if (r.state == runtime::RankState::Raised && r.error_type != "CollectiveError") {
      if (raisers.empty()) raised_what = r.error_type + ": " + r.error;
      raisers.push_back(r.rank);
    } else if (r.state == runtime::RankState::TimedOut || r.state == runtime::RankState::Stuck || r.state == runtime::RankState::Ended) {
      waiters.push_back(r.rank);
    }
  }
  if (raisers.empty() || waiters.empty()) return {};
  blamed = raisers.front();
  std::ostringstream out;
  out << rank_list(raisers) << " raised " << raised_what << "\nand left the script, while " << rank_list(waiters)
      << " waited";
  for (const auto& r : run.ranks) {
    if (r.blocked_in) {
      out << " in " << r.blocked_in->describe();
      break;
    }
  }
  std::ostringstream when;
  when << std::setprecision(2) << run.seconds;
  out << " (detected after " << when.str() << " s). A rank must never raise alone: decide errors such as 'no samples' from synced "
         "state, so that every rank raises together (PyTorch-Ignite #1242).";
  return out.str();
}

// A backtrace_symbols line, "lib.so(_ZN3foo3barEv+0x1c) [0x7f..]", with its symbol demangled.
std::string demangled(const std::string& line) {
  const auto open = line.find("(_Z");
  if (open == std::string::npos) return line;
  const auto end = line.find_first_of("+)", open);
  if (end == std::string::npos) return line;
  const std::string mangled = line.substr(open + 1, end - open - 1);
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), std::free);
  if (status != 0 || !name) return line;
  return line.substr(0, open + 1) + name.get() + line.substr(end);
}

std::string rank_state_lines(const runtime::JobResult& run) {
  std::ostringstream out;
  for (const auto& r : run.ranks) {
    out << "  rank " << r.rank << " (pid " << r.pid << "): " << to_string(r.state);
    if (r.blocked_in) out << ", blocked in " << r.blocked_in->describe();
    else if (!r.trace.empty()) out << ", last collective " << r.trace.back().describe();
    if (!r.how_died.empty()) out << ", " << r.how_died;
    if (!r.error.empty()) out << ": " << first_line(r.error);
    out << "\n";
    if (!r.log_tail.empty() && (r.state == runtime::RankState::Crashed || r.state == runtime::RankState::Raised)) {
      std::istringstream tail(r.log_tail);
      for (std::string line; std::getline(tail, line);) out << "      | " << demangled(line) << "\n";
    }
  }
  return out.str();
}

std::string seconds_text(double s) {
  std::ostringstream out;
  out << std::setprecision(s < 10 ? 2 : 3) << s;
  return out.str();
}

// What was seen, not only that the deadline passed: a rank that left (finished, raised or
// died) while others waited is detected when the waits give up, long before the deadline.
std::string hang_text(const std::vector<int>& left, const std::vector<int>& waiting, double seconds, double deadline) {
  if (!left.empty() && !waiting.empty())
    return "no_hang failed: " + rank_list(left) + " left the collective " + rank_list(waiting) +
           (waiting.size() == 1 ? " waits" : " wait") + " in (detected after " + seconds_text(seconds) + " s)";
  return "no_hang failed: no progress until the deadline (" + seconds_text(deadline) + " s)";
}

// `reference_seconds`: the single-process run and the checks, which count against the deadline
// as the ranks do; starting the rank pool is said apart (it has its own startup deadline).
PropertyResult no_hang_result(const runtime::JobResult& run, double deadline, double reference_seconds = 0) {
  PropertyResult p;
  p.name = "no_hang";
  const double ranks = std::max(0.0, run.seconds - run.start_seconds);
  const double used = ranks + reference_seconds;
  std::ostringstream phases;
  phases << "ranks " << ranks << " s";
  if (reference_seconds > 0) phases << ", single-process reference and checks " << reference_seconds << " s";
  if (run.start_seconds > 0) phases << "; starting the rank pool took " << run.start_seconds << " s more";
  if (run.status == runtime::RunStatus::Hang) {
    p.outcome = Outcome::Fail;
    std::vector<int> left, waiting;
    for (const auto& r : run.ranks) {
      if (r.blocked_in || r.state == runtime::RankState::TimedOut) waiting.push_back(r.rank);
      else if (r.state == runtime::RankState::Finished || r.state == runtime::RankState::Raised ||
               r.state == runtime::RankState::Crashed)
        left.push_back(r.rank);
    }
    p.message = hang_text(left, waiting, run.seconds, deadline);
  } else if (used > deadline) {
    p.outcome = Outcome::Fail;
    std::ostringstream msg;
    msg << "no_hang failed: the variant took " << used << " s, past its deadline of " << deadline << " s ("
        << phases.str() << ")";
    p.message = msg.str();
  } else {
    std::ostringstream msg;
    msg << "no_hang held: finished in " << used << " s (" << phases.str() << "; deadline " << deadline << " s)";
    p.message = msg.str();
  }
  return p;
}

// An observation's error that the single-process reference shares (same compute, same type) is
// the metric's correct behaviour, judged by the properties; any other is an error outcome.
bool error_matches_reference(const StepError& error, const RankObservation& obs, const SingleProcessReference& single) {
  if (error.op != "compute") return false;
  for (const auto& c : obs.computes) {
    if (c.step != error.step) continue;
    return c.index < static_cast<int>(single.at_compute.size()) &&
           single.at_compute[c.index].error_type == error.type;
  }
  return false;
}

// The compute where every rank's script stopped, each raising there what the single process
// raised at the same compute (e.g. NotComputableError after a reset with no data anywhere), or
// -1. A script ends at its first error on every process: the single process stops there too, and
// the computes after it, which no process reached, are not judged (judging them would read the
// ranks' absence as a difference).
int compute_where_every_process_stopped(const std::vector<RankObservation>& observations,
                                        const SingleProcessReference& single) {
  int stopped = -1;
  for (const auto& obs : observations) {
    if (!obs.error || obs.error->op != "compute" || obs.computes.empty()) return -1;
    const auto& last = obs.computes.back();  // the compute that raised ends the rank's records
    if (last.step != obs.error->step || !last.result.raised() || last.result.error_type != obs.error->type) return -1;
    if (last.index >= static_cast<int>(single.at_compute.size()) || single.at_compute[last.index].error_type != obs.error->type)
      return -1;
    if (stopped >= 0 && stopped != last.index) return -1;
    stopped = last.index;
  }
  return stopped;
}

// What the report shows of each rank: its state, its share of the data and its collectives,
// with the script step each was issued in when the rank returned its observation.
std::vector<RankReport> rank_reports(const Scenario& scenario, const runtime::JobResult& run) {
  std::vector<RankReport> out;
  for (const auto& r : run.ranks) {
    RankReport report;
    report.rank = r.rank;
    report.state = to_string(r.state);
    std::vector<int> steps;
    if (r.state == runtime::RankState::Finished && r.result.is_object()) {
      if (r.result.contains("samples")) report.samples = r.result.at("samples").get<std::int64_t>();
      if (r.result.contains("batches")) report.batches = r.result.at("batches").get<std::int64_t>();
      if (r.result.contains("trace_steps")) steps = r.result.at("trace_steps").get<std::vector<int>>();
      const auto& e = r.result.value("error", json());
      if (e.is_object()) report.error = e.value("type", "") + " at " + e.value("op", "") + ": " + first_line(e.value("message", ""));
    }
    for (std::size_t i = 0; i < r.trace.size(); ++i) {
      const auto& record = r.trace[i];
      TraceEntry entry{record.seq, record.op, record.dtype, record.shape, 0, ""};
      // The step the record was stamped with, else the one the observation says (a rank that hung
      // returned none).
      const int step = record.step >= 0 ? record.step : i < steps.size() ? steps[i] : -1;
      if (step >= 0) {
        entry.script_step = step + 1;
        if (static_cast<std::size_t>(step) < scenario.script.size()) entry.step_text = scenario.script[step].text;
      }
      report.trace.push_back(std::move(entry));
    }
    if (r.blocked_in) {
      report.blocked_in = r.blocked_in->seq;
      // A rank blocked inside a collective it had not completed: the trace shows it too.
      if (report.trace.empty() || report.trace.back().seq < r.blocked_in->seq) {
        const auto& b = *r.blocked_in;
        TraceEntry entry{b.seq, b.op, b.dtype, b.shape, 0, ""};
        if (b.step >= 0) {
          entry.script_step = b.step + 1;
          if (static_cast<std::size_t>(b.step) < scenario.script.size()) entry.step_text = scenario.script[b.step].text;
        }
        report.trace.push_back(std::move(entry));
      }
    }
    if (report.error.empty() && !r.error.empty()) report.error = (r.error_type.empty() ? "" : r.error_type + ": ") + first_line(r.error);
    if (report.error.empty() && !r.how_died.empty()) report.error = r.how_died;
    out.push_back(std::move(report));
  }
  return out;
}

}  // namespace

runtime::Job make_variant_job(const Scenario& scenario, const Variant& variant, double deadline_seconds) {
  runtime::Job job;
  job.id = variant.id;
  job.task = kScenarioTask;
  job.params = {{"scenario", scenario.to_json()}, {"shard", variant.shard}, {"placement", variant.placement}, {"dtype", variant.dtype},
                {"backend", variant.backend}};  // the rank's GPU follows the backend's rule (rank_gpu)
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
  v.reason = variant.skip.value_or("skipped");
  return v;
}

Engine::Engine(EngineOptions options) : options_(std::move(options)) {}

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
  // Planned once, here: the reference, the shards the verdict shows and the checks use this plan.
  std::optional<Planned> planned;
  std::string plan_error;
  try {
    planned = plan(scenario, variant);
  } catch (const std::exception& e) {
    plan_error = e.what();  // no data or plan here: judge() says why, after the ranks
  }
  // The single-process reference needs only the scenario and its data: it computes in a child
  // process beside the ranks, so it adds no wall time of its own and is ended at the deadline.
  std::unique_ptr<runtime::ChildCall> reference;
  if (!options_.single_process && planned) {
    const Dataset& data = planned->data;
    const VariantPlan& plan = planned->plan;
    reference = std::make_unique<runtime::ChildCall>(
        [&] { return reference_to_json(build_reference(scenario, data, plan.shards, plan.script)); });
  }
  runtime::JobResult run;
  try {
    run = runner.run(make_variant_job(scenario, variant, deadline));
  } catch (const std::exception& e) {
    Verdict v;
    v.variant = variant;
    v.outcome = Outcome::Error;
    v.reason = "the ranks could not run the variant: " + first_line(e.what());
    v.diagnosis = e.what();
    v.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return v;
  }
  Verdict v = judge(scenario, variant, run, planned ? &*planned : nullptr, plan_error, reference.get(), start);
  v.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return v;
}

Engine::Planned Engine::plan(const Scenario& scenario, const Variant& variant) {
  Planned planned{rounded_through_input_dtype(data_for(scenario), variant.dtype), {}};
  planned.plan = plan_variant(scenario, planned.data, variant.shard, variant.world_size);
  return planned;
}

Verdict Engine::judge(const Scenario& given, const Variant& variant, const runtime::JobResult& run,
                      const Planned* planned, const std::string& plan_error, runtime::ChildCall* started_reference,
                      Clock::time_point started) {
  // An input dtype's variant is judged with its tolerance, against its rounded values.
  const Scenario scenario = judged_for_input_dtype(given, variant.dtype);
  const double deadline = options_.deadline_seconds.value_or(scenario.deadline_seconds);
  Verdict v;
  v.variant = variant;
  v.seconds = run.seconds;
  // Each rank's shard: the first clue to an uneven-shard bug, shown with every failure.
  std::string shard_text;
  try {
    if (!planned) throw std::runtime_error("not planned");
    const ShardPlan& plan = planned->plan.shards;
    std::ostringstream text;
    text << "shards:";
    for (int r = 0; r < variant.world_size; ++r) {
      const auto samples = plan.samples_of(r);
      const auto batches = plan.batches_of(r);
      v.shards.push_back({{"rank", r}, {"samples", samples}, {"batches", batches}});
      text << (r ? ";" : "") << " rank " << r << " " << samples << " samples in " << batches << " batches";
    }
    shard_text = text.str();
  } catch (const std::exception&) {
    // The data could not be generated here: the verdict below says why.
  }
  auto with_shards = [&](std::string text) {
    if (!shard_text.empty()) text += (text.empty() || text.back() == '\n' ? "" : "\n") + shard_text;
    return text;
  };
  v.ranks = rank_reports(scenario, run);
  v.tolerance = {{"rtol", scenario.tolerance.rtol}, {"atol", scenario.tolerance.atol}, {"exact", scenario.tolerance.exact}};

  // A rank past its memory limit: its own outcome, whatever its peers did after it left them
  // waiting (they time out, or raise when its connection closes).
  std::vector<const runtime::RankOutcome*> past_memory;
  for (const auto& r : run.ranks)
    if (r.error_type == runtime::kRankMemoryExceeded) past_memory.push_back(&r);
  if (!past_memory.empty()) {
    const runtime::RankOutcome& first = *past_memory.front();
    v.outcome = Outcome::MemoryExceeded;
    v.reason = "rank " + std::to_string(first.rank) + " to blame: " + first_line(first.error);
    std::ostringstream diag;
    for (const auto* r : past_memory) diag << r->error << "\n";
    diag << "The limit is per rank (--rank-memory GIB, 0 for none): raise it if the metric needs that much, or "
            "give the scenario less data or fewer classes.\n";
    if (!run.diagnosis.empty()) diag << run.diagnosis << "\n";
    diag << "rank states:\n" << rank_state_lines(run);
    v.diagnosis = with_shards(diag.str());
    if (!v.diagnosis.empty() && v.diagnosis.back() == '\n') v.diagnosis.pop_back();
    v.properties.push_back(no_hang_result(run, deadline));
    return v;
  }

  if (run.status != runtime::RunStatus::Crash) {
    if (auto why = unsupported_by_a_rank(scenario, run)) {
      v.outcome = Outcome::Skip;
      v.reason = *why;
      return v;
    }
  }

  if (run.status == runtime::RunStatus::Crash || run.status == runtime::RunStatus::Hang) {
    int blamed = run.blamed_rank;
    if (const auto d = runtime::find_step_deviation(run.ranks)) {
      v.deviation = {{"script_step", d->step + 1},
                     {"compute", d->compute >= 0 ? nlohmann::json(d->compute + 1) : nlohmann::json(nullptr)},
                     {"seq", d->parted.seq}, {"op", d->parted.describe()},
                     {"more", d->more}, {"fewer", d->fewer}, {"blamed", d->blamed}};
    }
    std::string ours = run.status == runtime::RunStatus::Hang ? raised_alone(run, blamed) : std::string();
    v.outcome = run.status == runtime::RunStatus::Crash ? Outcome::Crash : Outcome::Hang;
    std::ostringstream diag;
    if (!ours.empty()) diag << ours << "\n";
    if (!run.diagnosis.empty()) diag << run.diagnosis << "\n";
    diag << "rank states:\n" << rank_state_lines(run);
    v.diagnosis = with_shards(diag.str());
    if (!v.diagnosis.empty() && v.diagnosis.back() == '\n') v.diagnosis.pop_back();
    std::string summary = first_line(!ours.empty() ? ours : run.diagnosis);
    if (summary.empty()) summary = run.status == runtime::RunStatus::Crash ? "a rank died" : "the variant did not finish in time";
    v.reason = (blamed >= 0 ? "rank " + std::to_string(blamed) + " to blame: " : std::string()) + summary;
    v.properties.push_back(no_hang_result(run, deadline));
    return v;
  }

  // Every rank finished its task (Completed), or some task raised outside the metric (Error).
  std::vector<RankObservation> observations;
  std::vector<std::string> problems;
  for (const auto& r : run.ranks) {
    if (r.state != runtime::RankState::Finished) {
      problems.push_back("rank " + std::to_string(r.rank) + " " + to_string(r.state) + ": " +
                         (r.error_type.empty() ? "" : r.error_type + ": ") + first_line(r.error));
      continue;
    }
    try {
      observations.push_back(RankObservation::from_json(r.result));
    } catch (const std::exception& e) {
      problems.push_back("rank " + std::to_string(r.rank) + " returned an unreadable observation: " + e.what());
    }
  }
  if (!problems.empty() || run.status == runtime::RunStatus::Error || observations.size() != static_cast<std::size_t>(variant.world_size)) {
    v.outcome = Outcome::Error;
    if (problems.empty()) problems.push_back(run.diagnosis.empty() ? "the ranks did not all report" : first_line(run.diagnosis));
    v.reason = problems.front();
    std::ostringstream diag;
    for (const auto& p : problems) diag << p << "\n";
    if (!run.diagnosis.empty()) diag << run.diagnosis << "\n";
    diag << "rank states:\n" << rank_state_lines(run);
    v.diagnosis = with_shards(diag.str());
    v.properties.push_back(no_hang_result(run, deadline));
    return v;
  }

  // A rank whose wait gave up (a collective, or a c10d work the metric issued itself) after a
  // peer raised or left: a hang blamed on that peer, not an error of the waiting rank.
  if (const auto abandoned = find_abandoned_wait(observations)) {
    v.outcome = Outcome::Hang;
    v.reason = "rank " + std::to_string(abandoned->blamed) + " to blame: " + abandoned->headline;
    v.diagnosis = with_shards(abandoned->detail);
    PropertyResult p;
    p.name = "no_hang";
    p.outcome = Outcome::Fail;
    p.message = hang_text({abandoned->blamed}, abandoned->waiting, run.seconds, deadline);
    v.properties.push_back(p);
    return v;
  }

  // The same shard plan and script the ranks used, and the single-process reference. The ranks
  // planned it (they finished); this process could not, e.g. short of memory for the data.
  if (!planned) {
    v.outcome = Outcome::Error;
    v.reason = "the supervisor could not plan the variant (its data, shards and script): " + first_line(plan_error);
    v.diagnosis = plan_error;
    v.properties.push_back(no_hang_result(run, deadline));
    return v;
  }
  const Dataset& data = planned->data;
  const ShardPlan& shards = planned->plan.shards;
  const ScriptPlan& script = planned->plan.script;
  const auto reference_started = Clock::now();
  // The reference counts against the variant's deadline as the ranks do. Started beside the
  // ranks, it has the whole deadline from the variant's start; built after them, what they left.
  const double ranks_seconds = std::max(0.0, run.seconds - run.start_seconds);
  const double budget = started_reference
                            ? deadline - std::chrono::duration<double>(reference_started - started).count()
                            : deadline - ranks_seconds;
  SingleProcessReference single;
  if (options_.single_process) {
    single = options_.single_process(scenario, variant, data, shards, script);
  } else {
    // In a child process, so that a reference past its budget is ended, not waited for.
    const auto until = runtime::Deadline::after(ms(std::max(budget, 0.0)));
    const runtime::ChildCallResult built =
        started_reference
            ? started_reference->wait(until)
            : runtime::call_in_child(
                  [&] { return reference_to_json(build_reference(scenario, data, shards, script)); }, until);
    std::ostringstream left;
    if (started_reference)
      left << "the variant's deadline of " << seconds_text(deadline) << " s (it ran beside the ranks, which took "
           << seconds_text(ranks_seconds) << " s)";
    else
      left << "the " << seconds_text(std::max(budget, 0.0)) << " s the ranks (" << seconds_text(ranks_seconds)
           << " s) left of the variant's deadline of " << seconds_text(deadline) << " s";
    if (built.ended == runtime::ChildCallResult::Ended::TimedOut) {
      v.outcome = Outcome::Hang;
      v.reason = "the single-process reference did not finish within " + left.str();
      v.diagnosis = with_shards("The single-process reference (" + scenario.metric +
                                " in one process, no communicator, on all the data) was ended at the deadline. Every "
                                "phase of a variant counts against its deadline: raise it (--deadline or the "
                                "scenario's `deadline`), or use less data.");
      PropertyResult p;
      p.name = "no_hang";
      p.outcome = Outcome::Fail;
      p.message = "no_hang failed: " + v.reason;
      v.properties.push_back(p);
      return v;
    }
    if (built.ended == runtime::ChildCallResult::Ended::Returned) {
      try {
        single = reference_from_json(built.value);
      } catch (const std::exception& e) {
        single.failure = std::string("its result could not be read back: ") + e.what();
      }
    } else {
      single.failure = built.ended == runtime::ChildCallResult::Ended::Died ? "it crashed (" + built.how_died + ")" : built.error;
    }
  }
  if (scenario.reference) {  // the Python callable on all the data: once per process (scenario_python.h)
    ComputeResult reference;
    try {
      reference.value = python_reference_value(scenario, data);
    } catch (const std::exception& e) {
      reference.error_type = "ReferenceError";
      reference.error = e.what();
    }
    single.reference = std::move(reference);
  }
  if (!single.failure.empty()) {
    v.outcome = Outcome::Error;
    v.reason = "the single-process reference failed: " + first_line(single.failure);
    v.diagnosis = options_.single_process  // a builder of its own says what failed, in full
                      ? single.failure
                      : "the single-process reference (" + scenario.metric + " in the supervisor, no communicator) failed: " +
                            single.failure +
                            "\nThe scenario's data may not suit the metric; `distmetrics validate` checks a few samples.";
    return v;
  }

  // Where every process's script ended at the same error, what follows is not judged.
  ScriptPlan judged_script;
  const ScriptPlan* judged = &script;
  if (const int stopped = compute_where_every_process_stopped(observations, single);
      stopped >= 0 && stopped + 1 < static_cast<int>(script.computes.size())) {
    judged_script = script;
    judged_script.computes.resize(static_cast<std::size_t>(stopped) + 1);
    single.at_compute.resize(std::min(single.at_compute.size(), judged_script.computes.size()));
    judged = &judged_script;
  }
  const CheckContext ctx{scenario, variant, *judged, single, observations};
  v.properties = check_properties(ctx);
  if (judged != &script) {  // say why a property that had computes to judge judged none
    const auto& stop = judged->computes.back();
    const std::string why = "every rank's script stopped at compute " + std::to_string(stop.index + 1) + " (script step " +
                            std::to_string(stop.step + 1) + ": '" + scenario.script.at(stop.step).text + "'), raising " +
                            observations.front().error->type + " as the single process does there; no process " +
                            "reached the computes after it";
    const CheckContext whole{scenario, variant, script, single, observations};
    const auto unstopped = check_properties(whole);
    for (auto& p : v.properties)
      for (const auto& q : unstopped)
        if (q.name == p.name && p.outcome == Outcome::Skip && q.outcome != Outcome::Skip)
          p.message = p.name + ": not judged: " + why;
  }
  const auto variant_until =
      runtime::Deadline::after(ms(std::max(0.0, deadline - std::chrono::duration<double>(Clock::now() - started).count())));
  for (const auto& extra : options_.extra_checks) {
    PropertyResult p = extra(ctx, data, shards, variant_until);
    // The scenario's own check of a property comes first (conform's agrees_with_reference
    // gives way to a scenario's [reference]).
    if (std::none_of(v.properties.begin(), v.properties.end(), [&p](const PropertyResult& q) { return q.name == p.name; }))
      v.properties.push_back(std::move(p));
  }
  const double reference_seconds = std::chrono::duration<double>(Clock::now() - reference_started).count();
  v.properties.insert(v.properties.begin(), no_hang_result(run, deadline, reference_seconds));
  // A check past the variant's deadline (ended there): a hang that names what it waited for.
  for (const auto& p : v.properties) {
    if (p.outcome != Outcome::Hang) continue;
    v.outcome = Outcome::Hang;
    v.reason = first_line(p.message);
    v.diagnosis = with_shards(p.message);
    PropertyResult& no_hang = v.properties.front();
    no_hang.outcome = Outcome::Fail;
    no_hang.message = "no_hang failed: " + v.reason;
    return v;
  }

  for (const auto& obs : observations) {
    if (!obs.error || error_matches_reference(*obs.error, obs, single)) continue;
    const bool expected = obs.error->type == scenario.expect.error;
    if (expected) continue;  // judged by expected_error
    v.outcome = Outcome::Error;
    v.reason = "rank " + std::to_string(obs.rank) + " raised " + obs.error->type + " at " + obs.error->op +
               (obs.error->step >= 0 ? " (script step " + std::to_string(obs.error->step + 1) + ")" : std::string()) +
               ": " + first_line(obs.error->message);
    // A factory that cannot build these parameters: name them (each variant of the metric with
    // other parameters runs on its own).
    if (obs.error->op == "setup" && !scenario.metric_params.empty())
      v.reason += " (metric parameters " + scenario.metric_params.dump() + ")";
    std::ostringstream diag;
    diag << v.reason << "\n";
    for (const auto& o : observations) {
      diag << "  rank " << o.rank << ": ";
      if (o.error) {
        diag << o.error->type << " at " << o.error->op;
        if (o.error->step >= 0) diag << " (script step " << o.error->step + 1 << ")";
        diag << ": " << o.error->message;
        if (!o.error->full_type.empty() && o.error->full_type != o.error->type) diag << " [" << o.error->full_type << "]";
        if (!o.error->where.empty()) diag << ", raised from " << o.error->where;
      } else {
        diag << "finished its script";
      }
      diag << " (" << o.trace.size() << " collectives" << (o.trace.empty() ? "" : ", last " + o.trace.back()) << ")\n";
    }
    v.diagnosis = with_shards(diag.str());
    return v;
  }
  for (const auto& p : v.properties) {
    if (p.outcome != Outcome::Fail) continue;
    v.outcome = p.name == "no_hang" ? Outcome::Hang : Outcome::Fail;  // past the deadline: a hang, whatever was slow
    v.reason = first_line(p.message);
    break;
  }
  if (v.outcome == Outcome::Fail) {
    if (const auto cause = find_root_cause(ctx, v.properties)) apply_root_cause(v, *cause);
    // Each rank's shard under the cause (the report shows the failed properties' messages).
    for (auto& p : v.properties) {
      if (p.outcome != Outcome::Fail) continue;
      p.message = with_shards(p.message);
      break;
    }
  }
  return v;
}

// --- LocalPools ------------------------------------------------------------------------------

LocalPools::LocalPools(runtime::PoolOptions base, std::size_t max_pools) : base_(std::move(base)), max_pools_(std::max<std::size_t>(max_pools, 1)) {}

LocalPools::~LocalPools() { clear(); }

void LocalPools::clear() {
  while (!pools_.empty()) pools_.pop_back();  // ends the workers
}

runtime::JobRunner& LocalPools::runner_for(const Variant& variant) {
  const std::string launch = runtime::pool_launch_for(variant.backend);
  const std::string key = launch + "/" + std::to_string(variant.world_size);
  for (auto it = pools_.begin(); it != pools_.end(); ++it) {
    if (it->first != key) continue;
    if (std::next(it) != pools_.end()) std::rotate(it, std::next(it), pools_.end());  // most recent last
    return *pools_.back().second;
  }
  while (pools_.size() >= max_pools_) pools_.erase(pools_.begin());
  runtime::PoolOptions options = base_;
  options.world_size = variant.world_size;
  options.launch = launch;
  pools_.emplace_back(key, std::make_unique<runtime::RankPool>(options));
  ++started_;
  return *pools_.back().second;
}

}  // namespace distmetrics::harness
