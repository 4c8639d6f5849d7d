#include "diagnosis.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <sstream>

#include "distmetrics/runtime/text.h"

namespace distmetrics::runtime::detail {

std::string describe_ranks(const std::vector<int>& ranks) {
  std::ostringstream out;
  out << (ranks.size() == 1 ? "rank " : "ranks ");
  for (size_t i = 0; i < ranks.size(); ++i) out << (i ? ", " : "") << ranks[i];
  return out.str();
}

namespace {

constexpr const char* kSameOrder =
    "Every rank must issue the same collectives in the same order (a rank that returns early, raises "
    "alone or skips a collective leaves its peers waiting).";

std::string collectives(size_t n) { return std::to_string(n) + (n == 1 ? " collective" : " collectives"); }

// Two ranks issued "the same" collective when op and dtype agree, and the shape too except for
// gathers (whose first dimension may differ by design).
std::string key_of(const CollectiveRecord& record) {
  std::string key = record.op + "|" + record.dtype;
  if (record.op != "all_gather") {
    for (auto d : record.shape) key += "," + std::to_string(d);
  }
  return key;
}

std::string what_issued(const CollectiveRecord& record) {
  std::string text = record.op;
  if (!record.dtype.empty()) {
    std::ostringstream shape;
    for (size_t i = 0; i < record.shape.size(); ++i) shape << (i ? ", " : "") << record.shape[i];
    text += " (" + record.dtype + " [" + shape.str() + "])";
  }
  return text;
}

// The first sequence number at which ranks issued different collectives, with the groups.
struct Divergence {
  std::uint64_t seq = 0;
  std::vector<std::pair<CollectiveRecord, std::vector<int>>> groups;  // record issued, by which ranks
};

std::optional<Divergence> find_divergence(const std::vector<RankOutcome>& ranks) {
  size_t longest = 0;
  for (const auto& r : ranks) longest = std::max(longest, r.trace.size());
  for (size_t seq = 0; seq < longest; ++seq) {
    std::map<std::string, std::pair<CollectiveRecord, std::vector<int>>> by_key;
    std::vector<std::string> order;
    for (const auto& r : ranks) {
      if (r.trace.size() <= seq) continue;
      const std::string key = key_of(r.trace[seq]);
      if (!by_key.count(key)) {
        order.push_back(key);
        by_key[key] = {r.trace[seq], {}};
      }
      by_key[key].second.push_back(r.rank);
    }
    if (by_key.size() > 1) {
      Divergence divergence;
      divergence.seq = seq;
      for (const auto& key : order) divergence.groups.push_back(by_key[key]);
      return divergence;
    }
  }
  return std::nullopt;
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
      if (phase == "connecting") return "rank " + std::to_string(r.rank) + " was still connecting to its peers";
      return "rank " + std::to_string(r.rank) + " was still running its task outside any collective" + after +
             " (an endless loop, or work slower than the deadline?)";
    case RankState::Crashed: return "rank " + std::to_string(r.rank) + " crashed (" + r.how_died + ")" + after;
  }
  return "";
}

// Collectives of different computes paired with each other: at some sequence number the ranks
// issued the same operation, but for different computes (as the task declared with
// Communicator::set_issuer): a rank skipped a compute's collectives (a rank-local cache, an early
// return) and its next compute's went to its peers' earlier one. Blames the rank that ran ahead.
// Only sequence numbers up to `last` are looked at.
bool describe_issuer_divergence(JobResult& run, std::ostringstream& out, size_t last) {
  size_t longest = 0;
  for (const auto& r : run.ranks) longest = std::max(longest, r.trace.size());
  for (size_t seq = 0; seq < longest && seq <= last; ++seq) {
    std::map<int, std::vector<int>> by_compute;  // compute -> ranks
    std::map<int, const CollectiveRecord*> example;
    for (const auto& r : run.ranks) {
      if (r.trace.size() <= seq || r.trace[seq].compute < 0) continue;
      by_compute[r.trace[seq].compute].push_back(r.rank);
      example.emplace(r.trace[seq].compute, &r.trace[seq]);
    }
    if (by_compute.size() < 2) continue;
    const auto ahead = std::prev(by_compute.end());
    std::vector<int> behind;
    for (auto it = by_compute.begin(); it != ahead; ++it) behind.insert(behind.end(), it->second.begin(), it->second.end());
    std::sort(behind.begin(), behind.end());
    const CollectiveRecord& first_behind = *example.at(by_compute.begin()->first);
    run.blamed_rank = ahead->second.front();
    out << describe_ranks(ahead->second) << " issued " << (ahead->second.size() == 1 ? "its" : "their")
        << " collectives of " << example.at(ahead->first)->issuer() << " while " << describe_ranks(behind)
        << " waited in those of " << first_behind.issuer() << ": from #" << seq
        << " on, collectives of different computes were paired (" << describe_ranks(ahead->second)
        << " skipped the collectives of a compute: a rank-local cache, or an early return?). Rank "
        << run.blamed_rank << " is blamed. " << kSameOrder;
    return true;
  }
  return false;
}

// "ranks disagree at #2: rank 0 issued all_gather (...), ranks 1, 2 issued all_reduce(sum) (...)",
// blaming the smallest group. False when every rank issued the same sequence.
bool describe_divergence(JobResult& run, std::ostringstream& out) {
  auto divergence = find_divergence(run.ranks);
  // Computes paired out of step explain a later difference of operations too: named first.
  if (describe_issuer_divergence(run, out, divergence ? divergence->seq : static_cast<size_t>(-1))) return true;
  if (!divergence) return false;
  // Blame the smallest group of ranks that issued something else (ties: the group that does
  // not hold the lowest rank, whose sequence is taken as the reference).
  auto& groups = divergence->groups;
  std::stable_sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) {
    if (a.second.size() != b.second.size()) return a.second.size() > b.second.size();
    return a.second.front() < b.second.front();
  });
  std::vector<int> silent;  // ranks that issued nothing at that point
  bool all_inside = true;   // every rank is blocked in that very collective
  for (const auto& r : run.ranks) {
    if (r.trace.size() <= divergence->seq) silent.push_back(r.rank);
    all_inside = all_inside && r.blocked_in && r.blocked_in->seq == divergence->seq;
  }
  run.blamed_rank = groups.back().second.front();
  bool same_op = true;
  for (const auto& g : groups) same_op = same_op && g.first.op == groups.front().first.op;
  if (all_inside && same_op && silent.empty() && groups.size() > 1) {
    // Nobody is missing: the ranks entered the same collective with contributions that do not
    // match (PyTorch-Ignite 0.4.13's Precision sends int64 [] from an empty rank where its
    // peers send float64 [5]). Name what differs and the odd rank out.
    const auto& odd = groups.back();
    out << "mismatched collective #" << divergence->seq << ": every rank entered it and none is missing, but "
        << describe_ranks(odd.second) << " issued " << what_issued(odd.first) << " where ";
    for (size_t i = 0; i + 1 < groups.size(); ++i)
      out << (i ? ", " : "") << describe_ranks(groups[i].second) << " issued " << what_issued(groups[i].first);
    out << ". Rank " << run.blamed_rank << " is the odd one out and is blamed. Every rank must contribute the same "
        << "operation, dtype and shape to a collective (a rank with no data must still send tensors shaped like "
        << "its peers').";
    return true;
  }
  out << "ranks disagree at #" << divergence->seq << ": ";
  for (size_t i = 0; i < groups.size(); ++i) {
    out << (i ? ", " : "") << describe_ranks(groups[i].second) << " issued " << what_issued(groups[i].first);
  }
  if (!silent.empty()) out << ", " << describe_ranks(silent) << " issued nothing";
  out << ". Rank " << run.blamed_rank << " is blamed. " << kSameOrder;
  return true;
}

