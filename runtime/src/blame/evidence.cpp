// The harness's evidence, typed (blame.h): a baseline's sequence for a step, which ranks left their
// script on an error, how each rank's script ended. The rules that read it decide here; the
// harness only gathers the evidence and says in its words what was decided.
#include <algorithm>
#include <cstdint>

#include "distmetrics/runtime/blame.h"
#include "distmetrics/runtime/desync.h"
#include "distmetrics/runtime/errors.h"
#include "divergence.h"

namespace distmetrics::runtime {
namespace {

std::vector<std::string> keys_of(const std::vector<CollectiveRecord>& records) {
  std::vector<std::string> keys;
  for (const auto& record : records) keys.push_back(detail::key_of(record));
  return keys;
}

// One rank's collectives of (step, compute) up to and including sequence number `last`: its
// trace, and the collective it is blocked in.
std::vector<std::string> keys_in_step(const RankOutcome& rank, int step, int compute, std::uint64_t last) {
  std::vector<CollectiveRecord> records = rank.trace;
  if (rank.blocked_in && (records.empty() || records.back().seq < rank.blocked_in->seq)) records.push_back(*rank.blocked_in);
  std::vector<std::string> keys;
  for (const auto& record : records)
    if (record.step == step && record.compute == compute && record.seq <= last) keys.push_back(detail::key_of(record));
  return keys;
}

const RankOutcome* outcome_of(const std::vector<RankOutcome>& ranks, int rank) {
  for (const auto& r : ranks)
    if (r.rank == rank) return &r;
  return nullptr;
}

// Whether a rank is past (step, compute), as find_step_deviation reads it: it finished, or the
// collective it is blocked in (else its last) was issued in a later step.
bool past_step(const RankOutcome& rank, int step, int compute) {
  if (rank.state == RankState::Finished) return true;
  const CollectiveRecord* last = rank.blocked_in ? &*rank.blocked_in : rank.trace.empty() ? nullptr : &rank.trace.back();
  return last && std::make_pair(step, compute) < std::make_pair(last->step, last->compute);
}

// Whether the baseline's sequence `keys` is what every rank of the `more` side issued in the step:
// all of it, for a rank past the step; a beginning of it, for a rank still in it (which may
// issue more there). A sequence the baseline only begins with is not the metric's: a metric whose
// number of collectives follows its data issues more on all the data than on either side.
bool more_side_matches(const std::vector<RankOutcome>& ranks, const StepDeviation& d, const std::vector<std::string>& keys) {
  for (int rank : d.more) {
    const RankOutcome* outcome = outcome_of(ranks, rank);
    if (!outcome) return false;
    const auto issued = keys_in_step(*outcome, d.step, d.compute, UINT64_MAX);
    const bool complete = past_step(*outcome, d.step, d.compute);
    if (complete ? issued != keys : issued.size() > keys.size() || !std::equal(issued.begin(), issued.end(), keys.begin()))
      return false;
  }
  return true;
}

}  // namespace

std::optional<SideTold> tell_even_split(const std::vector<RankOutcome>& ranks, const StepDeviation& d,
                                        const std::vector<CollectiveRecord>& baseline) {
  if (!d.blamed.empty()) return std::nullopt;
  const auto seen = keys_of(baseline);
  const auto issued = keys_of(d.issued);  // the longer side's sequence in that step
  const bool fewer_is_right =
      seen.size() == d.fewer_issued && std::equal(issued.begin(), issued.begin() + d.fewer_issued, seen.begin());
  const bool more_is_right = seen.size() > d.fewer_issued && more_side_matches(ranks, d, seen);
  if (fewer_is_right == more_is_right) return std::nullopt;
  SideTold told;
  told.fewer_is_right = fewer_is_right;
  told.blamed = fewer_is_right ? d.more : d.fewer;
  told.spared = fewer_is_right ? d.fewer : d.more;
  return told;
}

bool mismatch_tie_in_one_step(const CollectiveMismatch& m) {
  if (!m.tie()) return false;
  const CollectiveRecord& at = m.groups.front().first;
  for (const auto& [record, group] : m.groups)
    if (record.step < 0 || record.step != at.step || record.compute != at.compute) return false;
  return true;
}

std::optional<GroupTold> tell_mismatch_tie(const std::vector<RankOutcome>& ranks, const CollectiveMismatch& m,
                                           const std::vector<CollectiveRecord>& baseline) {
  if (!mismatch_tie_in_one_step(m)) return std::nullopt;
  const CollectiveRecord& at = m.groups.front().first;
  const auto seen = keys_of(baseline);
  std::vector<std::size_t> right;  // the groups whose sequence in the step, through the mismatch, begins the baseline's
  for (std::size_t g = 0; g < m.groups.size(); ++g) {
    const RankOutcome* outcome = outcome_of(ranks, m.groups[g].second.front());
    if (!outcome) return std::nullopt;
    const auto sequence = keys_in_step(*outcome, at.step, at.compute, m.seq);
    if (sequence.size() <= seen.size() && std::equal(sequence.begin(), sequence.end(), seen.begin())) right.push_back(g);
  }
  if (right.size() != 1) return std::nullopt;
  GroupTold told;
  told.spared_group = right.front();
  for (std::size_t g = 0; g < m.groups.size(); ++g)
    if (g != told.spared_group) told.blamed.insert(told.blamed.end(), m.groups[g].second.begin(), m.groups[g].second.end());
  std::sort(told.blamed.begin(), told.blamed.end());
  return told;
}

std::vector<int> ranks_past_their_memory(const std::vector<RankOutcome>& ranks) {
  // An allocation that failed inside a collective whose contributions do not match, on a rank the
  // mismatch does not blame, is the mismatch's doing: the rank read a peer's bytes as a size
  // (torch 1.13's gloo all_gather of int64 [1] against a peer's float32 []: "you tried to allocate
  // 541557860210573312 bytes"), or its peer aborted first. Either way the mismatch rule blames.
  const auto mismatch = find_collective_mismatch(ranks);
  std::vector<int> past;
  for (const auto& r : ranks) {
    if (r.error_type != kRankMemoryExceeded) continue;
    const bool in_the_mismatch = mismatch && !r.trace.empty() && r.trace.back().seq == mismatch->seq;
    if (in_the_mismatch && r.rank != mismatch->blamed()) continue;
    past.push_back(r.rank);
  }
  return past;
}

std::optional<RaisedAlone> find_raised_alone(const std::vector<RankOutcome>& ranks, const std::vector<bool>& left_on_error) {
  RaisedAlone found;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const RankOutcome& r = ranks[i];
    const bool left = i < left_on_error.size() && left_on_error[i];
    if (r.state == RankState::Finished && left) found.raisers.push_back(r.rank);
    else if (r.state == RankState::Raised && r.error_type != "CollectiveError") found.raisers.push_back(r.rank);
    else if (r.state == RankState::TimedOut || r.state == RankState::Stuck || r.state == RankState::Ended)
      found.waiters.push_back(r.rank);
  }
  if (found.raisers.empty() || found.waiters.empty()) return std::nullopt;
  return found;
}

