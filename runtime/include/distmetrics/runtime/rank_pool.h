// The rank pool: a supervisor's set of worker processes that stay alive across variants.
//
// Workers are exec'd copies of a binary that calls run_worker_if_requested() first thing in
// main() (the distmetrics CLI and every test binary built on the rank-aware test main do).
// Each variant gets a fresh process group (a prefix store per variant over one TCPStore that
// the supervisor hosts on 127.0.0.1, port 0; for MPI a fresh duplicate of MPI_COMM_WORLD).
// Each variant has a deadline; on a hang or a crash the supervisor ends every worker by pid
// (TERM, then KILL), diagnoses which rank is to blame, and respawns the pool for the next variant.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "distmetrics/runtime/job.h"

namespace distmetrics::runtime {

struct PoolOptions {
  int world_size = 1;
  // How workers start: "direct" (the supervisor spawns them) or "mpirun" (the supervisor
  // spawns mpirun, which starts them; required for the mpi backend).
  std::string launch = "direct";
  // The worker binary and leading arguments; empty means this executable (/proc/self/exe).
  std::vector<std::string> worker_command;
  std::chrono::milliseconds startup_deadline{std::chrono::seconds(60)};
  std::chrono::milliseconds term_grace{std::chrono::milliseconds(1000)};  // TERM, then KILL
};

class RankPool : public JobRunner {
 public:
  explicit RankPool(PoolOptions options);
  ~RankPool() override;  // ends every worker and waits for them; closes the store and sockets
  RankPool(const RankPool&) = delete;
  RankPool& operator=(const RankPool&) = delete;

  JobResult run(const Job& request) override;
  int world_size() const override;

  std::vector<long> worker_pids() const;  // current workers (empty before the first run)
  long launcher_pid() const;              // mpirun's pid under launch "mpirun" (0 otherwise, or when down)
  int spawn_count() const;                // how many times the pool has been (re)started

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// Call first in main() of any binary that can serve as a worker. Returns the exit code when this
// process was started as a worker (and has finished serving), nullopt otherwise.
std::optional<int> run_worker_if_requested(int argc, char** argv);

}  // namespace distmetrics::runtime
