// Reading a job's rank outcomes: the run's status, the rank to blame, and one paragraph that
// says what happened ("rank 1 never entered all_reduce(sum) #3 (float64 [4]) that ranks 0, 2, 3
// were waiting in; rank 1 finished its task after 3 collectives").
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "distmetrics/runtime/comm.h"
#include "distmetrics/runtime/job.h"

namespace distmetrics::runtime::detail {

// Sets run.status, run.blamed_rank and run.diagnosis from run.ranks (state, trace, blocked_in,
// error, how_died). `phases[r]` is the last phase rank r reported ("connecting", "running") for
// ranks without an outcome; may be empty.
void diagnose(JobResult& run, const std::vector<std::string>& phases, std::chrono::milliseconds deadline);

// "rank 2" or "ranks 0, 1, 3".
std::string describe_ranks(const std::vector<int>& ranks);

// Whether two ranks' records of one collective (the same sequence number) match: the same
// operation and dtype, and the same shape but for an all_gather (whose contributions may differ).
bool same_collective(const CollectiveRecord& a, const CollectiveRecord& b);

}  // namespace distmetrics::runtime::detail
