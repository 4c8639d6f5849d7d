#include "task_runner.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <iomanip>
#include <new>
#include <sstream>
#include <typeinfo>

#include "distmetrics/runtime/errors.h"
#include "distmetrics/runtime/phases.h"
#include "distmetrics/runtime/text.h"

namespace distmetrics::runtime::detail {

namespace {

std::string task_not_found(const std::string& name) {
  std::string known;
  for (const auto& task : TaskRegistry::instance().names()) known += (known.empty() ? "" : ", ") + task;
  return "no task named '" + name + "' is registered in this binary (registered: " +
         (known.empty() ? "none" : known) + "); register it with DISTMETRICS_TASK in code linked into the worker";
}

}  // namespace

namespace {
std::uint64_t rank_memory_limit = 0;
}  // namespace

std::optional<rlimit> limit_rank_memory(std::uint64_t bytes, bool for_life) {
  rlimit before{};
  if (bytes == 0 || ::getrlimit(RLIMIT_AS, &before) != 0) return std::nullopt;
  rlimit limit = before;
  limit.rlim_cur = static_cast<rlim_t>(bytes);
  if (for_life) limit.rlim_max = limit.rlim_cur;
  else if (limit.rlim_max != RLIM_INFINITY && limit.rlim_cur > limit.rlim_max) limit.rlim_cur = limit.rlim_max;
  if (::setrlimit(RLIMIT_AS, &limit) != 0) return std::nullopt;
  rank_memory_limit = bytes;
  return before;
}

void restore_rank_memory(const rlimit& before) { ::setrlimit(RLIMIT_AS, &before); }

LocalRun run_task_here(const Job& job, const CommSpec& spec, const c10::intrusive_ptr<c10d::Store>& store,
                       const Deadline& deadline, const TaskHooks& hooks) {
  LocalRun run;
  RankOutcome& outcome = run.outcome;
  outcome.rank = spec.rank;
  outcome.pid = static_cast<long>(::getpid());

  const TaskFn* task = TaskRegistry::instance().find(job.task);
  if (task == nullptr) {
    outcome.state = RankState::Raised;
    outcome.error_type = "ConfigError";
    outcome.error = "rank " + std::to_string(spec.rank) + ": " + task_not_found(job.task);
    return run;
  }

  if (hooks.on_phase) hooks.on_phase("connecting");
  // The rank's phases (phases.h): what no phase claims is the task's own "rank_other".
  RankPhaseClock::start("rank_other");
  try {
    PhaseScope group("group");
    run.comm = make_communicator(spec, store, deadline);
  } catch (const std::exception& e) {
    outcome.phases = RankPhaseClock::take();
    outcome.state = deadline.expired() ? RankState::TimedOut : RankState::Raised;
    outcome.error_type = current_exception_type_name();
    outcome.error = "rank " + std::to_string(spec.rank) + ": could not build the " + spec.backend +
                    " communicator: " + short_what(e);
    // Under a small address-space limit the backend's threads cannot get their stacks (EAGAIN).
    const std::string what = e.what();
    if (rank_memory_limit > 0 && (is_allocation_failure(e) || what.find("Resource temporarily unavailable") != std::string::npos)) {
      std::ostringstream text;
      text << "rank " << spec.rank << " could not build the " << spec.backend << " communicator within its memory limit of "
           << std::fixed << std::setprecision(1) << static_cast<double>(rank_memory_limit) / (1u << 30)
           << " GiB (raise it with --rank-memory): " << short_what(e);
      outcome.error_type = kRankMemoryExceeded;
      outcome.error = text.str();
    }
    return run;
  }
  run.comm->set_op_timeout(spec.op_timeout);
  if (hooks.observer) run.comm->set_observer(hooks.observer);
  if (hooks.on_phase) hooks.on_phase("running");

  TaskContext context{spec.rank, spec.world_size, spec.local_rank, *run.comm, job.params, job.id};
  try {
    outcome.result = (*task)(context);
    outcome.state = RankState::Finished;
  } catch (const CollectiveError& e) {
    outcome.state = e.kind() == CollectiveFailure::Timeout ? RankState::TimedOut : RankState::Raised;
    outcome.error_type = "CollectiveError";
    outcome.error = e.what();
    outcome.blocked_in = e.record();  // the collective it was inside when it stopped
    outcome.peer_left = e.peer_left();
  } catch (const std::exception& e) {
    outcome.state = RankState::Raised;
    outcome.error_type = current_exception_type_name();
    outcome.error = short_what(e);
    if (rank_memory_limit > 0 && is_allocation_failure(e)) {
      std::ostringstream text;
      text << "rank " << spec.rank << " went past its memory limit of " << std::fixed << std::setprecision(1)
           << static_cast<double>(rank_memory_limit) / (1u << 30)
           << " GiB (an allocation failed; raise it with --rank-memory if the metric needs more): " << outcome.error;
      outcome.error_type = kRankMemoryExceeded;
      outcome.error = text.str();
    }
  } catch (...) {
    outcome.state = RankState::Raised;
    outcome.error_type = current_exception_type_name();
    outcome.error = "an exception that is not a std::exception";
  }
  outcome.trace = run.comm->trace();
  run.comm->set_observer(nullptr);
  outcome.phases = RankPhaseClock::take();
  return run;
}

}  // namespace distmetrics::runtime::detail

namespace distmetrics::runtime {

bool is_allocation_failure(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e)) return true;
  const std::string what = e.what();
  return what.find("can't allocate memory") != std::string::npos || what.find("std::bad_alloc") != std::string::npos;
}

}  // namespace distmetrics::runtime
