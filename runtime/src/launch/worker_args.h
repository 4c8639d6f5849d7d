// How a supervisor tells an exec'd copy of a binary that it is a rank worker: command-line flags
// (so that mpirun, which passes one command line to every rank, works too).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace distmetrics::runtime::detail {

struct WorkerArgs {
  std::string host = "127.0.0.1";  // the supervisor's control channel
  std::uint16_t port = 0;
  std::string token;               // proves the connection comes from a worker of this pool
  int rank = -1;                   // -1: from the launcher's environment (mpirun)
  int world_size = 0;
  std::string launch = "direct";   // "direct" or "mpirun"
};

std::vector<std::string> worker_flags(const WorkerArgs& args);
// nullopt when argv holds no worker flag; throws ConfigError on malformed flags.
std::optional<WorkerArgs> parse_worker_flags(int argc, char** argv);

// Exit codes of a worker process.
constexpr int kWorkerExitOk = 0;
constexpr int kWorkerExitBadStart = 64;        // bad flags, cannot connect, MPI would not start
constexpr int kWorkerExitSupervisorGone = 65;  // the control channel closed under it

}  // namespace distmetrics::runtime::detail
