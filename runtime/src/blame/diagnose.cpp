// A stopped run diagnosed by its status: a crash, a hang (hang.cpp), an error; the first
// divergence of the ranks' collectives (divergence.h) is the cause wherever there is one.
#include "diagnosis.h"

#include <signal.h>

#include <algorithm>
#include <sstream>

#include "distmetrics/runtime/errors.h"
#include "distmetrics/runtime/text.h"
#include "divergence.h"

namespace distmetrics::runtime::detail {

std::string describe_ranks(const std::vector<int>& ranks) {
  std::ostringstream out;
  out << (ranks.size() == 1 ? "rank " : "ranks ");
  for (size_t i = 0; i < ranks.size(); ++i) out << (i ? ", " : "") << ranks[i];
  return out.str();
}

// What a rank that did not reach a collective was doing instead.
std::string doing_instead(const RankOutcome& r, const std::string& phase) {
  const std::string after = " after " + collectives(r.trace.size());
  switch (r.state) {
    case RankState::Finished: return "rank " + std::to_string(r.rank) + " finished its task" + after;
    case RankState::Raised:
      return "rank " + std::to_string(r.rank) + " raised " + r.error_type + after + ": " + first_line(r.error);
    case RankState::TimedOut:
      if (r.blocked_in) return "rank " + std::to_string(r.rank) + " was waiting in " + r.blocked_in->describe();
      return "rank " + std::to_string(r.rank) + " timed out before its first collective: " + first_line(r.error);
    case RankState::Stuck:
    case RankState::Ended:
      if (r.blocked_in) return "rank " + std::to_string(r.rank) + " was waiting in " + r.blocked_in->describe();
      if (r.blocked_on_store)
        return "rank " + std::to_string(r.rank) + " was waiting on the store" + after +
               ", for keys no other rank would write (a process group made on some ranks only?)";
      if (phase == "connecting") return "rank " + std::to_string(r.rank) + " was still connecting to its peers";
      return "rank " + std::to_string(r.rank) + " was still running its task outside any collective" + after +
             " (an endless loop, or work slower than the deadline?)";
    case RankState::Crashed: return "rank " + std::to_string(r.rank) + " crashed (" + r.how_died + ")" + after;
  }
  return "";
}

namespace {

// A rank killed by SIGPIPE wrote to a connection its peer had closed: it followed from another
// rank's end (a host lost: ranks on other hosts die writing to it), not the cause.
bool died_writing_to_a_closed_peer(const RankOutcome& r) { return r.died_of_signal == SIGPIPE; }

void diagnose_crash(JobResult& run, const DiagnosisInput& in) {
  std::vector<int> crashed, waiting;
  for (const auto& r : run.ranks) {
    if (r.state == RankState::Crashed) crashed.push_back(r.rank);
    else if (r.blocked_in) waiting.push_back(r.rank);
  }
  // The ranks that died of something else come first: the first of them is blamed.
  std::stable_partition(crashed.begin(), crashed.end(),
                        [&](int r) { return !died_writing_to_a_closed_peer(run.ranks[r]); });
  const RankOutcome& first = run.ranks[crashed.front()];
  assign_blame(run, BlameRule::CrashFirst, first.rank);
  std::ostringstream out;
  // Ranks that issued different collectives can make the backend itself end them (MPI aborts
  // on a truncated message): the divergence is the cause, the crash its consequence.
  if (describe_divergence(run, out, in.once_told)) {
    out << " Then ";
    // An even split blames neither side: the crash is named.
    if (run.blamed_rank < 0) assign_blame(run, BlameRule::CrashFirst, first.rank);
  }
  out << "rank " << first.rank << " crashed (" << (first.how_died.empty() ? "how is unknown" : first.how_died) << ")";
  if (first.blocked_in) out << " inside " << first.blocked_in->describe();
  else out << " after " << collectives(first.trace.size());
  for (size_t i = 1; i < crashed.size(); ++i) {
    const auto& other = run.ranks[crashed[i]];
    out << "; rank " << other.rank << " crashed too (" << other.how_died
        << (died_writing_to_a_closed_peer(other) && !died_writing_to_a_closed_peer(first)
                ? ": it wrote to rank " + std::to_string(first.rank) + "'s closed connection"
                : std::string())
        << ")";
  }
  if (!waiting.empty()) {
    // Name the collective the survivors were in (the latest one, if they differ).
    const RankOutcome* latest = nullptr;
    for (int w : waiting) {
      if (!latest || run.ranks[w].blocked_in->seq > latest->blocked_in->seq) latest = &run.ranks[w];
    }
    out << ", while " << describe_ranks(waiting) << (waiting.size() == 1 ? " was" : " were") << " waiting in "
        << latest->blocked_in->describe();
  }
  out << ". The other ranks were ended.";
  if (!first.log_tail.empty()) out << " The end of rank " << first.rank << "'s output is in its log tail.";
  run.diagnosis = out.str();
}

void diagnose_error(JobResult& run, const DiagnosisInput& in) {
  std::vector<int> raised, finished;
  for (const auto& r : run.ranks) (r.state == RankState::Raised ? raised : finished).push_back(r.rank);
  std::ostringstream out;
  const RankOutcome& first = run.ranks[raised.front()];
  // Ranks that issued different collectives make the backend fail in odd ways: name the cause.
  if (describe_divergence(run, out, in.once_told)) {
    out << " (rank " << first.rank << " raised " << first.error_type << ": " << first_line(first.error) << ")";
    run.diagnosis = out.str();
    return;
  }
  if (finished.empty()) {
    bool same_type = true;
    for (int r : raised) same_type = same_type && run.ranks[r].error_type == first.error_type;
    out << "every rank raised " << (same_type ? first.error_type : std::string("an error")) << "; rank "
        << first.rank << ": " << first_line(first.error);
    if (!same_type) {
      for (size_t i = 1; i < raised.size(); ++i) {
        out << "; rank " << raised[i] << " raised " << run.ranks[raised[i]].error_type << ": "
            << first_line(run.ranks[raised[i]].error);
      }
    }
    assign_blame(run, BlameRule::EveryRankRaised, -1);
  } else {
    out << describe_ranks(raised) << " raised " << first.error_type << " after " << collectives(first.trace.size())
        << " (rank " << first.rank << ": " << first_line(first.error) << "); " << describe_ranks(finished)
        << " finished.";
    assign_blame(run, BlameRule::FirstRaiser, first.rank);
  }
  run.diagnosis = out.str();
}

// A rank that raised inside a collective because a peer's connection closed, while a peer that
// never entered that collective finished (or raised before it): the peer left, and on a backend
// that closes a group's connections when its task ends (torch 2.x gloo) the waiting rank raises
// instead of waiting. The skipped collective is the cause, as it is where the waiter waits
// (torch 1.13 gloo): returns that waiter, or null.
const RankOutcome* waiter_whose_peer_left(const std::vector<RankOutcome>& ranks) {
  for (const auto& r : ranks) {
    if (r.state != RankState::Raised || !r.blocked_in || !r.peer_left) continue;
    for (const auto& o : ranks) {
      const bool left = o.state == RankState::Finished || (o.state == RankState::Raised && !o.peer_left);
      if (o.rank != r.rank && left && o.trace.size() <= r.blocked_in->seq) return &r;
    }
  }
  return nullptr;
}

// One reading of the diagnosis: as the rules decided, or (in.once_told) as it reads once
// evidence tells an open blame.
void diagnose_as(JobResult& run, const DiagnosisInput& in) {
  bool crashed = false, hung = false, raised = false;
  for (const auto& r : run.ranks) {
    crashed |= r.state == RankState::Crashed;
    hung |= r.state == RankState::TimedOut || r.state == RankState::Stuck;
    raised |= r.state == RankState::Raised;
  }
  assign_blame(run, BlameRule::None, -1);
  run.diagnosis.clear();
  if (crashed) {
    run.status = RunStatus::Crash;
    diagnose_crash(run, in);
  } else if (hung) {
    run.status = RunStatus::Hang;
    diagnose_hang(run, in);
  } else if (raised && has_divergence(run.ranks)) {
    // Ranks that contributed differently to one collective make some backends raise on some of
    // them (MPI: MPI_ERR_TRUNCATE) while the others finish or wait: the mismatch is the cause, a
    // desync like a skipped collective, whichever ranks happened to raise.
    run.status = RunStatus::Hang;
    diagnose_hang(run, in);
    for (const auto& r : run.ranks) {
      if (r.state != RankState::Raised) continue;
      run.diagnosis += " (then rank " + std::to_string(r.rank) + " raised " + r.error_type + ": " + first_line(r.error) + ")";
      break;
    }
  } else if (const RankOutcome* waiter = raised ? waiter_whose_peer_left(run.ranks) : nullptr) {
    run.status = RunStatus::Hang;
    const std::string after = " (then rank " + std::to_string(waiter->rank) + "'s " + waiter->blocked_in->describe() +
                              " failed: the peer's connection closed as it left: " + first_line(waiter->error) + ")";
    diagnose_hang(run, in);
    run.diagnosis += after;
  } else if (raised) {
    run.status = RunStatus::Error;
    diagnose_error(run, in);
  } else {
    run.status = RunStatus::Completed;
  }
}

}  // namespace

void diagnose(JobResult& run, const std::vector<std::string>& phases, std::chrono::milliseconds deadline) {
  diagnose_as(run, DiagnosisInput{phases, deadline, false});
  run.diagnosis_once_told.clear();
  if (run.status == RunStatus::Completed || !blame_is_open(run.ranks)) return;
  JobResult told = run;
  diagnose_as(told, DiagnosisInput{phases, deadline, true});
  run.diagnosis_once_told = told.diagnosis;
}

}  // namespace distmetrics::runtime::detail
