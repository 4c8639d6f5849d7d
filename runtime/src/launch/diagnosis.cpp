#include "diagnosis.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "distmetrics/runtime/desync.h"
#include "distmetrics/runtime/errors.h"
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

// A desync judged per script step (distmetrics/runtime/desync.h). A rank's sequence for a step is
// complete once the rank is past that step (it finished, or it is in a later one); the step it
// is in holds a prefix of what it would issue.
using StepKey = std::pair<int, int>;  // (step, compute)

StepKey step_of(const CollectiveRecord& record) { return {record.step, record.compute}; }

std::string step_name(const StepKey& key) {
  CollectiveRecord record;
  record.step = key.first;
  record.compute = key.second;
  return record.issuer();
}

struct RankSteps {
  RankSteps() = default;
  RankSteps(const RankSteps&) = delete;
  RankSteps& operator=(const RankSteps&) = delete;
  int rank = 0;
  const RankOutcome* outcome = nullptr;
  std::vector<CollectiveRecord> records;  // its trace, with the collective it is blocked in
  std::map<StepKey, std::vector<const CollectiveRecord*>> issued;  // into `records` (a RankSteps is never copied)
  bool passed_all = false;    // it finished its task: it is past every step
  std::optional<StepKey> at;  // the step it is in; unknown when it issued nothing and did not finish
  bool passed(const StepKey& key) const { return passed_all || (at && key < *at); }
  bool reached(const StepKey& key) const { return passed(key) || (at && key == *at); }
  const std::vector<const CollectiveRecord*>& in(const StepKey& key) const {
    static const std::vector<const CollectiveRecord*> none;
    const auto it = issued.find(key);
    return it == issued.end() ? none : it->second;
  }
};

std::optional<std::vector<RankSteps>> steps_of(const std::vector<RankOutcome>& ranks) {
  std::vector<RankSteps> out(ranks.size());
  bool any = false;
  for (size_t i = 0; i < ranks.size(); ++i) {
    RankSteps& r = out[i];
    r.rank = ranks[i].rank;
    r.outcome = &ranks[i];
    r.records = ranks[i].trace;
    const auto& blocked = ranks[i].blocked_in;
    if (blocked && (r.records.empty() || r.records.back().seq < blocked->seq)) r.records.push_back(*blocked);
    for (const auto& record : r.records) {
      if (record.step < 0) return std::nullopt;
      any = true;
    }
    for (const auto& record : r.records) r.issued[step_of(record)].push_back(&record);
    if (ranks[i].state == RankState::Finished) r.passed_all = true;
    else if (blocked) r.at = step_of(*blocked);
    else if (!r.records.empty()) r.at = step_of(r.records.back());
  }
  if (!any) return std::nullopt;
  return out;
}

std::vector<std::string> keys_of(const std::vector<const CollectiveRecord*>& records, size_t n) {
  std::vector<std::string> keys;
  for (size_t i = 0; i < std::min(n, records.size()); ++i) keys.push_back(key_of(*records[i]));
  return keys;
}

// One step compared across ranks: every sequence must be a prefix of the longest one (else the
// ranks issued different collectives in it: `mismatch`), and a rank past the step must have
// issued all of it (else `fewer` passed it without the collective at index `parted`, which
// `more` issued).
struct StepComparison {
  bool mismatch = false;
  const std::vector<const CollectiveRecord*>* longest = nullptr;
  size_t parted = 0;
  std::vector<int> fewer, more;
  bool parts() const { return !mismatch && !fewer.empty() && !more.empty(); }
};

StepComparison compare_step(const std::vector<RankSteps>& ranks, const StepKey& key) {
  StepComparison c;
  c.longest = &ranks.front().in(key);
  for (const auto& r : ranks)
    if (r.in(key).size() > c.longest->size()) c.longest = &r.in(key);
  const auto reference = keys_of(*c.longest, c.longest->size());
  std::optional<size_t> shortest_passed;
  for (const auto& r : ranks) {
    const auto& seq = r.in(key);
    if (keys_of(seq, seq.size()) != std::vector<std::string>(reference.begin(), reference.begin() + seq.size())) {
      c.mismatch = true;
      return c;
    }
    if (r.passed(key) && (!shortest_passed || seq.size() < *shortest_passed)) shortest_passed = seq.size();
  }
  if (!shortest_passed || *shortest_passed == c.longest->size()) return c;
  c.parted = *shortest_passed;
  for (const auto& r : ranks) {
    const auto& seq = r.in(key);
    if (seq.size() > c.parted) c.more.push_back(r.rank);
    else if (r.passed(key) && seq.size() == c.parted) c.fewer.push_back(r.rank);
  }
  return c;
}