void diagnose_crash(JobResult& run, const std::vector<std::string>& phases) {
  std::vector<int> crashed, waiting;
  for (const auto& r : run.ranks) {
    if (r.state == RankState::Crashed) crashed.push_back(r.rank);
    else if (r.blocked_in) waiting.push_back(r.rank);
  }
  const RankOutcome& first = run.ranks[crashed.front()];
  run.blamed_rank = first.rank;
  std::ostringstream out;
  // Ranks that issued different collectives can make the backend itself end them (MPI aborts
  // on a truncated message): the divergence is the cause, the crash its consequence.
  if (describe_divergence(run, out)) out << " Then ";
  out << "rank " << first.rank << " crashed (" << (first.how_died.empty() ? "how is unknown" : first.how_died) << ")";
  if (first.blocked_in) out << " inside " << first.blocked_in->describe();
  else out << " after " << collectives(first.trace.size());
  for (size_t i = 1; i < crashed.size(); ++i) {
    const auto& other = run.ranks[crashed[i]];
    out << "; rank " << other.rank << " crashed too (" << other.how_died << ")";
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
  (void)phases;
  run.diagnosis = out.str();
}

void diagnose_hang(JobResult& run, const std::vector<std::string>& phases, std::chrono::milliseconds deadline) {
  auto phase_of = [&](int rank) { return rank < static_cast<int>(phases.size()) ? phases[rank] : std::string(); };
  std::ostringstream out;

  if (describe_divergence(run, out)) {
    run.diagnosis = out.str();
    return;
  }

  // The collective some ranks were waiting in: the latest one any rank was blocked in.
  std::vector<int> waiting;
  const CollectiveRecord* waited = nullptr;
  for (const auto& r : run.ranks) {
    if (!r.blocked_in) continue;
    if (!waited || r.blocked_in->seq > waited->seq) waited = &*r.blocked_in;
  }
  if (waited != nullptr) {
    std::vector<int> missing;
    for (const auto& r : run.ranks) {
      const bool entered = r.trace.size() > waited->seq;
      if (entered && r.blocked_in && r.blocked_in->seq == waited->seq) waiting.push_back(r.rank);
      else if (!entered || (r.blocked_in && r.blocked_in->seq < waited->seq)) missing.push_back(r.rank);
    }
    bool missing_finished = !missing.empty();
    for (int m : missing) missing_finished = missing_finished && run.ranks[m].state == RankState::Finished;
    if (missing_finished && waiting.size() < missing.size()) {
      // Fewer ranks waited in a collective than finished without it: the few issued one too many
      // (with as many on each side, skipping and adding cannot be told apart; the finished are blamed).
      run.blamed_rank = waiting.front();
      out << describe_ranks(waiting) << " entered " << waited->describe() << " that " << describe_ranks(missing)
          << " never issued: they finished their tasks after " << collectives(waited->seq)
          << " (blamed on the fewer ranks: " << describe_ranks(waiting) << " issued a collective too many). "
          << kSameOrder;
      run.diagnosis = out.str();
      return;
    }
    if (!missing.empty()) {
      run.blamed_rank = missing.front();
      const RankOutcome& culprit = run.ranks[missing.front()];
      if (culprit.state == RankState::Raised && missing.size() == 1) {
        out << "rank " << culprit.rank << " raised " << culprit.error_type << " before " << waited->describe()
            << " while " << describe_ranks(waiting) << " waited in it: " << first_line(culprit.error);
      } else {
        out << describe_ranks(missing) << " never entered " << waited->describe() << " that "
            << describe_ranks(waiting) << (waiting.size() == 1 ? " was" : " were") << " waiting in";
        for (int m : missing) out << "; " << doing_instead(run.ranks[m], phase_of(m));
      }
      out << ". " << kSameOrder;
      run.diagnosis = out.str();
      return;
    }
    // Every rank entered it, yet some completed it (and went on) while others still wait in it:
    // on the waiting side it paired with a collective the communicator never saw (the task's own
    // c10d call, waited without a timeout). The trace cannot say who skipped or added that call:
    // the blame comes from each rank's last known position, on the fewer side (a tie blames the
    // ranks that went on, as for a skipped collective).
    std::vector<int> went_on;
    for (const auto& r : run.ranks) {
      if (std::find(waiting.begin(), waiting.end(), r.rank) == waiting.end()) went_on.push_back(r.rank);
    }
    if (!went_on.empty() && !waiting.empty()) {
      const bool blame_waiting = waiting.size() < went_on.size();
      const std::vector<int>& blamed = blame_waiting ? waiting : went_on;
      run.blamed_rank = blamed.front();
      out << describe_ranks(went_on) << " completed " << waited->describe() << " that " << describe_ranks(waiting)
          << (waiting.size() == 1 ? " was" : " were") << " still waiting in: it paired with a collective the "
          << "communicator's trace does not show (the task's own c10d call, such as a raw Gloo collective "
          << "waited without a timeout, issued on some ranks and not on others). Blamed from each rank's last "
          << "known position:";
      for (const auto& r : run.ranks) {
        out << " rank " << r.rank;
        const std::string phase = phase_of(r.rank);
        if (!phase.empty()) out << " at " << phase;
        if (r.blocked_in) out << ", inside " << r.blocked_in->describe();
        else if (!r.trace.empty()) out << ", last entered " << r.trace.back().describe() << " (" << to_string(r.state) << ")";
        else out << ", no collective entered (" << to_string(r.state) << ")";
        out << ";";
      }
      out << " on the fewer side, " << describe_ranks(blamed) << " ("
          << (blame_waiting ? "issued a collective the others did not"
                            : waiting.size() == went_on.size() ? "as many on each side: the ranks that went on are blamed, "
                                                                 "as for a skipped collective"
                                                               : "skipped a collective the others issued")
          << "). " << kSameOrder;
      run.diagnosis = out.str();
      return;
    }
    out << "every rank entered " << waited->describe() << " but it did not complete within "
        << deadline.count() << " ms: the backend stalled, or the deadline is too short for this work.";
    run.diagnosis = out.str();
    return;
  }

  // Nobody was inside a collective: some rank did not finish its task by the deadline.
  std::vector<int> late;
  for (const auto& r : run.ranks) {
    if (r.state == RankState::Stuck || r.state == RankState::TimedOut) late.push_back(r.rank);
  }
  if (late.size() < run.ranks.size() && !late.empty()) run.blamed_rank = late.front();
  out << describe_ranks(late) << " did not finish within " << deadline.count() << " ms";
  for (int l : late) out << "; " << doing_instead(run.ranks[l], phase_of(l));
  out << ".";
  run.diagnosis = out.str();
}

void diagnose_error(JobResult& run) {
  std::vector<int> raised, finished;
  for (const auto& r : run.ranks) (r.state == RankState::Raised ? raised : finished).push_back(r.rank);
  std::ostringstream out;
  const RankOutcome& first = run.ranks[raised.front()];
  // Ranks that issued different collectives make the backend fail in odd ways: name the cause.
  if (describe_divergence(run, out)) {
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
    run.blamed_rank = -1;
  } else {
    out << describe_ranks(raised) << " raised " << first.error_type << " after " << collectives(first.trace.size())
        << " (rank " << first.rank << ": " << first_line(first.error) << "); " << describe_ranks(finished)
        << " finished.";
    run.blamed_rank = first.rank;
  }
  run.diagnosis = out.str();
}

}  // namespace

