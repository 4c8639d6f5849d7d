// The first divergence of the ranks' collectives in words (divergence.h), with its blame.
#include <algorithm>
#include <sstream>

#include "diagnosis.h"
#include "divergence.h"

namespace distmetrics::runtime::detail {
namespace {

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

// A desync judged per script step, in words: what the blamed side did, why it is blamed (the
// pattern of the other steps, or the sides' sizes), what followed, where every rank is.
bool describe_step_divergence(JobResult& run, std::ostringstream& out, bool once_told) {
  const auto deviation = step_deviation(run.ranks);
  if (!deviation) return false;
  const StepDeviation& d = *deviation;
  const StepKey at{d.step, d.compute};
  const bool is_compute = d.compute >= 0;
  const std::string where = step_name(d.step, d.compute);
  const std::string more_did = describe_ranks(d.more) + " issued " + d.parted.describe() + " in " + where + ", which " +
                               describe_ranks(d.fewer) + " never issued";
  const std::string fewer_did = describe_ranks(d.fewer) + (is_compute ? " returned from " : " passed ") + where +
                                " without its " + d.parted.describe() + ", which " + describe_ranks(d.more) +
                                (d.more_wait_in_it ? (d.more.size() == 1 ? " waits in" : " wait in") : " issued");
  const bool blame_fewer = !d.blamed.empty() && d.blamed == d.fewer;
  if (d.blamed.empty()) {
    out << "ranks split evenly over " << where << ": " << more_did << " (" << describe_ranks(d.more) << " did more: "
        << collectives(d.issued.size()) << " in it against " << d.fewer_issued << ").";
    if (!once_told) out << " " << even_split_unblamed_text(d);
  } else {
    const std::vector<int>& spared = blame_fewer ? d.more : d.fewer;
    out << (blame_fewer ? fewer_did : more_did) << ". " << (d.blamed.size() == 1 ? "Rank " : "Ranks ");
    for (size_t i = 0; i < d.blamed.size(); ++i) out << (i ? ", " : "") << d.blamed[i];
    out << (d.blamed.size() == 1 ? " is" : " are") << " blamed: ";
    if (!d.pattern.empty()) {
      out << "in the other " << (is_compute ? "computes" : "steps") << " where the ranks agree (";
      for (size_t i = 0; i < d.pattern.size() && i < 3; ++i) out << (i ? ", " : "") << step_name(d.pattern[i].first, d.pattern[i].second);
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
  if (d.blamed.empty()) assign_blame(run, BlameRule::StepEvenSplit, -1);
  else assign_blame(run, d.pattern.empty() ? BlameRule::StepFewerSide : BlameRule::StepPattern, d.blamed.front());
  return true;
}

}  // namespace

// "ranks disagree at #2: rank 0 issued all_gather (...), ranks 1, 2 issued all_reduce(sum) (...)",
// blaming the smallest group.
bool blame_is_open(const std::vector<RankOutcome>& ranks) {
  if (const auto d = step_deviation(ranks)) return d->blamed.empty();
  const auto m = mismatch_of(ranks);
  return m && m->tie();
}

bool describe_divergence(JobResult& run, std::ostringstream& out, bool once_told) {
  // Judged per script step where the records carry it: a step passed without a collective its
  // peers issued in it explains every later difference of sequence numbers too.
  if (describe_step_divergence(run, out, once_told)) return true;
  const auto mismatch = mismatch_of(run.ranks);
  if (!mismatch) return false;
  const auto& groups = mismatch->groups;
  assign_blame(run, BlameRule::MismatchSmallestGroup, mismatch->blamed());
  // Once a baseline told a tie apart, the sentence that blames a group for its place goes.
  const std::string blame_sentence = once_told && mismatch->tie() ? "" : " " + mismatch_blame_text(*mismatch);
  if (is_odd_one_out(*mismatch)) {
    // PyTorch-Ignite 0.4.13's Precision sends int64 [] from an empty rank where its peers send
    // float64 [5]. Name what differs and the odd rank out.
    const auto& odd = groups.back();
    out << "mismatched collective #" << mismatch->seq << ": every rank entered it and none is missing, but "
        << describe_ranks(odd.second) << " issued " << what_issued(odd.first) << " where ";
    for (size_t i = 0; i + 1 < groups.size(); ++i)
      out << (i ? ", " : "") << describe_ranks(groups[i].second) << " issued " << what_issued(groups[i].first);
    out << "." << blame_sentence << " Every rank must contribute the same "
        << "operation, dtype and shape to a collective (a rank with no data must still send tensors shaped like "
        << "its peers').";
    return true;
  }
  out << "ranks disagree at #" << mismatch->seq << ": ";
  for (size_t i = 0; i < groups.size(); ++i) {
    out << (i ? ", " : "") << describe_ranks(groups[i].second) << " issued " << what_issued(groups[i].first);
  }
  if (!mismatch->silent.empty()) out << ", " << describe_ranks(mismatch->silent) << " issued nothing";
  out << "." << blame_sentence << " " << kSameOrder;
  return true;
}

}  // namespace distmetrics::runtime::detail

namespace distmetrics::runtime {

std::string mismatch_blame_text(const CollectiveMismatch& m) {
  return "Rank " + std::to_string(m.blamed()) + (detail::is_odd_one_out(m) ? " is the odd one out and is blamed." : " is blamed.");
}

std::string even_split_unblamed_text(const StepDeviation& d) {
  const std::string where = detail::step_name(d.step, d.compute);
  return "With as many ranks on each side and no other " + std::string(d.compute >= 0 ? "compute" : "step") +
         " where the ranks agree to tell which sequence is the metric's, neither side is blamed: look at why " + where +
         " issues " + d.parted.op +
         " on some ranks only (a number of collectives that follows the rank's own data, a rank-local cache or "
         "condition, an early return).";
}

}  // namespace distmetrics::runtime
