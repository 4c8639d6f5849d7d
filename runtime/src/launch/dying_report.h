// A fatal signal or an exit() inside a task: the supervisor learns it from the rank itself, even
// when it is not the rank's parent (mpirun started it), as "killed by signal N (NAME)" or "exit
// status N" on the control channel (docs/runtime.md, "Diagnosis and blame").
#pragma once

#include <atomic>
#include <cstddef>

namespace distmetrics::runtime::detail {

// What the task is doing now (set_task_context): written by the task's thread, read by a signal
// handler, so a fixed buffer of JSON-safe characters and a length published last.
inline constexpr std::size_t kTaskContextBytes = 160;
extern char task_context[kTaskContextBytes];
extern std::atomic<std::size_t> task_context_length;
extern std::atomic<int> worker_rank;  // this worker's rank, for the report

// Reports a fatal signal or an exit() on `fd` (the worker's control channel) from now on.
void arm_dying_report(int fd);
void disarm_dying_report();

// Writes the collectives the worker's progress reporter still holds to `fd` (worker.cpp): a dying
// rank writes them before its report, so that its trace stays whole.
void write_queued_progress(int fd);

}  // namespace distmetrics::runtime::detail