std::string ops_text(const std::vector<CollectiveRecord>& records, size_t n) {
  std::string text;
  for (size_t i = 0; i < n && i < records.size(); ++i) text += (text.empty() ? "" : ", ") + what_issued(records[i]);
  return text.empty() ? "nothing" : text;
}

// Where each rank is now, ranks in the same place together: "rank 1 waits in all_reduce(sum) #5
// (float64 [2]) of compute 4 (script step 10); ranks 0, 2 finished their tasks".
std::string where_ranks_are(const std::vector<RankOutcome>& ranks) {
  std::vector<std::pair<std::string, std::vector<int>>> places;
  for (const auto& o : ranks) {
    std::string place;
    if (o.blocked_in) place = " in " + o.blocked_in->describe() + (o.blocked_in->step >= 0 ? " of " + o.blocked_in->issuer() : "");
    else if (o.state == RankState::Finished) place = "finished";
    else if (o.state == RankState::Crashed) place = "crashed (" + o.how_died + ")";
    else if (o.state == RankState::Raised) place = "raised " + o.error_type;
    else place = "ran outside any collective";
    auto it = std::find_if(places.begin(), places.end(), [&](const auto& p) { return p.first == place; });
    if (it == places.end()) places.push_back({place, {o.rank}});
    else it->second.push_back(o.rank);
  }
  std::string out;
  for (const auto& [place, who] : places) {
    const bool one = who.size() == 1;
    std::string text = place;
    if (place.rfind(" in ", 0) == 0) text = (one ? "waits" : "wait") + place;
    else if (place == "finished") text = one ? "finished its task" : "finished their tasks";
    out += (out.empty() ? "" : "; ") + describe_ranks(who) + " " + text;
  }
  return out;
}

std::optional<StepDeviation> step_deviation(const std::vector<RankOutcome>& ranks) {
  if (ranks.empty()) return std::nullopt;
  const auto steps = steps_of(ranks);
  if (!steps) return std::nullopt;
  std::set<StepKey> keys;
  for (const auto& r : *steps)
    for (const auto& [key, records] : r.issued) keys.insert(key);
  std::optional<StepKey> parted_at;
  StepComparison parting;
  for (const auto& key : keys) {
    const StepComparison c = compare_step(*steps, key);
    if (c.mismatch) return std::nullopt;  // different collectives in one step: named by sequence number
    if (c.parts()) {
      parted_at = key;
      parting = c;
      break;
    }
  }
  if (!parted_at) return std::nullopt;
  const StepKey at = *parted_at;
  const bool is_compute = at.second >= 0;

  // The pattern: the other steps of this kind that every rank reached and one passed, where
  // their collectives agree; each matches the sequence of one side, or neither.
  const auto fewer_keys = keys_of(*parting.longest, parting.parted);
  const auto more_keys = keys_of(*parting.longest, parting.parted + 1);
  std::vector<StepKey> for_fewer, for_more;
  for (const auto& key : keys) {
    if (key == at || (key.second >= 0) != is_compute) continue;
    bool all_reached = true, any_passed = false;
    for (const auto& r : *steps) {
      all_reached = all_reached && r.reached(key);
      any_passed = any_passed || r.passed(key);
    }
    if (!all_reached || !any_passed) continue;
    const StepComparison c = compare_step(*steps, key);
    if (c.mismatch || c.parts()) continue;
    const auto agreed = keys_of(*c.longest, c.longest->size());
    if (agreed == fewer_keys) for_fewer.push_back(key);
    else if (agreed.size() > parting.parted && std::equal(more_keys.begin(), more_keys.end(), agreed.begin()))
      for_more.push_back(key);
  }

  StepDeviation d;
  d.step = at.first;
  d.compute = at.second;
  d.more = parting.more;
  d.fewer = parting.fewer;
  d.fewer_issued = parting.parted;
  for (const auto* r : *parting.longest) d.issued.push_back(*r);
  if (for_fewer.size() != for_more.size()) {
    d.blamed = for_fewer.size() > for_more.size() ? d.more : d.fewer;
    d.pattern = for_fewer.size() > for_more.size() ? for_fewer : for_more;
  } else if (d.fewer.size() != d.more.size()) {
    d.blamed = d.fewer.size() < d.more.size() ? d.fewer : d.more;
  }
  // The parting collective as a rank of `more` blocked in it issued it, if one is.
  d.parted = *(*parting.longest)[parting.parted];
  d.more_wait_in_it = true;
  for (int m : d.more) {
    const auto& r = (*steps)[m];
    const CollectiveRecord* mine = r.in(at)[parting.parted];
    const bool blocked_here = r.outcome->blocked_in && r.outcome->blocked_in->seq == mine->seq;
    if (blocked_here) d.parted = *mine;
    d.more_wait_in_it = d.more_wait_in_it && blocked_here;
  }
  return d;
}