std::optional<AbandonedWaitBlame> find_abandoned_wait_blame(const std::vector<ScriptEnd>& ends) {
  std::vector<const ScriptEnd*> timeouts, raisers, leavers;
  for (const auto& end : ends) {
    if (end.how == ScriptEnd::How::Finished) leavers.push_back(&end);
    else if (end.how == ScriptEnd::How::WaitTimedOut) timeouts.push_back(&end);
    else raisers.push_back(&end);
  }
  if (timeouts.empty() || timeouts.size() == ends.size()) return std::nullopt;
  AbandonedWaitBlame blame;
  blame.first_timeout = timeouts.front()->at;
  for (const auto* t : timeouts) {
    blame.first_timeout = std::min(blame.first_timeout, t->at);
    blame.waiting.push_back(t->rank);
  }
  // A raise that precedes the first timeout is the cause; one after it may be its consequence.
  const ScriptEnd* culprit = nullptr;
  for (const auto* r : raisers)
    if (r->at <= blame.first_timeout && (!culprit || r->at < culprit->at)) culprit = r;
  if (culprit) {
    blame.blamed = culprit->rank;
    blame.blamed_raised = true;
  } else if (!leavers.empty()) {
    blame.blamed = leavers.front()->rank;
  } else {
    return std::nullopt;
  }
  return blame;
}

}  // namespace distmetrics::runtime
