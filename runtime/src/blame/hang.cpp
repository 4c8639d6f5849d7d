// A hang diagnosed: a divergence of the ranks' collectives first, else from the collective some
// ranks wait in (who never entered it, who issued one too many, who went on without it), else
// from who did not finish by the deadline.
#include <algorithm>
#include <sstream>

#include "diagnosis.h"
#include "distmetrics/runtime/text.h"
#include "divergence.h"

namespace distmetrics::runtime::detail {
namespace {

// The collective some ranks wait in (the latest any rank is blocked in), who waits in it, and
// who never entered it (or waits in an earlier one).
struct Waited {
  const CollectiveRecord* collective = nullptr;
  std::vector<int> waiting, missing;
};

Waited waited_in(const std::vector<RankOutcome>& ranks) {
  Waited w;
  for (const auto& r : ranks) {
    if (!r.blocked_in) continue;
    if (!w.collective || r.blocked_in->seq > w.collective->seq) w.collective = &*r.blocked_in;
  }
  if (!w.collective) return w;
  for (const auto& r : ranks) {
    const bool entered = r.trace.size() > w.collective->seq;
    if (entered && r.blocked_in && r.blocked_in->seq == w.collective->seq) w.waiting.push_back(r.rank);
    else if (!entered || (r.blocked_in && r.blocked_in->seq < w.collective->seq)) w.missing.push_back(r.rank);
  }
  return w;
}

// Fewer ranks waited in a collective than finished without it: the few issued one too many
// (with as many on each side, skipping and adding cannot be told apart; the finished are blamed).
bool one_too_many(JobResult& run, const Waited& w, std::ostringstream& out) {
  bool missing_finished = !w.missing.empty();
  for (int m : w.missing) missing_finished = missing_finished && run.ranks[m].state == RankState::Finished;
  if (!missing_finished || w.waiting.size() >= w.missing.size()) return false;
  assign_blame(run, BlameRule::ExtraCollective, w.waiting.front());
  out << describe_ranks(w.waiting) << " entered " << w.collective->describe() << " that " << describe_ranks(w.missing)
      << " never issued: they finished their tasks after " << collectives(w.collective->seq)
      << " (blamed on the fewer ranks: " << describe_ranks(w.waiting) << " issued a collective too many). " << kSameOrder;
  return true;
}

// Some ranks never entered the collective the others wait in: the first of them.
bool never_entered(JobResult& run, const Waited& w, const DiagnosisInput& in, std::ostringstream& out) {
  if (w.missing.empty()) return false;
  assign_blame(run, BlameRule::NeverEntered, w.missing.front());
  const RankOutcome& culprit = run.ranks[w.missing.front()];
  if (culprit.state == RankState::Raised && w.missing.size() == 1) {
    out << "rank " << culprit.rank << " raised " << culprit.error_type << " before " << w.collective->describe()
        << " while " << describe_ranks(w.waiting) << " waited in it: " << first_line(culprit.error);
  } else {
    out << describe_ranks(w.missing) << " never entered " << w.collective->describe() << " that "
        << describe_ranks(w.waiting) << (w.waiting.size() == 1 ? " was" : " were") << " waiting in";
    for (int m : w.missing) out << "; " << doing_instead(run.ranks[m], in.phase_of(m));
  }
  out << ". " << kSameOrder;
  return true;
}

// Every rank entered it, yet some completed it (and went on) while others still wait in it:
// on the waiting side it paired with a collective the communicator never saw (the task's own
// c10d call, waited without a timeout). The trace cannot say who skipped or added that call:
// the blame comes from each rank's last known position, on the fewer side (a tie blames the
// ranks that went on, as for a skipped collective).
bool paired_unseen(JobResult& run, const Waited& w, const DiagnosisInput& in, std::ostringstream& out) {
  std::vector<int> went_on;
  for (const auto& r : run.ranks) {
    if (std::find(w.waiting.begin(), w.waiting.end(), r.rank) == w.waiting.end()) went_on.push_back(r.rank);
  }
  if (went_on.empty() || w.waiting.empty()) return false;
  const bool blame_waiting = w.waiting.size() < went_on.size();
  const std::vector<int>& blamed = blame_waiting ? w.waiting : went_on;
  assign_blame(run, BlameRule::UnseenCollective, blamed.front());
  out << describe_ranks(went_on) << " completed " << w.collective->describe() << " that " << describe_ranks(w.waiting)
      << (w.waiting.size() == 1 ? " was" : " were") << " still waiting in: it paired with a collective the "
      << "communicator's trace does not show (the task's own c10d call, such as a raw Gloo collective "
      << "waited without a timeout, issued on some ranks and not on others). Blamed from each rank's last "
      << "known position:";
  for (const auto& r : run.ranks) {
    out << " rank " << r.rank;
    const std::string phase = in.phase_of(r.rank);
    if (!phase.empty()) out << " at " << phase;
    if (r.blocked_in) out << ", inside " << r.blocked_in->describe();
    else if (!r.trace.empty()) out << ", last entered " << r.trace.back().describe() << " (" << to_string(r.state) << ")";
    else out << ", no collective entered (" << to_string(r.state) << ")";
    out << ";";
  }
  out << " on the fewer side, " << describe_ranks(blamed) << " ("
      << (blame_waiting ? "issued a collective the others did not"
                        : w.waiting.size() == went_on.size() ? "as many on each side: the ranks that went on are blamed, "
                                                               "as for a skipped collective"
                                                             : "skipped a collective the others issued")
      << "). " << kSameOrder;
  return true;
}

// Nobody was inside a collective: some rank did not finish its task by the deadline.
void late_outside_collectives(JobResult& run, const DiagnosisInput& in, std::ostringstream& out) {
  std::vector<int> late;
  for (const auto& r : run.ranks) {
    if (r.state == RankState::Stuck || r.state == RankState::TimedOut) late.push_back(r.rank);
  }
  if (late.size() < run.ranks.size() && !late.empty()) assign_blame(run, BlameRule::Late, late.front());
  else assign_blame(run, BlameRule::EveryRankLate, -1);
  out << describe_ranks(late) << " did not finish within " << in.deadline.count() << " ms";
  for (int l : late) out << "; " << doing_instead(run.ranks[l], in.phase_of(l));
  out << ".";
}

}  // namespace

void diagnose_hang(JobResult& run, const DiagnosisInput& in) {
  std::ostringstream out;
  const Waited w = waited_in(run.ranks);
  // The rules in order (blame_rules()): the first that applies writes the diagnosis.
  const bool told = describe_divergence(run, out, in.once_told) ||
                    (w.collective && (one_too_many(run, w, out) || never_entered(run, w, in, out) ||
                                      paired_unseen(run, w, in, out)));
  if (!told && w.collective == nullptr) late_outside_collectives(run, in, out);
  if (!told && w.collective != nullptr) {
    assign_blame(run, BlameRule::BackendStalled, -1);
    out << "every rank entered " << w.collective->describe() << " but it did not complete within "
        << in.deadline.count() << " ms: the backend stalled, or the deadline is too short for this work.";
  }
  run.diagnosis = out.str();
}

}  // namespace distmetrics::runtime::detail
