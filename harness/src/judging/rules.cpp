// The rules that decide a variant's verdict (internal/judging.h), tried in order; each is one
// case. Who is to blame is blame.cpp's.
#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <sstream>

#include "distmetrics/harness/internal/blame.h"
#include "distmetrics/harness/internal/judging.h"
#include "distmetrics/harness/metric_id.h"
#include "distmetrics/harness/root_cause.h"
#include "distmetrics/runtime/blame.h"
#include "distmetrics/runtime/errors.h"
#include "distmetrics/runtime/text.h"

namespace distmetrics::harness::judging {
namespace {

using runtime::first_line;
using runtime::RankState;
using runtime::RunStatus;

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

// Every rank's state, where it stopped and, for one that crashed or raised, its last output.
std::string rank_state_lines(const runtime::JobResult& run) {
  std::ostringstream out;
  for (const auto& r : run.ranks) {
    out << "  rank " << r.rank << " (pid " << r.pid << "): " << to_string(r.state);
    if (r.blocked_in) out << ", blocked in " << r.blocked_in->describe();
    else if (!r.trace.empty()) out << ", last collective " << r.trace.back().describe();
    if (!r.how_died.empty()) out << ", " << r.how_died;
    if (!r.error.empty()) out << ": " << first_line(r.error);
    out << "\n";
    if (!r.log_tail.empty() && (r.state == RankState::Crashed || r.state == RankState::Raised)) {
      std::istringstream tail(r.log_tail);
      for (std::string line; std::getline(tail, line);) out << "      | " << demangled(line) << "\n";
    }
  }
  return out.str();
}

// The diagnosis of a run that did not finish as it should: `first` lines, the runtime's
// paragraph, every rank's state, each rank's shard.
std::string diagnosis_of(const Judging& j, const std::string& first, const std::string* runtime_diagnosis = nullptr) {
  const std::string& runtime = runtime_diagnosis ? *runtime_diagnosis : j.run.diagnosis;
  std::ostringstream diag;
  if (!first.empty()) diag << first << (first.back() == '\n' ? "" : "\n");
  if (!runtime.empty()) diag << runtime << "\n";
  diag << "rank states:\n" << rank_state_lines(j.run);
  return j.with_shards(diag.str());
}

void drop_last_newline(std::string& text) {
  if (!text.empty() && text.back() == '\n') text.pop_back();
}

// An observation's error that the single-process reference shares (same compute, same type) is
// the metric's correct behaviour, judged by the properties; any other is an error outcome.
bool error_matches_reference(const StepError& error, const RankObservation& obs, const SingleProcessReference& single) {
  if (error.op != "compute") return false;
  for (const auto& c : obs.computes) {
    if (c.step != error.step) continue;
    return c.index < static_cast<int>(single.at_compute.size()) && single.at_compute[c.index].error_type == error.type;
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

// The properties the scenario checks, judged on the computes every process reached (j.script:
// the plan's, cut after the compute where every process stopped, and the reference with it); a
// property that had computes to judge and judged none says why.
std::vector<PropertyResult> checked_properties(Judging& j) {
  j.script = j.plan->script;
  const int stopped = compute_where_every_process_stopped(j.observations, j.single);
  if (stopped < 0 || stopped + 1 >= static_cast<int>(j.script.computes.size()))
    return check_properties(CheckContext{j.scenario, j.variant, j.script, j.single, j.observations});
  j.script.computes.resize(static_cast<std::size_t>(stopped) + 1);
  j.single.at_compute.resize(std::min(j.single.at_compute.size(), j.script.computes.size()));
  auto results = check_properties(CheckContext{j.scenario, j.variant, j.script, j.single, j.observations});
  const auto& stop = j.script.computes.back();
  const std::string why = "every rank's script stopped at compute " + std::to_string(stop.index + 1) + " (script step " +
                          std::to_string(stop.step + 1) + ": '" + j.scenario.script.at(stop.step).text + "'), raising " +
                          j.observations.front().error->type + " as the single process does there; no process " +
                          "reached the computes after it";
  const auto unstopped = check_properties(CheckContext{j.scenario, j.variant, j.plan->script, j.single, j.observations});
  for (auto& p : results)
    for (const auto& q : unstopped)
      if (q.name == p.name && p.outcome == Outcome::Skip && q.outcome != Outcome::Skip) p.set_not_judged(why);
  return results;
}

}  // namespace

Judging::Judging(const Scenario& scenario, const Variant& variant, const runtime::JobResult& run, double deadline)
    : scenario(scenario), variant(variant), run(run), deadline(deadline), ranks(decode_ranks(run)) {}

const ReferenceBuilt& Judging::reference() {
  if (!reference_built) reference_built = build_reference();
  return *reference_built;
}

std::string Judging::with_shards(std::string text) const {
  if (!shard_text.empty()) text += (text.empty() || text.back() == '\n' ? "" : "\n") + shard_text;
  return text;
}

// A rank past its memory limit: its own outcome, whatever its peers did after it left them
// waiting (they time out, or raise when its connection closes).
bool rank_past_its_memory(Judging& j) {
  const std::vector<int> past = runtime::ranks_past_their_memory(j.run.ranks);  // rule memory_exceeded
  if (past.empty()) return false;
  auto error_of = [&](int rank) -> const std::string& {
    for (const auto& r : j.run.ranks)
      if (r.rank == rank) return r.error;
    return j.run.ranks.front().error;  // ranks_past_their_memory names only ranks of the run
  };
  Verdict& v = j.verdict;
  v.outcome = Outcome::MemoryExceeded;
  v.reason = "rank " + std::to_string(past.front()) + " to blame: " + first_line(error_of(past.front()));
  std::string errors;
  for (int rank : past) errors += error_of(rank) + "\n";
  v.diagnosis = diagnosis_of(j, errors +
                                    "The limit is per rank (--rank-memory GIB, 0 for none): raise it if the metric needs "
                                    "that much, or give the scenario less data or fewer classes.\n");
  drop_last_newline(v.diagnosis);
  v.properties.push_back(no_hang_of_run(j.run, j.deadline));
  return true;
}

// A rank whose metric said it cannot take this variant (kUnsupportedType, from its factory, its
// update() or compute()): a skip with that reason, whatever the peers did after it stopped (they
// may have waited for it). "MeanAbsoluteError does not support this: ...".
bool metric_does_not_support_it(Judging& j) {
  if (j.run.status == RunStatus::Crash) return false;
  for (const auto& r : j.ranks) {
    if (!r.observation || !r.observation->error || r.observation->error->type != kUnsupportedType) continue;
    const auto& e = *r.observation->error;
    j.verdict.outcome = Outcome::Skip;
    const runtime::Unavailable why(MetricId::parse(j.scenario.metric).name + " does not support this: " + first_line(e.message),
                                   " (rank " + std::to_string(r.rank) + ", " + e.op +
                                       (e.step >= 0 ? ", script step " + std::to_string(e.step + 1) : std::string()) + ")");
    j.verdict.reason = why.text;
    j.verdict.skip_gist = why.gist;
    return true;
  }
  return false;
}

// The ranks did not finish together: a hang or a crash, with the rank to blame.
bool run_hung_or_crashed(Judging& j) {
  if (j.run.status != RunStatus::Crash && j.run.status != RunStatus::Hang) return false;
  const StoppedRun blame = blame_stopped_run(j);
  Verdict& v = j.verdict;
  v.deviation = blame.deviation;
  v.outcome = j.run.status == RunStatus::Crash ? Outcome::Crash : Outcome::Hang;
  v.diagnosis = diagnosis_of(j, blame.opening, &blame.runtime_diagnosis);
  drop_last_newline(v.diagnosis);
  std::string summary = first_line(!blame.opening.empty() ? blame.opening : blame.runtime_diagnosis);
  if (summary.empty()) summary = j.run.status == RunStatus::Crash ? "a rank died" : "the variant did not finish in time";
  v.reason = (blame.blamed >= 0 ? "rank " + std::to_string(blame.blamed) + " to blame: " : std::string()) + summary;
  v.properties.push_back(no_hang_of_run(j.run, j.deadline));
  keep_verdicts_before_death(j);
  return true;
}

// Every rank finished its task (Completed), or some task raised outside the metric (Error): an
// error unless every rank returned an observation that reads.
bool ranks_did_not_all_report(Judging& j) {
  std::vector<std::string> problems;
  for (const auto& r : j.ranks) {
    const auto& outcome = *r.outcome;
    if (outcome.state != RankState::Finished)
      problems.push_back("rank " + std::to_string(r.rank) + " " + to_string(outcome.state) + ": " +
                         (outcome.error_type.empty() ? "" : outcome.error_type + ": ") + first_line(outcome.error));
    else if (!r.observation)
      problems.push_back("rank " + std::to_string(r.rank) + " returned an unreadable observation: " + r.unreadable);
    else
      j.observations.push_back(*r.observation);
  }
  if (problems.empty() && j.run.status != RunStatus::Error &&
      j.observations.size() == static_cast<std::size_t>(j.variant.world_size))
    return false;
  Verdict& v = j.verdict;
  v.outcome = Outcome::Error;
  if (problems.empty()) problems.push_back(j.run.diagnosis.empty() ? "the ranks did not all report" : first_line(j.run.diagnosis));
  v.reason = problems.front();
  std::string lines;
  for (const auto& p : problems) lines += p + "\n";
  v.diagnosis = diagnosis_of(j, lines);
  v.properties.push_back(no_hang_of_run(j.run, j.deadline));
  keep_verdicts_before_death(j);
  return true;
}

// A rank whose wait gave up (a collective, or a c10d work the metric issued itself) after a peer
// raised or left: a hang blamed on that peer, not an error of the waiting rank.
bool a_wait_was_abandoned(Judging& j) {
  const auto abandoned = find_abandoned_wait(j.observations);
  if (!abandoned) return false;
  Verdict& v = j.verdict;
  v.outcome = Outcome::Hang;
  v.reason = "rank " + std::to_string(abandoned->blamed) + " to blame: " + abandoned->headline;
  v.diagnosis = j.with_shards(abandoned->detail);
  v.properties.push_back(no_hang_failed(left_while_waiting({abandoned->blamed}, abandoned->waiting, j.run.seconds)));
  keep_verdicts_before_death(j);
  return true;
}

// The ranks planned the variant (they finished); this process could not, e.g. short of memory
// for the data.
bool supervisor_could_not_plan(Judging& j) {
  if (j.plan) return false;
  j.verdict.outcome = Outcome::Error;
  j.verdict.reason = "the supervisor could not plan the variant (its data, shards and script): " + first_line(j.plan_error);
  j.verdict.diagnosis = j.plan_error;
  j.verdict.properties.push_back(no_hang_of_run(j.run, j.deadline));
  return true;
}

// The single-process reference: past the deadline, a hang; one that could not run, an error.
bool reference_did_not_build(Judging& j) {
  j.reference_started = j.elapsed();
  const ReferenceBuilt& built = j.reference();
  j.single = built.single;
  Verdict& v = j.verdict;
  if (built.timed_out) {
    v.outcome = Outcome::Hang;
    v.reason = "the single-process reference did not finish within " + built.left;
    v.diagnosis = j.with_shards("The single-process reference (" + j.scenario.metric +
                                " in one process, no communicator, on all the data) was ended at the deadline. Every "
                                "phase of a variant counts against its deadline: raise it (--deadline or the "
                                "scenario's `deadline`), or use less data.");
    v.properties.push_back(no_hang_failed(v.reason));
    return true;
  }
  if (j.single.failure.empty()) return false;
  v.outcome = Outcome::Error;
  v.reason = "the single-process reference failed: " + first_line(j.single.failure);
  v.single_past_deadline = j.single.failure_past_deadline;
  v.diagnosis = j.own_reference_builder  // a builder of its own says what failed, in full
                    ? j.single.failure
                    : "the single-process reference (" + j.scenario.metric + " in the supervisor, no communicator) failed: " +
                          j.single.failure +
                          "\nThe scenario's data may not suit the metric; `distmetrics validate` checks a few samples.";
  return true;
}

// The properties judged, no_hang first; a check past the variant's deadline (ended there) makes
// the verdict a hang that names what it waited for.
bool a_check_ran_past_the_deadline(Judging& j) {
  Verdict& v = j.verdict;
  v.properties = checked_properties(j);
  if (j.extra_checks) {
    const CheckContext ctx{j.scenario, j.variant, j.script, j.single, j.observations};
    for (auto& p : j.extra_checks(ctx))
      // The scenario's own check of a property comes first (conform's agrees_with_reference
      // gives way to a scenario's [reference]).
      if (std::none_of(v.properties.begin(), v.properties.end(), [&p](const PropertyResult& q) { return q.name == p.name; }))
        v.properties.push_back(std::move(p));
  }
  v.properties.insert(v.properties.begin(), no_hang_of_run(j.run, j.deadline, j.elapsed() - j.reference_started));
  for (const auto& p : v.properties) {
    if (p.outcome != Outcome::Hang) continue;
    v.outcome = Outcome::Hang;
    v.reason = first_line(p.full_message());
    v.diagnosis = j.with_shards(p.full_message());
    v.properties.front() = no_hang_failed(v.reason);
    return true;
  }
  return false;
}

// The rank went on past the declared compute (it raised there, and recovers_after_error is
// checked: scenario_task.cpp) and its error came after it: the metric did not recover, which
// recovers_after_error judges (its missing computes name the error), not an error outcome.
bool raised_after_the_declared_error(const StepError& error, const RankObservation& obs, const Scenario& scenario) {
  if (!scenario.checks("recovers_after_error")) return false;
  const auto* declared = obs.compute(scenario.expect.compute);
  return declared && declared->result.raised() && error.step > declared->step;
}

// A rank raised what the single process did not (nor the scenario expects): an error.
bool metric_raised(Judging& j) {
  for (const auto& obs : j.observations) {
    if (!obs.error || error_matches_reference(*obs.error, obs, j.single)) continue;
    if (obs.error->type == j.scenario.expect.error) continue;  // judged by expected_error
    if (raised_after_the_declared_error(*obs.error, obs, j.scenario)) continue;
    Verdict& v = j.verdict;
    v.outcome = Outcome::Error;
    v.reason = "rank " + std::to_string(obs.rank) + " raised " + obs.error->type + " at " + obs.error->op +
               (obs.error->step >= 0 ? " (script step " + std::to_string(obs.error->step + 1) + ")" : std::string()) +
               ": " + first_line(obs.error->message);
    // A factory that cannot build these parameters: name them (each variant of the metric with
    // other parameters runs on its own).
    if (obs.error->op == "setup" && !j.scenario.metric_params.empty())
      v.reason += " (metric parameters " + j.scenario.metric_params.dump() + ")";
    std::ostringstream diag;
    diag << v.reason << "\n";
    for (const auto& o : j.observations) {
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
    v.diagnosis = j.with_shards(diag.str());
    // The properties judged on every rank's whole observation read its stop as a difference:
    // judged again on the steps every rank completed before it.
    v.properties.erase(std::remove_if(v.properties.begin(), v.properties.end(),
                                      [](const PropertyResult& p) { return p.name != "no_hang"; }),
                       v.properties.end());
    keep_verdicts_before_death(j);
    return true;
  }
  return false;
}

// The first failed property: a failure (a hang when it is no_hang: past the deadline, whatever
// was slow), led by its root cause, each rank's shard under it.
bool a_property_failed(Judging& j) {
  Verdict& v = j.verdict;
  const auto failed = std::find_if(v.properties.begin(), v.properties.end(),
                                   [](const PropertyResult& p) { return p.outcome == Outcome::Fail; });
  if (failed == v.properties.end()) return false;
  v.outcome = failed->name == "no_hang" ? Outcome::Hang : Outcome::Fail;
  v.reason = first_line(failed->full_message());
  if (v.outcome != Outcome::Fail) return true;
  const CheckContext ctx{j.scenario, j.variant, j.script, j.single, j.observations};
  if (const auto cause = find_root_cause(ctx, v.properties)) apply_root_cause(v, *cause);
  for (auto& p : v.properties) {
    if (p.outcome != Outcome::Fail) continue;
    p.shard_line = j.shard_text;
    break;
  }
  return true;
}

const std::vector<Rule>& rules() {
  static const std::vector<Rule> list = {
      {"a rank past its memory limit", rank_past_its_memory},
      {"the metric does not support the variant", metric_does_not_support_it},
      {"the run hung or crashed", run_hung_or_crashed},
      {"the ranks did not all report", ranks_did_not_all_report},
      {"a wait was abandoned", a_wait_was_abandoned},
      {"the supervisor could not plan the variant", supervisor_could_not_plan},
      {"the reference did not build", reference_did_not_build},
      {"a check ran past the deadline", a_check_ran_past_the_deadline},
      {"the metric raised", metric_raised},
      {"a property failed", a_property_failed},
  };
  return list;
}

Verdict judge(Judging& j) {
  Verdict& v = j.verdict;
  v.variant = j.variant;
  v.seconds = j.run.seconds;
  if (j.plan) {
    std::ostringstream text;
    text << "shards:";
    for (int r = 0; r < j.variant.world_size; ++r) {
      const auto samples = j.plan->shards.samples_of(r);
      const auto batches = static_cast<std::int64_t>(j.plan->shards.batches_of(r));
      v.shards.push_back({r, samples, batches});
      text << (r ? ";" : "") << " rank " << r << " " << samples << " samples in " << batches << " batches";
    }
    j.shard_text = text.str();
  }
  v.ranks = rank_reports(j.scenario, j.ranks);
  v.tolerance = j.scenario.tolerance;
  for (const auto& rule : rules())
    if (rule.decide(j)) break;
  return v;
}

}  // namespace distmetrics::harness::judging