// A desync judged per script step, in words: what the blamed side did, why it is blamed (the
// pattern of the other steps, or the sides' sizes), what followed, where every rank is.
bool describe_step_divergence(JobResult& run, std::ostringstream& out) {
  const auto deviation = step_deviation(run.ranks);
  if (!deviation) return false;
  const StepDeviation& d = *deviation;
  const StepKey at{d.step, d.compute};
  const bool is_compute = d.compute >= 0;
  const std::string where = step_name(at);
  const std::string more_did = describe_ranks(d.more) + " issued " + d.parted.describe() + " in " + where + ", which " +
                               describe_ranks(d.fewer) + " never issued";
  const std::string fewer_did = describe_ranks(d.fewer) + (is_compute ? " returned from " : " passed ") + where +
                                " without its " + d.parted.describe() + ", which " + describe_ranks(d.more) +
                                (d.more_wait_in_it ? (d.more.size() == 1 ? " waits in" : " wait in") : " issued");
  const bool blame_fewer = !d.blamed.empty() && d.blamed == d.fewer;
  if (d.blamed.empty()) {
    out << "ranks split evenly over " << where << ": " << more_did << " (" << describe_ranks(d.more) << " did more: "
        << collectives(d.issued.size()) << " in it against " << d.fewer_issued << "). " << even_split_unblamed_text(d);
  } else {
    const std::vector<int>& spared = blame_fewer ? d.more : d.fewer;
    out << (blame_fewer ? fewer_did : more_did) << ". " << (d.blamed.size() == 1 ? "Rank " : "Ranks ");
    for (size_t i = 0; i < d.blamed.size(); ++i) out << (i ? ", " : "") << d.blamed[i];
    out << (d.blamed.size() == 1 ? " is" : " are") << " blamed: ";
    if (!d.pattern.empty()) {
      out << "in the other " << (is_compute ? "computes" : "steps") << " where the ranks agree (";
      for (size_t i = 0; i < d.pattern.size() && i < 3; ++i) out << (i ? ", " : "") << step_name(d.pattern[i]);
      if (d.pattern.size() > 3) out << ", ...";
      // What the spared side issued here: through the parting collective, or up to it.
      const size_t shown = blame_fewer ? d.fewer_issued + 1 : d.fewer_issued;
      out << "), every rank issued what " << describe_ranks(spared) << " issued here (" << ops_text(d.issued, shown)
          << (blame_fewer && d.issued.size() > shown ? ", ..." : "") << "), not what " << describe_ranks(d.blamed)
          << " did.";
    } else {
      out << "the fewer ranks (" << d.blamed.size() << " against " << spared.size() << "); no other "
          << (is_compute ? "compute" : "step") << " where the ranks agree tells which sequence is the metric's.";
    }
  }
  // What followed: a side that passed a step without its collectives pairs its next ones with the
  // other side's of that step (which complete, wrongly, until nothing pairs).
  for (int f : d.fewer) {
    const auto& trace = run.ranks[f].trace;
    const auto found = std::find_if(trace.begin(), trace.end(), [&](const CollectiveRecord& r) { return r.seq == d.parted.seq; });
    if (found == trace.end() || step_of(*found) == at || key_of(*found) != key_of(d.parted)) continue;
    out << " Then " << describe_ranks(d.fewer) << " issued " << (d.fewer.size() == 1 ? "its" : "their")
        << " collectives of " << found->issuer() << " while " << describe_ranks(d.more) << " waited in those of "
        << d.parted.issuer() << ": from #" << d.parted.seq << " on, collectives of different computes were paired.";
    break;
  }
  out << " Now " << where_ranks_are(run.ranks) << ". " << kSameOrder;
  run.blamed_rank = d.blamed.empty() ? -1 : d.blamed.front();
  return true;
}

