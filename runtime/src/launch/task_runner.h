// Running one job's task on this rank: a fresh communicator, the task, and the outcome
// (finished with its JSON, raised with type and message, or timed out in a collective).
// Shared by pool workers and by peers started by mpirun or torchrun-style launchers.
#pragma once

#include <sys/resource.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "../comm/backend_factory.h"
#include "distmetrics/runtime/task.h"
#include "distmetrics/runtime/job.h"

namespace distmetrics::runtime::detail {

struct LocalRun {
  RankOutcome outcome;
  // Kept alive until every rank is done: a rank that tears down its process group early breaks
  // the collectives its peers are still inside (they would fail instead of reporting a hang).
  std::unique_ptr<Communicator> comm;
};

struct TaskHooks {
  std::function<void(const std::string& phase)> on_phase;  // "connecting", "running"
  std::shared_ptr<CollectiveObserver> observer;
};

// `store` is the fresh store of this job (unused by mpi). Never throws: every failure is
// in the outcome.
LocalRun run_task_here(const Job& job, const CommSpec& spec, const c10::intrusive_ptr<c10d::Store>& store,
                       const Deadline& deadline, const TaskHooks& hooks);

// A rank's memory limit, one way for every process that runs tasks (a local pool's worker, a
// peer rank's gloo task process, the MPI agent while it runs a task): RLIMIT_AS's soft limit set
// to `bytes` (the hard one too when `for_life`: nothing in the process may raise it again), and
// remembered for the report of an allocation failure (RankMemoryExceeded, naming the limit).
// Returns the limit it replaced, for restore_rank_memory(); nullopt when `bytes` is 0 or
// setrlimit refused (then nothing changed).
std::optional<rlimit> limit_rank_memory(std::uint64_t bytes, bool for_life);
void restore_rank_memory(const rlimit& before);

}  // namespace distmetrics::runtime::detail
