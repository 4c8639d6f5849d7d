// A job's task on a peer rank (peer_runner.h), wherever its backend's descriptor says it runs
// (Backend::peer_isolation): what the task writes to the store while it runs (its progress and
// phase, for rank 0's diagnosis), the rank's memory limit around it, the child process a gloo
// task runs in (a kept ChildCall: it holds its communicator until released after the report),
// and the rank's outcome from how the task's process ended.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "distmetrics/runtime/child_call.h"
#include "distmetrics/runtime/job.h"
#include "peer_store.h"
#include "task_runner.h"

namespace distmetrics::runtime::detail {

// The hooks of a task on `rank`: every collective it enters and leaves goes to "progress/<rank>",
// every phase to "phase/<rank>" (with the pid and host of the process that runs it).
TaskHooks store_task_hooks(const c10::intrusive_ptr<c10d::Store>& store, int rank);

// What the store says a rank was doing: the collectives it entered, the one it is inside.
void fill_progress(c10d::Store& store, int rank, RankOutcome& outcome);

// While a task runs (in a gloo task's child, in the MPI agent): the rank's memory limit, as a
// local pool's worker sets it. The soft limit only, put back afterwards: the agent's own MPI (its
// start, the rendezvous broadcast) needs more than a small limit leaves. 0: none.
class TaskMemoryLimit {
 public:
  explicit TaskMemoryLimit(std::uint64_t bytes) : before_(limit_rank_memory(bytes, /*for_life=*/false)) {}
  ~TaskMemoryLimit() {
    if (before_) restore_rank_memory(*before_);
  }
  TaskMemoryLimit(const TaskMemoryLimit&) = delete;
  TaskMemoryLimit& operator=(const TaskMemoryLimit&) = delete;

 private:
  std::optional<rlimit> before_;
};

// How a task's process (the gloo child, the MPI agent) ended its part of a job.
struct TaskEnd {
  std::optional<RankOutcome> outcome;  // what it sent
  std::optional<int> wait_status;      // it ended without sending one (reaped)
  int stop_signal = 0;                 // still there at the deadline, stopped by this signal
};

// The rank's outcome: what the task sent; else, with the progress it left in the store, crashed
// (how its process died) or stuck (still there at the deadline, or stopped).
RankOutcome outcome_of(const TaskEnd& end, int rank, long pid, c10d::Store& store);

// A gloo task in a child process of the rank (its own process group, its own connection to the
// store, the rank's memory limit): a task that crashes, exits, stops itself or loops cannot take
// its rank along. The child keeps its communicator after it answered, until release(): peers may
// still be inside a collective with it until every rank has the report.
class TaskChild {
 public:
  // Starts the task now.
  TaskChild(const Job& job, const CommSpec& spec, const std::string& prefix, const StoreAddress& store,
            const Deadline& deadline, std::uint64_t rank_memory_bytes);
  // The rank's outcome by `until` (the deadline plus a moment for a task that timed out in a
  // collective to say so): what the child sent, or how it ended. Once only. `stop` (asked every
  // 20 ms at most) ends the wait early: the task is then Stuck where its progress says.
  RankOutcome wait(const Deadline& until, c10d::Store& store, const std::function<bool()>& stop = {});
  // The child may go: a healthy one gets `grace` to leave; then its process group is ended.
  void release(std::chrono::milliseconds grace) { call_.release(grace); }

 private:
  int rank_;
  ChildCall call_;
};

}  // namespace distmetrics::runtime::detail
