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
  // Raised: its collective failed because a peer's connection closed (CollectiveError::peer_left).
  bool peer_left = false;
  std::string how_died;                       // "killed by signal 6 (SIGABRT)", "exit status 1"
  int died_of_signal = 0;                     // Crashed: the signal that ended it, when one did (0: none known)
  std::string log_tail;                       // last lines of the rank's stderr, if captured
  // Ended while blocked on the job's store (a get or wait no running rank would answer), outside
  // any collective: where a rank making a process group alone waits (pool_supervision.cpp, fates_known).
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

// The rule that named the rank at fault, or found none to name (blame.h: blame_rules() lists
// them in the order they are tried, with when each applies and whom it blames).
enum class BlameRule {
  None,                   // the run completed, or nothing was judged
  PoolStartFailed,        // the rank pool could not start: the rank whose start failed
  SilentPeers,            // peer runner: ranks sent nothing by the deadline plus the grace
  NoReportFromRank0,      // peer runner: rank 0 sent no report
  StepPattern,            // a step parted: the side that breaks the other steps' pattern
  StepFewerSide,          // a step parted, no pattern: the fewer ranks
  StepEvenSplit,          // a step parted, as many on each side: none
  MismatchSmallestGroup,  // different collectives at one sequence number: the smallest group
  CrashFirst,             // a rank died: the first that did not die writing to a closed peer
  ExtraCollective,        // fewer ranks wait in a collective than finished without it: the waiting
  NeverEntered,           // a rank never entered the collective its peers wait in
  UnseenCollective,       // some completed a collective others still wait in: the fewer side
  BackendStalled,         // every rank waits in the same collective: none
  Late,                   // some ranks did not finish by the deadline outside collectives
  EveryRankLate,          // every rank did: none
  FirstRaiser,            // some raised, the others finished: the first that raised
  EveryRankRaised,        // none
  EvenSplitByBaseline,    // the harness: a baseline showed one side's sequence
  MismatchTieByBaseline,  // the harness: a baseline showed one group's sequence
  MemoryExceeded,         // the harness: a rank went past its memory limit (kRankMemoryExceeded)
  RaisedAlone,            // the harness: a rank left its script on an error while others waited
  AbandonedWait,          // the harness: a rank raised or left before a peer's wait gave up
};
const char* to_string(BlameRule rule);
BlameRule blame_rule_from_string(const std::string& text);

struct JobResult {
  RunStatus status = RunStatus::Completed;
  std::vector<RankOutcome> ranks;  // indexed by rank
  int blamed_rank = -1;            // Hang/Crash/Error: the rank at fault, when one can be named
  BlameRule blame_rule = BlameRule::None;  // the rule that named it (or found none to name)
  std::string diagnosis;           // one paragraph: what happened, on which rank, what to do
  // Where the rules left the blame to evidence the runtime lacks (an even split, a mismatch whose
  // groups only the ranks' order told apart): the diagnosis as it reads once that evidence names
  // the side (blame.h, tell_even_split, tell_mismatch_tie), without the sentence that says why no
  // side is blamed or that blames a group for its place. Empty where the blame is not open.
  std::string diagnosis_once_told;
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
