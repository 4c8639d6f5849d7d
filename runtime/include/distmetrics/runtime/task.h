// Tasks: named functions that run on every rank of a job, inside a worker process, with a
// fresh communicator. The scenario engine registers one ("scenario_variant"); tests register
// their own. A task returns JSON, which travels back to the supervisor.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "distmetrics/runtime/comm.h"

namespace distmetrics::runtime {

struct TaskContext {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  Communicator& comm;             // fresh for this job
  const nlohmann::json& params;   // Job::params
  std::string job_id;            // Job::id (for the harness: the variant id)
};

using TaskFn = std::function<nlohmann::json(TaskContext&)>;

class TaskRegistry {
 public:
  static TaskRegistry& instance();
  void add(const std::string& name, TaskFn fn);  // a second add with the same name replaces
  const TaskFn* find(const std::string& name) const;
  std::vector<std::string> names() const;

 private:
  std::map<std::string, TaskFn> tasks_;
};

// Says what the task is doing now, e.g. "script step 3 (compute)". A rank that dies of a signal
// names it: in the supervisor's "killed by signal 11 (SIGSEGV) in script step 3 (compute)" and on
// its stderr, with a backtrace. Cheap (no allocation); a no-op outside a worker. Cleared before
// each job.
void set_task_context(const std::string& what);

// Sends a piece of the task's result ahead of its end (the harness: each script step a rank
// completed). The supervisor keeps every record, in order, in RankOutcome::records of a rank that
// does not finish: a hang's kill, a crash or a collective's timeout leaves what it recorded before.
// Queued with the collectives' progress (sent within a few ms, and by a rank that dies of a
// signal before its dying report); never blocks the task longer than the channel's send budget.
// A no-op outside a local pool's rank worker.
void post_task_record(const nlohmann::json& record);

// Registers a task at static-initialization time:
//   DISTMETRICS_TASK(my_task) { return {{"sum", ctx.rank}}; }   // ctx is TaskContext&
#define DISTMETRICS_TASK(name)                                                               \
  static nlohmann::json distmetrics_task_##name(::distmetrics::runtime::TaskContext& ctx);   \
  static const bool distmetrics_task_registered_##name = [] {                                \
    ::distmetrics::runtime::TaskRegistry::instance().add(#name, &distmetrics_task_##name);   \
    return true;                                                                             \
  }();                                                                                       \
  static nlohmann::json distmetrics_task_##name(::distmetrics::runtime::TaskContext& ctx)

}  // namespace distmetrics::runtime
