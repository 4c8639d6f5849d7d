// What running one job on a set of ranks produced, whatever launched the ranks.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "distmetrics/runtime/comm.h"
#include "distmetrics/runtime/phases.h"

namespace distmetrics::runtime {

// One job to run: which task, with which parameters, on which backend and device.
struct Job {
  std::string id;                    // readable and unique within a run, e.g. "accuracy/gloo/ws4/uneven/cpu"
  std::string task;                  // a TaskRegistry name
  nlohmann::json params = nlohmann::json::object();
  std::string backend = "gloo";      // "gloo", "nccl", "mpi"
  std::string comm_device = "cpu";   // "cpu" or "cuda" (cuda:local_rank); NCCL is always cuda
  std::chrono::milliseconds deadline{std::chrono::seconds(60)};  // the whole job
  // Each collective's own deadline; zero means "the job's deadline".
  std::chrono::milliseconds op_timeout{0};
};

enum class RankState {
  Finished,  // the task returned
  Raised,    // the task threw an ordinary error (not a collective timeout)
  TimedOut,  // a collective's deadline passed on this rank (it reported so)
  Stuck,     // no answer by the job's deadline; ended by the supervisor
  Crashed,   // died on its own (signal or exit status)
  Ended,     // ended by the supervisor because another rank hung or crashed
};
const char* to_string(RankState state);

struct RankOutcome {
  int rank = 0;
  long pid = 0;
  RankState state = RankState::Finished;
  nlohmann::json result;                      // the task's return value (Finished only)
  std::string error;                          // message (Raised, TimedOut)
  std::string error_type;                     // e.g. "CollectiveError", "NotComputableError"
  std::vector<CollectiveRecord> trace;        // collectives this rank completed or entered
  std::optional<CollectiveRecord> blocked_in; // the collective it was inside when it stopped
  std::string how_died;                       // "killed by signal 6 (SIGABRT)", "exit status 1"
  std::string log_tail;                       // last lines of the rank's stderr, if captured
  // Ended while blocked on the job's store (a get or wait no running rank would answer), outside
  // any collective: where a rank making a process group alone waits (rank_pool.cpp, fates_known).
  bool blocked_on_store = false;
  PhaseSeconds phases;                        // where the rank's time went (phases.h); empty when unmeasured
  // What the task sent ahead of its end (post_task_record, task.h), in order: kept for a rank
  // that did not finish (it hung, crashed, raised or was ended), so that what it completed before
  // is still known; empty for a finished rank (its result holds it all) and where the launch mode
  // carries none (the peer launch modes).
  std::vector<nlohmann::json> records;
};

enum class RunStatus {
  Completed,  // every rank finished
  Error,      // some rank raised an ordinary error, none hung or crashed
  Hang,       // some rank timed out in a collective or never answered
  Crash,      // some rank died
};
const char* to_string(RunStatus status);

struct JobResult {
  RunStatus status = RunStatus::Completed;
  std::vector<RankOutcome> ranks;  // indexed by rank
  int blamed_rank = -1;            // Hang/Crash/Error: the rank at fault, when one can be named
  std::string diagnosis;           // one paragraph: what happened, on which rank, what to do
  double seconds = 0.0;        // the whole run, pool start included
  double start_seconds = 0.0;  // of which starting (or restarting) the rank pool took
  // The supervisor's phases (phases.h): pool_start, imports, ranks, hang_wait, end_workers.
  PhaseSeconds phases;

  nlohmann::json to_json() const;
};

// Runs jobs on ranks, however they were launched (a supervised local pool, or peers
// started by mpirun or torchrun-style launchers).
class JobRunner {
 public:
  virtual ~JobRunner() = default;
  virtual JobResult run(const Job& job) = 0;
  virtual int world_size() const = 0;
};

}  // namespace distmetrics::runtime