// The first sequence number at which ranks issued different collectives, typed
// (runtime::CollectiveMismatch): the groups sorted as the blame reads them.
std::optional<CollectiveMismatch> mismatch_of(const std::vector<RankOutcome>& ranks) {
  auto divergence = find_divergence(ranks);
  if (!divergence) return std::nullopt;
  CollectiveMismatch m;
  m.seq = divergence->seq;
  m.groups = std::move(divergence->groups);
  // The smallest group of ranks that issued something else is blamed (as large: the group that
  // does not hold the lowest rank, whose sequence is taken as the reference).
  std::stable_sort(m.groups.begin(), m.groups.end(), [](const auto& a, const auto& b) {
    if (a.second.size() != b.second.size()) return a.second.size() > b.second.size();
    return a.second.front() < b.second.front();
  });
  m.every_rank_inside = true;
  for (const auto& r : ranks) {
    if (r.trace.size() <= m.seq) m.silent.push_back(r.rank);
    m.every_rank_inside = m.every_rank_inside && r.blocked_in && r.blocked_in->seq == m.seq;
  }
  return m;
}

// Nobody is missing: the ranks entered the same collective with contributions that do not match.
bool is_odd_one_out(const CollectiveMismatch& m) {
  bool same_op = true;
  for (const auto& g : m.groups) same_op = same_op && g.first.op == m.groups.front().first.op;
  return m.every_rank_inside && same_op && m.silent.empty() && m.groups.size() > 1;
}

// "ranks disagree at #2: rank 0 issued all_gather (...), ranks 1, 2 issued all_reduce(sum) (...)",
// blaming the smallest group. False when every rank issued the same sequence.
bool describe_divergence(JobResult& run, std::ostringstream& out) {
  // Judged per script step where the records carry it: a step passed without a collective its
  // peers issued in it explains every later difference of sequence numbers too.
  if (describe_step_divergence(run, out)) return true;
  const auto mismatch = mismatch_of(run.ranks);
  if (!mismatch) return false;
  const auto& groups = mismatch->groups;
  run.blamed_rank = mismatch->blamed();
  if (is_odd_one_out(*mismatch)) {
    // PyTorch-Ignite 0.4.13's Precision sends int64 [] from an empty rank where its peers send
    // float64 [5]. Name what differs and the odd rank out.
    const auto& odd = groups.back();
    out << "mismatched collective #" << mismatch->seq << ": every rank entered it and none is missing, but "
        << describe_ranks(odd.second) << " issued " << what_issued(odd.first) << " where ";
    for (size_t i = 0; i + 1 < groups.size(); ++i)
      out << (i ? ", " : "") << describe_ranks(groups[i].second) << " issued " << what_issued(groups[i].first);
    out << ". " << mismatch_blame_text(*mismatch) << " Every rank must contribute the same "
        << "operation, dtype and shape to a collective (a rank with no data must still send tensors shaped like "
        << "its peers').";
    return true;
  }
  out << "ranks disagree at #" << mismatch->seq << ": ";
  for (size_t i = 0; i < groups.size(); ++i) {
    out << (i ? ", " : "") << describe_ranks(groups[i].second) << " issued " << what_issued(groups[i].first);
  }
  if (!mismatch->silent.empty()) out << ", " << describe_ranks(mismatch->silent) << " issued nothing";
  out << ". " << mismatch_blame_text(*mismatch) << " " << kSameOrder;
  return true;
}

