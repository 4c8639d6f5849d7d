// The rank pool: a supervisor's set of worker processes that stay alive across jobs.
//
// Workers are exec'd copies of a binary that calls run_worker_if_requested() first thing in
// main() (the distmetrics CLI and every test binary built on the rank-aware test main do).
// Each job gets a fresh process group (a prefix per job in a store the supervisor keeps
// itself; for MPI a fresh duplicate of MPI_COMM_WORLD). The pool is private: workers connect to
// a Unix socket in a 0700 folder of the pool's own, and the supervisor accepts a connection only
// from a process it started (the kernel's peer credentials); nothing secret is on a command line,
// nothing listens on a network port, and Gloo's connections are on 127.0.0.1. Each rank runs in
// its own process group. Each job has a deadline; on a hang or a crash the supervisor ends
// every worker's process group (TERM, then KILL; only processes it started: signalled at once,
// gone by the end of the next job or of the pool), diagnoses which rank is to blame, and
// respawns the pool for the next job.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "distmetrics/runtime/job.h"
#include "distmetrics/runtime/launchers.h"

namespace distmetrics::runtime {

// A third of this machine's memory, at least 4 GiB (8 GiB on a 24 GiB machine); 0 (no limit) in a
// build with CUDA, whose driver reserves far more address space than it uses.
std::uint64_t default_rank_memory_bytes();

// The most ranks a local pool starts on this machine: kRanksPerCore per core and one per
// kMiBPerRank MiB of memory (a rank of LibTorch with Gloo takes about 165 MB), clamped to
// [kFewestLocalRanks, kMostLocalRanks]: 8 on a 2-core machine with 24 GiB. A pool asked for more
// throws ConfigError (that job's error); mpirun and torchrun-style launchers are not bounded.
constexpr int kRanksPerCore = 4;
constexpr int kMiBPerRank = 512;
constexpr int kFewestLocalRanks = 4;
constexpr int kMostLocalRanks = 64;
int max_local_world_size();

struct PoolOptions {
  int world_size = 1;
  // How workers start: a pool launch of the launcher table (launchers.h): direct (the supervisor
  // spawns them, the default) or mpirun (the supervisor spawns mpirun, which starts them;
  // required for the mpi backend).
  std::string launch = direct_pool_launch().name;
  // The worker binary and leading arguments; empty means this executable (/proc/self/exe).
  std::vector<std::string> worker_command;
  std::chrono::milliseconds startup_deadline{std::chrono::seconds(60)};
  std::chrono::milliseconds term_grace{std::chrono::milliseconds(1000)};  // TERM, then KILL
  // Each rank's address-space limit (RLIMIT_AS), so that one metric cannot take the machine's
  // memory: past it an allocation fails on that rank, reported as RankMemoryExceeded naming the
  // rank. 0: no limit. The default is default_rank_memory_bytes().
  std::uint64_t rank_memory_bytes = default_rank_memory_bytes();
  // A job every (re)started pool runs once before the job that started it, e.g. importing a
  // Python source (seconds) that the workers, forked from a zygote made before the source was
  // known, have not loaded: that cost belongs to the start, not to the first job's deadline.
  // It runs on that job's backend and device, within what is left of `startup_deadline`; a
  // warm-up that does not complete is the start's failure (its diagnosis says so).
  std::optional<Job> warm_up;
};

class RankPool : public JobRunner {
 public:
  explicit RankPool(PoolOptions options);
  ~RankPool() override;  // ends every worker and waits for them; closes the store and sockets
  RankPool(const RankPool&) = delete;
  RankPool& operator=(const RankPool&) = delete;

  JobResult run(const Job& job) override;
  int world_size() const override;

  std::vector<long> worker_pids() const;  // current workers (empty before the first run)
  long launcher_pid() const;              // mpirun's pid under launch "mpirun" (0 otherwise, or when down)
  int spawn_count() const;                // how many times the pool has been (re)started
  int hangs_ended_in_place() const;       // hangs after which the pool kept its workers (Backend::hangs_end_in_place)
  int ranks_replaced() const;             // ranks ended alone after a crash, the others kept, and started again
  std::string private_dir() const;        // the pool's 0700 folder (socket, MPI session files); "" when down
  int rejected_connections() const;       // connections refused: not from a process the pool started

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// Call first in main() of any binary that can serve as a worker. Returns the exit code when this
// process was started as a worker (and has finished serving), nullopt otherwise.
std::optional<int> run_worker_if_requested(int argc, char** argv);
// Whether this process is serving a rank pool (run_worker_if_requested found the worker flags).
bool this_process_is_a_rank_worker();

// Optional, for a binary that serves as its own worker: call in main() right after
// run_worker_if_requested(), before any thread starts. Forks a helper (the zygote) that later
// forks the workers of direct launches that use this executable, so that they start without
// loading the binary and LibTorch again (~0.4 s of CPU each). Makes this process a child
// subreaper (the workers are re-parented to it). Does nothing when threads already run; any
// failure falls back to exec'ing workers. stop_worker_zygote() ends the helper.
void start_worker_zygote();
void stop_worker_zygote();

// What a process that holds state fork() does not keep sound by itself (an embedded Python
// interpreter: its GIL and import lock) runs around each fork of the zygote: `before` in the
// forking process, then `in_parent` there and `in_child` in the new process. Called on the
// forking thread; either may be empty.
struct ForkHooks {
  std::function<void()> before;
  std::function<void()> in_parent;
  std::function<void()> in_child;
};

// Replaces the zygote with a copy of this process as it is now, so that workers forked from then
// on start with what it has loaded since (a Python source and torch imported: seconds per worker,
// paid once here). The hooks run around this fork and each of the new zygote's forks. Does
// nothing and returns false when threads already run (fork is only safe before any starts) or
// the fork fails; the old zygote, if any, is then kept. Returns true when the new zygote serves.
bool restart_worker_zygote(ForkHooks hooks);

}  // namespace distmetrics::runtime