void diagnose(JobResult& run, const std::vector<std::string>& phases, std::chrono::milliseconds deadline) {
  bool crashed = false, hung = false, raised = false;
  for (const auto& r : run.ranks) {
    crashed |= r.state == RankState::Crashed;
    hung |= r.state == RankState::TimedOut || r.state == RankState::Stuck;
    raised |= r.state == RankState::Raised;
  }
  run.blamed_rank = -1;
  run.diagnosis.clear();
  if (crashed) {
    run.status = RunStatus::Crash;
    diagnose_crash(run, phases);
  } else if (hung) {
    run.status = RunStatus::Hang;
    diagnose_hang(run, phases, deadline);
  } else if (raised && find_divergence(run.ranks)) {
    // Ranks that contributed differently to one collective make some backends raise on some of
    // them (MPI: MPI_ERR_TRUNCATE) while the others finish or wait: the mismatch is the cause, a
    // desync like a skipped collective, whichever ranks happened to raise.
    run.status = RunStatus::Hang;
    diagnose_hang(run, phases, deadline);
    for (const auto& r : run.ranks) {
      if (r.state != RankState::Raised) continue;
      run.diagnosis += " (then rank " + std::to_string(r.rank) + " raised " + r.error_type + ": " + first_line(r.error) + ")";
      break;
    }
  } else if (raised) {
    run.status = RunStatus::Error;
    diagnose_error(run);
  } else {
    run.status = RunStatus::Completed;
  }
}

}  // namespace distmetrics::runtime::detail
