// Reading a job's rank outcomes: the run's status, the rank to blame (by the rules of
// distmetrics/runtime/blame.h), and one paragraph that says what happened ("rank 1 never entered
// all_reduce(sum) #3 (float64 [4]) that ranks 0, 2, 3 were waiting in; rank 1 finished its task
// after 3 collectives"). The blame module: every blamed_rank is set here (assign_blame).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "distmetrics/runtime/comm.h"
#include "distmetrics/runtime/job.h"

namespace distmetrics::runtime::detail {

// Sets run.status, run.blamed_rank, run.blame_rule, run.diagnosis and run.diagnosis_once_told
// from run.ranks (state, trace, blocked_in, error, how_died). `phases[r]` is the last phase rank r
// reported ("connecting", "running") for ranks without an outcome; may be empty.
void diagnose(JobResult& run, const std::vector<std::string>& phases, std::chrono::milliseconds deadline);

// The one place a run's blame is set: `rank` (-1 for none) by `rule`.
void assign_blame(JobResult& run, BlameRule rule, int rank);

// The runners' own rules. The pool could not start: the rank whose start failed (-1: unknown).
void blame_failed_start(JobResult& run, int failed_rank);
// A peer heard no report from rank 0: rank 0.
void blame_silent_rank0(JobResult& run);
// The peer runner heard nothing from `silent` by the deadline plus its grace while the others
// reported: on a hang that not every rank shares, one silent rank is blamed, several none (a rank
// cut off explains what the others saw). Whether the rule applied.
bool blame_silent_ranks(JobResult& run, const std::vector<int>& silent, std::size_t world_size);

// A runner's note on the diagnosis, kept in both of its readings (diagnosis, diagnosis_once_told):
// before it, or on a line of its own after it.
void prefix_diagnosis(JobResult& run, const std::string& text);
void add_diagnosis_line(JobResult& run, const std::string& line);

// "rank 2" or "ranks 0, 1, 3".
std::string describe_ranks(const std::vector<int>& ranks);

// Whether two ranks' records of one collective (the same sequence number) match: the same
// operation and dtype, and the same shape but for an all_gather (whose contributions may differ).
bool same_collective(const CollectiveRecord& a, const CollectiveRecord& b);

}  // namespace distmetrics::runtime::detail
