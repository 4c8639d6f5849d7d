// Running jobs on ranks that a launcher started: `mpirun -np N distmetrics run ...`
// (launcher "mpi") or a torchrun-style launcher that sets RANK, WORLD_SIZE, LOCAL_RANK,
// MASTER_ADDR and MASTER_PORT (launcher "env", also across nodes).
//
// Every process runs the same jobs in the same order (lockstep). Each job gets a fresh
// process group: a prefix per job over one store that rank 0 hosts (every rank on this host:
// a Unix socket in a private 0700 folder, its path sent through MPI or derived from MASTER_PORT;
// across hosts the project's store on the rendezvous address alone, admitting only the run's
// secret: MASTER_ADDR:MASTER_PORT in env mode, or an address and port sent to the others through
// MPI in mpi mode), or a fresh MPI_Comm_dup for the mpi backend. Each rank runs the task in its
// own process; rank 0 gathers
// every rank's outcome through the store (within the job's deadline plus a grace), diagnoses
// the run and publishes it, so that every rank returns the same JobResult.
//
// On gloo with CPU tensors each job's task runs in a child process of its rank (its own
// process group, forked per job): a task that crashes, exits, stops itself or loops cannot
// take its rank along. The rank says how its task ended (signal, exit status, stopped, still
// running at the deadline), ends the child's process group with whatever it forked, and rank 0
// reports: the launcher's exit code is the runner's, and no rank is left running. Under mpirun
// the rank forks its MPI agent before MPI_Init (the agent is the MPI rank; this process never
// calls MPI), and the mpi backend's tasks run in the agent: a crash there takes only the agent,
// and the rank reports it the same way. NCCL/CUDA tasks run in the rank itself (CUDA does not
// survive a fork): a crash there ends the job through the launcher, without a report.
// The agent is forked in the constructor and knows only this process's state of that moment:
// load what tasks need (plugins, Python sources) before constructing the runner.
//
// After a hang or a crash run() returns that report and every later run() throws ConfigError
// ("the peer run stopped"): the caller reports, calls finish() with its exit code, and the
// launcher must be started again.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "distmetrics/runtime/job.h"
#include "distmetrics/runtime/launchers.h"

namespace distmetrics::runtime {

struct PeerOptions {
  std::string launcher;  // "mpi" or "env"
  // Connecting to rank 0's store.
  std::chrono::milliseconds connect_deadline{std::chrono::seconds(60)};
  // How long after a job's deadline rank 0 still waits for outcomes (and the others for
  // rank 0's report).
  std::chrono::milliseconds report_grace{std::chrono::seconds(5)};
  // The address-space limit (RLIMIT_AS) of the processes that run this rank's tasks: each gloo
  // job's task process and the MPI agent (not a task that runs in the rank itself: CUDA).
  // Past it the job's outcome is memory_exceeded naming the rank. 0: none (the callers pass
  // --rank-memory, else default_rank_memory_bytes(), as for a local pool).
  std::uint64_t rank_memory_bytes = 0;
};

class PeerRunner : public JobRunner {
 public:
  // Reads the launcher's environment and connects the ranks; throws ConfigError naming a
  // missing or malformed variable.
  explicit PeerRunner(PeerOptions options);
  ~PeerRunner() override;
  PeerRunner(const PeerRunner&) = delete;
  PeerRunner& operator=(const PeerRunner&) = delete;

  JobResult run(const Job& job) override;
  int world_size() const override;
  int rank() const;
  int local_rank() const;
  // Rank 0 reports (prints progress, writes reports); the others run the same jobs quietly.
  bool is_reporter() const { return rank() == 0; }
  // True after a hang or a crash: later runs throw.
  bool stopped() const;
  // Hang or Crash after a stop (what the caller's exit code says); Completed otherwise.
  RunStatus stopped_by() const;
  // Ends the peer run; call it on every rank after the reports are written, with the exit code
  // the launcher should give. When an mpi-backend task (in the MPI agents) hung or crashed, an
  // agent may be stuck where MPI_Finalize would wait for it forever: rank 0 then (once every rank
  // has its last report, bounded) kills its agent and exits with exit_code, which makes mpirun
  // end the job with it; the other ranks wait (bounded) for that, then do the same; this does
  // not return. Otherwise the ranks leave together and MPI is finalised.
  void finish(int exit_code);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// Which launcher started this process: detect_launcher() (launchers.h).

}  // namespace distmetrics::runtime