// A rank killed by SIGPIPE wrote to a connection its peer had closed: it followed from another
// rank's end (a host lost: ranks on other hosts die writing to it), not the cause.
bool died_writing_to_a_closed_peer(const RankOutcome& r) { return r.how_died.find("(SIGPIPE)") != std::string::npos; }

void diagnose_crash(JobResult& run, const std::vector<std::string>& phases) {
  std::vector<int> crashed, waiting;
  for (const auto& r : run.ranks) {
    if (r.state == RankState::Crashed) crashed.push_back(r.rank);
    else if (r.blocked_in) waiting.push_back(r.rank);
  }
  // The ranks that died of something else come first: the first of them is blamed.
  std::stable_partition(crashed.begin(), crashed.end(),
                        [&](int r) { return !died_writing_to_a_closed_peer(run.ranks[r]); });
  const RankOutcome& first = run.ranks[crashed.front()];
  run.blamed_rank = first.rank;
  std::ostringstream out;
  // Ranks that issued different collectives can make the backend itself end them (MPI aborts
  // on a truncated message): the divergence is the cause, the crash its consequence.
  if (describe_divergence(run, out)) {
    out << " Then ";
    if (run.blamed_rank < 0) run.blamed_rank = first.rank;  // an even split blames neither side: the crash is named
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

// A rank that raised inside a collective because a peer's connection closed, while a peer that
// never entered that collective finished (or raised before it): the peer left, and on a backend
// that closes a group's connections when its task ends (torch 2.x gloo) the waiting rank raises
// instead of waiting. The skipped collective is the cause, as it is where the waiter waits
// (torch 1.13 gloo): returns that waiter, or null.
const RankOutcome* waiter_whose_peer_left(const std::vector<RankOutcome>& ranks) {
  for (const auto& r : ranks) {
    if (r.state != RankState::Raised || !r.blocked_in || r.error.find(kPeerLeftAdvice) == std::string::npos) continue;
    for (const auto& o : ranks) {
      const bool left = o.state == RankState::Finished ||
                        (o.state == RankState::Raised && o.error.find(kPeerLeftAdvice) == std::string::npos);
      if (o.rank != r.rank && left && o.trace.size() <= r.blocked_in->seq) return &r;
    }
  }
  return nullptr;
}

}  // namespace

bool same_collective(const CollectiveRecord& a, const CollectiveRecord& b) { return key_of(a) == key_of(b); }

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
  } else if (const RankOutcome* waiter = raised ? waiter_whose_peer_left(run.ranks) : nullptr) {
    run.status = RunStatus::Hang;
    const std::string after = " (then rank " + std::to_string(waiter->rank) + "'s " + waiter->blocked_in->describe() +
                              " failed: the peer's connection closed as it left: " + first_line(waiter->error) + ")";
    diagnose_hang(run, phases, deadline);
    run.diagnosis += after;
  } else if (raised) {
    run.status = RunStatus::Error;
    diagnose_error(run);
  } else {
    run.status = RunStatus::Completed;
  }
}

}  // namespace distmetrics::runtime::detail

namespace distmetrics::runtime {

std::optional<StepDeviation> find_step_deviation(const std::vector<RankOutcome>& ranks) { return detail::step_deviation(ranks); }

std::optional<CollectiveMismatch> find_collective_mismatch(const std::vector<RankOutcome>& ranks) {
  return detail::mismatch_of(ranks);
}

std::string mismatch_blame_text(const CollectiveMismatch& m) {
  return "Rank " + std::to_string(m.blamed()) + (detail::is_odd_one_out(m) ? " is the odd one out and is blamed." : " is blamed.");
}

std::string even_split_unblamed_text(const StepDeviation& d) {
  const std::string where = detail::step_name({d.step, d.compute});
  return "With as many ranks on each side and no other " + std::string(d.compute >= 0 ? "compute" : "step") +
         " where the ranks agree to tell which sequence is the metric's, neither side is blamed: look at why " + where +
         " issues " + d.parted.op +
         " on some ranks only (a number of collectives that follows the rank's own data, a rank-local cache or "
         "condition, an early return).";
}
bool same_collective(const CollectiveRecord& a, const CollectiveRecord& b) { return detail::same_collective(a, b); }

}  // namespace distmetrics::runtime
