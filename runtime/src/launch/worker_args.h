// How a supervisor tells an exec'd copy of a binary that it is a rank worker: command-line flags
// (so that mpirun, which passes one command line to every rank, works too). Nothing on them is
// secret (any process can read /proc/PID/cmdline): the socket lies in the pool's private 0700
// folder, and the supervisor accepts a connection only from a process it started (the kernel's
// peer credentials), never on the strength of something the peer says.
#pragma once

#include <signal.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "distmetrics/runtime/launchers.h"

namespace distmetrics::runtime::detail {

struct WorkerArgs {
  std::string socket_path;         // the supervisor's Unix socket (control and store)
  int rank = -1;                   // -1: from the launcher's environment (mpirun)
  int world_size = 0;
  std::string launch = direct_pool_launch().name;  // a PoolLaunch name (launchers.h)
  std::uint64_t memory_bytes = 0;  // the rank's RLIMIT_AS; 0: none
};

std::vector<std::string> worker_flags(const WorkerArgs& args);
// nullopt when argv holds no worker flag; throws ConfigError on malformed flags.
std::optional<WorkerArgs> parse_worker_flags(int argc, char** argv);

// Exit codes of a worker process.
constexpr int kWorkerExitOk = 0;
constexpr int kWorkerExitBadStart = 64;        // bad flags, cannot connect, MPI would not start
constexpr int kWorkerExitSupervisorGone = 65;  // the control channel closed under it

// The signal a supervisor sends a worker whose job hung (RankPool, pool_supervisor.h): the
// worker shuts down its TCP connections (the job's process groups' pairs), so that a collective
// it waits in fails at once and its task ends; the pool then keeps the worker for the next job.
// Not a worker's argv, but part of the same supervisor-worker contract.
constexpr int kWorkerAbortSignal = SIGUSR2;

}  // namespace distmetrics::runtime::detail
