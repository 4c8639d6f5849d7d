// Who is to blame (internal/blame.h): the runtime's diagnosis, and what only the harness knows.
#include "distmetrics/harness/internal/blame.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <tuple>
#include <iomanip>
#include <sstream>

#include "distmetrics/harness/number_text.h"
#include "distmetrics/harness/root_cause.h"
#include "distmetrics/runtime/blame.h"
#include "distmetrics/runtime/desync.h"
#include "distmetrics/runtime/text.h"

namespace distmetrics::harness::judging {
namespace {

using runtime::RankState;

// A rank that left its script on an error while others waited in a collective: the classic
// "raises alone" desync (PyTorch-Ignite #1242; rule raised_alone of runtime/blame.h, fed which
// ranks left their script on an error). The paragraph that says so, and the rank, or empty.
std::string raised_alone(const Judging& j, int& blamed) {
  std::vector<runtime::RankOutcome> outcomes;
  std::vector<bool> left_on_error;
  for (const auto& r : j.ranks) {
    outcomes.push_back(*r.outcome);
    left_on_error.push_back(r.observation && r.observation->error);
  }
  const auto alone = runtime::find_raised_alone(outcomes, left_on_error);
  if (!alone) return {};
  blamed = alone->blamed();
  // What the first raiser raised: its script's error where it finished, else its task's.
  std::string raised_what;
  for (const auto& r : j.ranks) {
    if (r.rank != alone->blamed()) continue;
    if (r.outcome->state == RankState::Finished) {
      const auto& e = *r.observation->error;
      raised_what = e.type + " at " + e.op + " (script step " + std::to_string(e.step + 1) + "): " + e.message;
    } else {
      raised_what = r.outcome->error_type + ": " + r.outcome->error;
    }
  }
  std::ostringstream out;
  out << rank_list(alone->raisers) << " raised " << raised_what << "\nand left the script, while " << rank_list(alone->waiters)
      << " waited";
  for (const auto& r : j.run.ranks) {
    if (r.blocked_in) {
      out << " in " << r.blocked_in->describe();
      break;
    }
  }
  out << " (detected after " << number_text(j.run.seconds, 2) << " s). A rank must never raise alone: " << kRaiseTogether
      << ".";
  return out.str();
}

std::string step_name(int step, int compute) {
  runtime::CollectiveRecord record;
  record.step = step;
  record.compute = compute;
  return record.issuer();
}

std::string ops_text(const std::vector<std::string>& described) {
  std::string text;
  for (const auto& d : described) text += (text.empty() ? "" : ", ") + d;
  return text.empty() ? "no collective" : text;
}

// "all_reduce(sum) (float64 [2])": a collective as a baseline's sequence names it.
std::string described(const runtime::CollectiveRecord& record) {
  std::string text = record.op;
  if (!record.dtype.empty()) {
    std::string shape;
    for (std::size_t k = 0; k < record.shape.size(); ++k) shape += (k ? ", " : "") + std::to_string(record.shape[k]);
    text += " (" + record.dtype + " [" + shape + "])";
  }
  return text;
}

// The scenario's other variants whose ranks agreed (Baselines): the same world size first.
std::optional<BaselineSeen> from_other_variants(Judging& j, int step, int compute) {
  if (!j.baselines) return std::nullopt;
  const Baselines::Seen* seen = j.baselines->find(j.scenario, step, compute, j.variant.world_size);
  if (!seen) return std::nullopt;
  return BaselineSeen{seen->records, seen->described,
                      "in " + seen->variant + " (world size " + std::to_string(seen->world_size) +
                          "), a variant of this scenario whose ranks agreed, " + step_name(step, compute) + " issued",
                      "that variant"};
}

// The single-process run behind equal_to_single (the reference's collectives_at_compute), for a
// compute that is not a repeat: its instance is fresh, fed the union of what the ranks fed, so
// it shows what a compute after those updates issues, not what a compute right after another
// may skip. A compute where it issued nothing says nothing (a metric may skip its sync alone).
std::optional<BaselineSeen> from_single_process_run(Judging& j, int step, int compute) {
  if (compute < 0 || !j.plan || !j.build_reference) return std::nullopt;
  const auto& computes = j.plan->script.computes;
  if (compute >= static_cast<int>(computes.size()) || computes[compute].role == ComputeRole::Repeat) return std::nullopt;
  const ReferenceBuilt& built = j.reference();
  const auto& recorded = built.single.collectives_at_compute;
  if (built.timed_out || compute >= static_cast<int>(recorded.size()) || !recorded[compute] || recorded[compute]->empty())
    return std::nullopt;
  BaselineSeen seen;
  for (const auto& entry : *recorded[compute]) {
    runtime::CollectiveRecord record;
    record.op = entry.op;
    record.dtype = entry.dtype;
    record.shape = entry.shape;
    seen.records.push_back(record);
    seen.described.push_back(described(record));
  }
  seen.issued_in = "in the single-process run (the same metric in one process, on all the data), " +
                   step_name(step, compute) + " issued";
  seen.name = "the single-process run";
  return seen;
}

// An even split the baseline `seen` tells apart (runtime::tell_even_split): the side whose
// sequence it shows is the metric's; the other side is blamed. The paragraph that says so.
std::string even_split_told(const runtime::StepDeviation& d, const BaselineSeen& seen, const runtime::SideTold& told,
                            Deviation& deviation) {
  deviation.blamed = told.blamed;
  const std::string where = step_name(d.step, d.compute);
  std::ostringstream out;
  out << rank_list(told.blamed) << " deviated from the metric's sequence in " << where << ": " << seen.issued_in << " "
      << ops_text(seen.described) << ", as " << rank_list(told.spared) << " did here; " << rank_list(told.blamed) << " "
      << (told.fewer_is_right ? "issued " + d.parted.describe() + " there, which " + rank_list(told.spared) + " never issued"
                              : "passed it without " + d.parted.describe() + ", which " + rank_list(told.spared) + " issued")
      << " (the ranks split evenly: " << seen.name << " is the baseline).";
  return out.str();
}

// An even split (as many ranks on each side, no other step of the variant tells them apart)
// resolved by what the same metric issues in that step elsewhere (baselines_of_even_splits(),
// the first that tells): sets the blamed side and returns the paragraph that says which
// baseline told it, or empty.
std::string resolve_even_split(Judging& j, const runtime::StepDeviation& d, Deviation& deviation) {
  if (!d.blamed.empty()) return {};
  for (const auto& baseline : baselines_of_even_splits()) {
    const auto seen = baseline.find(j, d.step, d.compute);
    if (!seen) continue;
    if (const auto told = runtime::tell_even_split(j.run.ranks, d, seen->records))
      return even_split_told(d, *seen, *told, deviation);
  }
  return {};
}

// A mismatch whose blame only the order of the ranks chose (runtime::tell_mismatch_tie), told
// apart by a baseline as an even split is. Sets `blamed` (the other groups' ranks) and returns
// the paragraph that says which baseline told it, or empty.
std::string resolve_mismatch_tie(Judging& j, const runtime::CollectiveMismatch& m, std::vector<int>& blamed) {
  if (!runtime::mismatch_tie_in_one_step(m)) return {};
  const runtime::CollectiveRecord& at = m.groups.front().first;
  for (const auto& baseline : baselines_of_even_splits()) {
    const auto seen = baseline.find(j, at.step, at.compute);
    if (!seen) continue;
    const auto told = runtime::tell_mismatch_tie(j.run.ranks, m, seen->records);
    if (!told) continue;
    const auto& spared = m.groups[told->spared_group];
    std::string instead;
    for (std::size_t g = 0; g < m.groups.size(); ++g)
      if (g != told->spared_group)
        instead += (instead.empty() ? "" : ", ") + rank_list(m.groups[g].second) + " issued " + m.groups[g].first.describe();
    blamed = told->blamed;
    const std::string where = step_name(at.step, at.compute);
    return rank_list(blamed) + " deviated from the metric's sequence in " + where + ": " + seen->issued_in + " " +
           ops_text(seen->described) + ", as " + rank_list(spared.second) + " did here; " + instead + " where " +
           rank_list(spared.second) + " issued " + spared.first.describe() + " (the ranks split evenly: " + seen->name +
           " is the baseline).";
  }
  return {};
}

// What makes two variants' steps comparable: the same scenario (its metric, parameters, script,
// data and batches); explore's cases, all named alike, differ in these.
std::string scenario_key(const Scenario& s) {
  std::string script;
  for (const auto& step : s.script) script += step.text + ";";
  return s.file + "|" + s.name + "|" + s.metric + "|" + s.metric_params.dump() + "|" + script + "|" +
         s.data.to_json().dump() + "|" + std::to_string(s.batch_size);
}

const RankObservation& ranks_by_rank(const std::vector<RankObservation>& ranks, int rank) {
  for (const auto& obs : ranks)
    if (obs.rank == rank) return obs;
  return ranks.front();  // find_abandoned_wait_blame names only ranks it was given
}

}  // namespace

const char* const kRaiseTogether =
    "decide errors such as 'no samples' from synced state, so that every rank raises together (PyTorch-Ignite #1242)";

std::string rank_list(const std::vector<int>& ranks) {
  std::ostringstream out;
  out << (ranks.size() == 1 ? "rank " : "ranks ");
  for (std::size_t i = 0; i < ranks.size(); ++i) out << (i ? (i + 1 == ranks.size() ? " and " : ", ") : "") << ranks[i];
  return out.str();
}

std::string collective_key(const runtime::CollectiveRecord& record) {
  std::string key = record.op + "|" + record.dtype;
  if (record.op != "all_gather")  // runtime::same_collective: a gather's contributions may differ
    for (auto d : record.shape) {
      key += ',';
      key += std::to_string(d);  // not "," + ...: GCC 12's -Wstringop-overflow misreads that inlined
    }
  return key;
}

void Baselines::record(const Judging& j) {
  if (j.run.status != runtime::RunStatus::Completed || !j.plan || j.ranks.empty()) return;
  // Every rank ran its whole script: each step's sequence is complete (one that issued nothing too).
  for (const auto& r : j.ranks)
    if (!r.observation || r.observation->error) return;
  const ScriptPlan& script = j.plan->script;
  std::map<std::pair<int, int>, Seen> steps;
  for (std::size_t s = 0; s < script.steps.size(); ++s)
    if (script.steps[s].op != Step::Op::Compute) steps[{static_cast<int>(s), -1}];
  for (const auto& point : script.computes) steps[{point.step, point.index}];
  for (std::size_t i = 0; i < j.ranks.size(); ++i) {
    std::map<std::pair<int, int>, Seen> mine;
    for (const auto& record : j.ranks[i].outcome->trace) {
      if (record.step < 0) continue;
      auto& seen = mine[{record.step, record.compute}];
      seen.keys.push_back(collective_key(record));
      seen.records.push_back(record);
      seen.described.push_back(described(record));
    }
    for (auto& [key, seen] : mine) {
      if (!steps.count(key)) return;  // a collective outside the plan's steps: nothing to lean on
      if (i == 0) steps[key] = std::move(seen);
      else if (steps[key].keys != seen.keys) return;  // the ranks disagree: no step is a baseline
    }
    if (i > 0)
      for (const auto& [key, seen] : steps)
        if (!seen.keys.empty() && !mine.count(key)) return;
  }
  auto& by_step = seen_[scenario_key(j.scenario)];
  for (auto& [key, seen] : steps) {
    seen.variant = j.variant.id;
    seen.world_size = j.variant.world_size;
    by_step[key].push_back(std::move(seen));
  }
}

const Baselines::Seen* Baselines::find(const Scenario& scenario, int step, int compute, int world_size) const {
  const auto by_scenario = seen_.find(scenario_key(scenario));
  if (by_scenario == seen_.end()) return nullptr;
  const auto at = by_scenario->second.find({step, compute});
  if (at == by_scenario->second.end() || at->second.empty()) return nullptr;
  // The same world size first, world size 1 last, else the nearest; the first seen of a kind.
  auto rank_of = [world_size](const Seen& seen) {
    return std::make_tuple(seen.world_size != world_size, seen.world_size == 1, std::abs(seen.world_size - world_size));
  };
  const Seen* best = nullptr;
  for (const auto& seen : at->second) {
    // At world size 1 a metric may skip its sync (no peer to sync with): a step that issued no
    // collective there says nothing of what its ranks issue.
    if (seen.world_size == 1 && seen.keys.empty()) continue;
    if (!best || rank_of(seen) < rank_of(*best)) best = &seen;
  }
  return best;
}

const std::vector<BaselineRule>& baselines_of_even_splits() {
  static const std::vector<BaselineRule> list = {
      {"another variant of the scenario whose ranks agreed", from_other_variants},
      {"the single-process run", from_single_process_run},
  };
  return list;
}

StoppedRun blame_stopped_run(Judging& j) {
  StoppedRun out;
  out.blamed = j.run.blamed_rank;
  std::string baseline;
  out.runtime_diagnosis = j.run.diagnosis;
  if (const auto d = runtime::find_step_deviation(j.run.ranks)) {
    out.deviation = Deviation{d->step + 1, d->compute >= 0 ? std::optional<int>(d->compute + 1) : std::nullopt,
                              d->parted.seq, d->parted.describe(), d->more, d->fewer, d->blamed};
    baseline = resolve_even_split(j, *d, *out.deviation);
    if (!baseline.empty()) out.blamed = out.deviation->blamed.front();
  } else if (const auto m = runtime::find_collective_mismatch(j.run.ranks)) {
    std::vector<int> blamed;
    baseline = resolve_mismatch_tie(j, *m, blamed);
    if (!baseline.empty()) out.blamed = blamed.front();
  }
  // The runtime said why it could not tell the sides apart (or blamed a group for its place in
  // the order); the baseline just did: its diagnosis as it reads once told.
  if (!baseline.empty() && !j.run.diagnosis_once_told.empty()) out.runtime_diagnosis = j.run.diagnosis_once_told;
  const std::string alone = j.run.status == runtime::RunStatus::Hang ? raised_alone(j, out.blamed) : std::string();
  out.opening = alone.empty() ? baseline : baseline.empty() ? alone : alone + "\n" + baseline;
  return out;
}

std::optional<AbandonedWait> find_abandoned_wait(const std::vector<RankObservation>& ranks) {
  std::vector<runtime::ScriptEnd> ends;
  for (const auto& obs : ranks) {
    using How = runtime::ScriptEnd::How;
    const How how = !obs.error ? How::Finished : obs.error->wait_timed_out ? How::WaitTimedOut : How::Raised;
    ends.push_back({obs.rank, how, obs.error ? obs.error->at : 0.0});
  }
  const auto decided = runtime::find_abandoned_wait_blame(ends);
  if (!decided) return std::nullopt;
  std::vector<const RankObservation*> leavers;
  for (const auto& obs : ranks)
    if (!obs.error) leavers.push_back(&obs);
  AbandonedWait blame;
  blame.blamed = decided->blamed;
  blame.waiting = decided->waiting;
  const std::string waiters = rank_list(blame.waiting);
  std::ostringstream head;
  if (decided->blamed_raised) {
    const auto& e = *ranks_by_rank(ranks, blame.blamed).error;
    head << "rank " << blame.blamed << " raised " << e.type << " at " << e.op << " (script step " << e.step + 1
         << ") and left the script; " << waiters << " waited for it until " << (blame.waiting.size() == 1 ? "its" : "their")
         << " wait timed out " << cause_number(decided->first_timeout - e.at) << " s later";
  } else {
    head << "rank " << blame.blamed << " finished its script without entering the collective that " << waiters
         << " waited in until " << (blame.waiting.size() == 1 ? "its" : "their") << " wait timed out";
  }
  blame.headline = head.str();
  // Every error, in the order it happened.
  std::vector<const RankObservation*> by_time;
  for (const auto& obs : ranks)
    if (obs.error) by_time.push_back(&obs);
  std::stable_sort(by_time.begin(), by_time.end(), [](auto* a, auto* b) { return a->error->at < b->error->at; });
  std::ostringstream detail;
  detail << blame.headline << ".\nA rank must never raise or return alone while its peers wait: " << kRaiseTogether
         << "; this holds for collectives a metric issues itself on the process group too.\nin the order they happened:\n";
  const double t0 = by_time.empty() ? 0 : by_time.front()->error->at;
  for (const auto* obs : by_time) {
    const auto& e = *obs->error;
    detail << "  +" << cause_number(e.at - t0) << " s  rank " << obs->rank << " raised " << e.type << " at " << e.op
           << " (script step " << e.step + 1 << ")";
    if (!e.where.empty()) detail << ", raised from " << e.where;
    detail << ": " << runtime::first_line(e.message) << "\n";
  }
  for (const auto* obs : leavers) detail << "  rank " << obs->rank << " finished its script\n";
  blame.detail = detail.str();
  if (!blame.detail.empty() && blame.detail.back() == '\n') blame.detail.pop_back();
  return blame;
}

}  // namespace distmetrics::harness::judging
