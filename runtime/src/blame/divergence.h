// The ranks' collectives compared (divergence.cpp) and put in words (describe_divergence.cpp):
// shared by the diagnosis of hangs, crashes and errors.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "distmetrics/runtime/desync.h"
#include "distmetrics/runtime/job.h"

namespace distmetrics::runtime::detail {

// "Every rank must issue the same collectives in the same order (...)".
extern const char* const kSameOrder;

// "1 collective", "3 collectives".
std::string collectives(size_t n);
// Two ranks issued "the same" collective when op and dtype agree, and the shape too except for
// gathers (whose first dimension may differ by design).
std::string key_of(const CollectiveRecord& record);
// "all_reduce(sum) (float64 [2])".
std::string what_issued(const CollectiveRecord& record);

// A step of the script: (step, compute), compute -1 outside computes.
using StepKey = std::pair<int, int>;
inline StepKey step_of(const CollectiveRecord& record) { return {record.step, record.compute}; }
// "compute 2 (script step 4)", "script step 3".
std::string step_name(int step, int compute);

// Whether some sequence number holds different collectives on different ranks.
bool has_divergence(const std::vector<RankOutcome>& ranks);
std::optional<StepDeviation> step_deviation(const std::vector<RankOutcome>& ranks);
std::optional<CollectiveMismatch> mismatch_of(const std::vector<RankOutcome>& ranks);
// Nobody is missing: the ranks entered the same collective with contributions that do not match.
bool is_odd_one_out(const CollectiveMismatch& m);

// Whether the blame of the first divergence is left to evidence the runtime lacks: an even split
// (a step deviation that blames no side), or, where no step parted, a mismatch tie.
bool blame_is_open(const std::vector<RankOutcome>& ranks);

// The first divergence in words, appended to `out`, and its blame assigned: a step deviation
// first (it explains every later difference of sequence numbers), else a mismatch. False (and
// nothing written) when every rank issued the same sequence. `once_told`: leave out the sentence
// that an open blame's evidence overrules (JobResult::diagnosis_once_told).
bool describe_divergence(JobResult& run, std::ostringstream& out, bool once_told);

// What a stopped run's diagnosis reads besides the ranks' outcomes.
struct DiagnosisInput {
  const std::vector<std::string>& phases;  // the last phase each rank reported; may be short
  std::chrono::milliseconds deadline;
  bool once_told = false;                  // describe_divergence's `once_told`
  std::string phase_of(int rank) const { return rank < static_cast<int>(phases.size()) ? phases[rank] : std::string(); }
};

// What a rank that did not reach a collective was doing instead.
std::string doing_instead(const RankOutcome& r, const std::string& phase);

// Some rank timed out, or never answered (hang.cpp).
void diagnose_hang(JobResult& run, const DiagnosisInput& in);

}  // namespace distmetrics::runtime::detail
