// The ranks' collectives compared (desync.h): the first sequence number where they differ, and
// the first script step one side passed without a collective the other issued in it, with the
// side to blame by the pattern of the other steps or the sides' sizes.
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "divergence.h"

namespace distmetrics::runtime::detail {

const char* const kSameOrder =
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

std::string step_name(int step, int compute) {
  CollectiveRecord record;
  record.step = step;
  record.compute = compute;
  return record.issuer();
}

namespace {

// The first sequence number at which ranks issued different collectives, with the groups.
struct Divergence {
  std::uint64_t seq = 0;
  std::vector<std::pair<CollectiveRecord, std::vector<int>>> groups;  // record issued, by which ranks
};

std::optional<Divergence> first_divergence(const std::vector<RankOutcome>& ranks) {
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

// A desync judged per script step (distmetrics/runtime/desync.h). A rank's sequence for a step is
// complete once the rank is past that step (it finished, or it is in a later one); the step it
// is in holds a prefix of what it would issue.


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

}  // namespace

bool has_divergence(const std::vector<RankOutcome>& ranks) { return first_divergence(ranks).has_value(); }

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

// The first sequence number at which ranks issued different collectives, typed
// (runtime::CollectiveMismatch): the groups sorted as the blame reads them.
std::optional<CollectiveMismatch> mismatch_of(const std::vector<RankOutcome>& ranks) {
  auto divergence = first_divergence(ranks);
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

bool same_collective(const CollectiveRecord& a, const CollectiveRecord& b) { return key_of(a) == key_of(b); }

}  // namespace distmetrics::runtime::detail

namespace distmetrics::runtime {

std::optional<StepDeviation> find_step_deviation(const std::vector<RankOutcome>& ranks) { return detail::step_deviation(ranks); }

std::optional<CollectiveMismatch> find_collective_mismatch(const std::vector<RankOutcome>& ranks) {
  return detail::mismatch_of(ranks);
}

bool same_collective(const CollectiveRecord& a, const CollectiveRecord& b) { return detail::same_collective(a, b); }

}  // namespace distmetrics::runtime
