// A desync judged per script step. Every collective record carries the script step and compute
// that issued it (Communicator::set_issuer), and every rank runs the same script, so each rank's
// collectives of one step can be compared with its peers'. The first step where one side of the
// ranks passed the step without a collective the other side issued in it is where they parted;
// the side to blame is the one whose sequence for that step breaks the pattern the ranks keep in
// their other steps of that kind (docs/runtime.md, "Diagnosis and blame"; the rules: blame.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "distmetrics/runtime/job.h"

namespace distmetrics::runtime {

struct StepDeviation {
  int step = -1;                 // 0-based script step
  int compute = -1;              // 0-based compute within it ('compute every' has several); -1 outside computes
  CollectiveRecord parted;       // the collective `more` issued in that step and `fewer` passed it without
  bool more_wait_in_it = false;  // every rank of `more` is blocked in it
  std::vector<int> more, fewer;  // the ranks that issued it; the ranks that passed the step without it
  // `more` or `fewer`; empty when the sides are as many and no other step tells them apart.
  std::vector<int> blamed;
  std::vector<CollectiveRecord> issued;  // the step's collectives on the side that issued most
  std::size_t fewer_issued = 0;          // how many of them `fewer` issued (the first ones)
  // The other steps of its kind, (step, compute), where every rank issued the same and that
  // matched one side: the pattern. Empty when the blame comes from the sides' sizes.
  std::vector<std::pair<int, int>> pattern;
};

// Whether two ranks' records of one collective (the same sequence number) are the same
// collective: the same operation and dtype, and the same shape but for an all_gather (whose
// contributions may differ by design). Every judgement of "the ranks issued the same" uses it.
bool same_collective(const CollectiveRecord& a, const CollectiveRecord& b);

// Nothing when the ranks' collectives agree step by step, when they issued different collectives
// within one step (a mismatch, named by sequence number), or when some record carries no step
// (a task that does not declare its steps).
std::optional<StepDeviation> find_step_deviation(const std::vector<RankOutcome>& ranks);

// Ranks that issued different collectives at one sequence number, where no step parted first
// (find_step_deviation found nothing): each group of ranks with the record they issued there,
// the largest group first (as large: the group holding the lower rank first). The diagnosis
// blames the first rank of the last group.
struct CollectiveMismatch {
  std::uint64_t seq = 0;
  std::vector<std::pair<CollectiveRecord, std::vector<int>>> groups;
  std::vector<int> silent;    // ranks that issued nothing at `seq`
  bool every_rank_inside = false;  // every rank is blocked in collective `seq`
  int blamed() const { return groups.back().second.front(); }
  // The blamed group is as large as another: only the order of the ranks chose it.
  bool tie() const { return groups.size() > 1 && groups[groups.size() - 2].second.size() == groups.back().second.size(); }
};
std::optional<CollectiveMismatch> find_collective_mismatch(const std::vector<RankOutcome>& ranks);

// The sentence the diagnosis gives a mismatch for the rank it blames ("Rank 1 is blamed.", or
// "Rank 1 is the odd one out and is blamed."). JobResult::diagnosis_once_told reads without it
// where the mismatch is a tie (blame.h: tell_mismatch_tie).
std::string mismatch_blame_text(const CollectiveMismatch& mismatch);

// The sentence the diagnosis gives an even split (`blamed` empty) for why neither side is blamed
// and where to look. JobResult::diagnosis_once_told reads without it (blame.h: tell_even_split).
std::string even_split_unblamed_text(const StepDeviation& deviation);

}  // namespace distmetrics::runtime
