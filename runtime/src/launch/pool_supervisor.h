// The rank pool's supervision (RankPool::Impl): a job's deadline, what happened, ending and
// respawning the workers. Its reading of the workers' fates is pool_supervision.cpp; the parts it
// drives are pool_processes.h, pool_rendezvous.h and worker_link.h.
#pragma once

#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "../blame/diagnosis.h"
#include "../comm/backend_factory.h"
#include "distmetrics/build_config.h"
#include "distmetrics/runtime/backends.h"
#include "distmetrics/runtime/errors.h"
#include "distmetrics/runtime/launchers.h"
#include "distmetrics/runtime/phases.h"
#include "distmetrics/runtime/rank_pool.h"
#include "pool_processes.h"
#include "pool_rendezvous.h"
#include "pool_store.h"
#include "pool_timing.h"
#include "process.h"
#include "protocol.h"
#include "wire.h"
#include "worker_args.h"
#include "worker_link.h"
#include "zygote.h"

namespace distmetrics::runtime {

using namespace std::chrono_literals;

// --- Supervision ---------------------------------------------------------------------------------

class RankPool::Impl {
 public:
  explicit Impl(PoolOptions options) : options_(std::move(options)) {
    if (options_.world_size < 1) throw ConfigError("rank pool: world_size must be at least 1");
    if (const int most = max_local_world_size(); options_.world_size > most) {
      throw ConfigError("rank pool: world size " + std::to_string(options_.world_size) +
                        " is more ranks than a local pool starts on this machine (at most " + std::to_string(most) +
                        ": " + std::to_string(kRanksPerCore) + " per core, one per " + std::to_string(kMiBPerRank) +
                        " MiB of memory, at most " + std::to_string(kMostLocalRanks) +
                        "); run a smaller world size, or start the ranks with mpirun or a torchrun-style launcher");
    }
    if (find_pool_launch(options_.launch).through_mpirun && !DISTMETRICS_HAVE_MPI) {
      throw ConfigError("rank pool: launch \"" + options_.launch + "\" needs a build with Open MPI");
    }
  }

  ~Impl() { shutdown(); }

  JobResult run(const Job& job) {
    validate(job);
    const auto started = std::chrono::steady_clock::now();
    ending_.poll();
    runtime::PhaseSeconds phases;  // the supervisor's (phases.h)
    if (alive() && !healthy()) end_workers();
    add_phase(phases, "end_workers", seconds_since(started));
    double start_seconds = 0;
    const bool starting = !alive();
    // Ranks ended alone after a crash (end_dead_ranks_alone): their replacements start now.
    const bool refilling = !starting && static_cast<int>(workers_.size()) < options_.world_size;
    if (starting || refilling || backend_needs_warm_up(job.backend)) {
      // Workers forked from the zygote start with what the backend loads per process, where
      // the zygote can still be restarted from this one (the first pools of a program).
      auto mark = std::chrono::steady_clock::now();
      if (starting && !find_pool_launch(options_.launch).through_mpirun && options_.worker_command.empty())
        detail::load_into_worker_zygote(job.backend);
      add_phase(phases, "imports", seconds_since(mark));
      mark = std::chrono::steady_clock::now();
      const Deadline startup = Deadline::after(options_.startup_deadline);
      std::optional<JobResult> failure;
      if (starting) failure = start(startup);
      else if (refilling) failure = start_missing(startup);
      add_phase(phases, "pool_start", seconds_since(mark));
      mark = std::chrono::steady_clock::now();
      if (!failure) failure = warm_up_backend(job, startup);
      if (!failure && (starting || refilling) && options_.warm_up)
        failure = warm_up(*options_.warm_up, job, startup, "run once when the pool starts");
      add_phase(phases, "imports", seconds_since(mark));
      if (failure) {
        failure->seconds = seconds_since(started);
        failure->phases = std::move(phases);
        return *failure;
      }
      start_seconds = seconds_since(started);
    }
    JobResult result = supervise(job);
    result.seconds = seconds_since(started);
    result.start_seconds = start_seconds;
    for (const auto& [name, seconds] : phases) add_phase(result.phases, name, seconds);
    ending_.poll(started);  // an earlier job's workers are gone by now: reaped, or waited for
    return result;
  }

  int world_size() const { return options_.world_size; }
  int spawn_count() const { return spawn_count_; }
  int hangs_ended_in_place() const { return hangs_ended_in_place_; }
  int ranks_replaced() const { return ranks_replaced_; }
  long launcher_pid() const { return processes_ ? static_cast<long>(processes_->launcher()) : 0; }
  std::vector<long> worker_pids() const {
    std::vector<long> pids;
    for (const auto& w : workers_) pids.push_back(static_cast<long>(w.pid));
    return pids;
  }
  std::string private_dir() const { return rendezvous_ ? rendezvous_->dir() : std::string(); }
  int rejected_connections() const { return rejected_; }

 private:
  static double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  }

  bool alive() const { return !workers_.empty(); }

  // Whether these workers have yet to run `backend`'s warm-up task (Backend::pool_warm_up_task).
  bool backend_needs_warm_up(const std::string& backend) const {
    const Backend* b = find_backend(backend);
    return b != nullptr && !b->pool_warm_up_task.empty() && warmed_backends_.count(backend) == 0;
  }

  // The backend's own warm-up (e.g. gloo through Python imports torch.distributed), once per
  // (re)start and backend, before PoolOptions::warm_up, by the same deadline.
  std::optional<JobResult> warm_up_backend(const Job& first, const Deadline& startup) {
    if (!backend_needs_warm_up(first.backend)) return std::nullopt;
    Job job;
    job.task = find_backend(first.backend)->pool_warm_up_task;
    auto failure = warm_up(job, first, startup, "the " + first.backend + " backend's, run once per pool start before its first " +
                                                    first.backend + " job");
    if (!failure) warmed_backends_.insert(first.backend);
    return failure;
  }

  // A warm-up job, on `first`'s backend and device, by the start's deadline. Returns the
  // failure (the pool is then down again) or nothing.
  std::optional<JobResult> warm_up(Job job, const Job& first, const Deadline& startup, const std::string& when) {
    job.id = "pool/warm-up (" + job.task + ")";
    job.backend = first.backend;
    job.comm_device = first.comm_device;
    job.deadline = std::max<std::chrono::milliseconds>(startup.remaining(), std::chrono::milliseconds(1));
    JobResult warmed = supervise(job);
    if (warmed.status == RunStatus::Completed) return std::nullopt;
    if (alive()) end_workers();
    detail::prefix_diagnosis(warmed, "the rank pool's warm-up job (" + job.task + ", " + when + ") did not complete: ");
    return warmed;
  }

  void validate(const Job& job) const {
    if (job.task.empty()) throw ConfigError("job " + job.id + ": no task named");
    if (job.deadline.count() <= 0) throw ConfigError("job " + job.id + ": the deadline must be positive");
    if (const Backend* backend = find_backend(job.backend);
        backend != nullptr && backend->pool_launch != options_.launch && find_pool_launch(backend->pool_launch).through_mpirun) {
      throw ConfigError("job " + job.id + ": the " + backend->name + " backend needs a pool launched through " +
                        backend->pool_launch + " (PoolOptions::launch = \"" + backend->pool_launch + "\")");
    }
    if (auto why = backend_unavailable(job.backend, job.comm_device, options_.world_size)) {
      throw ConfigError("job " + job.id + ": " + why->text);
    }
  }

  // Workers may die between jobs (killed from outside): then the pool starts afresh.
  bool healthy() {
    for (auto& w : workers_) {
      if (!w.channel->read_available()) return false;
    }
    return processes_->running();
  }

  std::vector<std::string> worker_command() const {
    std::vector<std::string> command = options_.worker_command;
    if (command.empty()) command.push_back(detail::current_executable());
    return command;
  }

  // --- Starting ------------------------------------------------------------------------------

  // Starts the workers and waits until each has connected twice (control and store) from the
  // process we started for it. On failure, ends what was started and returns the failure as a
  // JobResult (status Crash), so that a caller's run of jobs goes on.
  std::optional<JobResult> start(const Deadline& deadline) {
    ++spawn_count_;
    warmed_backends_.clear();
    std::string failure;
    int failed_rank = -1;
    try {
      rendezvous_ = std::make_unique<detail::Rendezvous>();
      processes_ = std::make_unique<detail::RankProcesses>(options_.world_size);
      if (!find_pool_launch(options_.launch).through_mpirun)
        processes_->spawn_direct(worker_command(), worker_args(), options_.worker_command.empty());
      else processes_->spawn_mpirun(worker_command(), worker_args(), rendezvous_->dir());
      std::vector<int> ranks(static_cast<size_t>(options_.world_size));
      for (int r = 0; r < options_.world_size; ++r) ranks[r] = r;
      await_hellos(deadline, ranks, failure, failed_rank);
    } catch (const std::exception& e) {
      failure = detail::short_what(e);
    }
    if (rendezvous_) {
      rejected_ += rendezvous_->rejected();
      rendezvous_->stop_listening();
    }
    if (failure.empty()) return std::nullopt;
    return failed_start(failure, failed_rank);
  }

  detail::WorkerArgs worker_args() const {
    detail::WorkerArgs args;
    args.socket_path = rendezvous_->socket_path();
    args.world_size = options_.world_size;
    args.launch = options_.launch;
    args.memory_bytes = options_.rank_memory_bytes;
    return args;
  }

  // Starts the ranks a crash ended alone (end_dead_ranks_alone), beside the workers kept, on
  // the pool's socket (listening again until they are in). The backends' warm-ups run again on
  // every worker (run()). A failure ends the whole pool, as a failed start does. (pool_recovery.cpp)
  std::optional<JobResult> start_missing(const Deadline& deadline);
  // A start that failed, as a JobResult (status Crash); the pool is ended.
  JobResult failed_start(const std::string& failure, int failed_rank);
  // Waits until each of `ranks` has connected twice (control and store) from the process we
  // started for it; their links join workers_.
  void await_hellos(const Deadline& deadline, const std::vector<int>& ranks, std::string& failure, int& failed_rank);

  // --- Running one job ---------------------------------------------------------------------

  JobResult supervise(const Job& job) {
    const Deadline deadline = Deadline::after(job.deadline);
    const auto sent = std::chrono::steady_clock::now();
    send_job(job);
    const bool by_deadline = watch(deadline);
    const auto decided = std::chrono::steady_clock::now();

    JobResult run = collect(by_deadline);
    std::vector<std::string> phases;
    for (const auto& w : workers_) phases.push_back(w.phase);
    detail::diagnose(run, phases, job.deadline);

    const bool answered = std::all_of(workers_.begin(), workers_.end(), [](const detail::WorkerLink& w) { return w.answered(); });
    // Every rank answered: all of it was the ranks' work. Else the verdict came after the ranks'
    // last move: the time since then was spent waiting on the hang (or the crash's settling).
    auto last_move = sent;
    for (const auto& w : workers_) last_move = std::max(last_move, w.moved);
    if (answered && !by_deadline) last_move = decided;
    add_phase(run.phases, "ranks", runtime::seconds_between(sent, last_move));
    add_phase(run.phases, "hang_wait", runtime::seconds_between(last_move, decided));
    if (run.status == RunStatus::Hang || run.status == RunStatus::Crash) {
      fill_log_tails(run);
      const auto ending = std::chrono::steady_clock::now();
      if (run.status == RunStatus::Hang && end_hang_in_place(job)) {
        ++hangs_ended_in_place_;
        release();
      } else if (run.status == RunStatus::Crash && end_dead_ranks_alone(job)) {
        release();  // the survivors; the next run() starts the dead ranks' replacements
      } else {
        end_workers(/*later=*/true);
      }
      add_phase(run.phases, "end_workers", seconds_since(ending));
    } else {
      if (run.status != RunStatus::Completed) fill_log_tails(run);
      release();
    }
    return run;
  }

  void send_job(const Job& job) {
    const std::string prefix = "v" + std::to_string(spawn_count_) + "." + std::to_string(++variant_count_) + "/";
    for (auto& w : workers_) {
      w.reset_variant();
      if (auto* log = processes_->log(w.rank)) log->clear();
    }
    if (auto* log = processes_->launcher_log()) log->clear();
    rendezvous_->store.clear();
    const nlohmann::json message = detail::WorkerLink::job_message(job, prefix);
    for (auto& w : workers_) w.send(message, std::min<std::chrono::milliseconds>(detail::kWorkerSendBudget, job.deadline));
  }

  // Watches until every rank has answered, or a crash or a hang is certain (and settled), or the
  // deadline. True when the deadline ended it. A hang's settle (a rank waits in a collective a
  // finished rank never issued, or every rank waits where none can go on) ends as soon as every
  // rank's fate is known: waiting longer would only wait for a backend's own timeout.
  bool watch(const Deadline& deadline) {
    std::optional<Deadline> settle;
    bool ends_when_known = false;
    while (true) {
      read_workers();
      if (std::all_of(workers_.begin(), workers_.end(), [](const detail::WorkerLink& w) { return w.answered(); })) return false;
      if (nobody_left_to_write() && quiet()) fail_store_waits();
      if (!settle && (any_lost() || any_timed_out())) settle = Deadline::after(detail::kSettle);
      if (!settle && (certain_hang() || deadlocked())) {
        settle = Deadline::after(detail::kSettle);
        ends_when_known = true;
      }
      if (!settle && mismatched_collective()) settle = Deadline::after(detail::kMismatchSettle);
      if (settle && (settle->expired() || (ends_when_known && fates_known() && quiet()))) return false;
      if (deadline.expired()) return true;
      const Deadline& wake = settle ? Deadline::earliest(*settle, deadline) : deadline;
      std::vector<pollfd> fds;
      for (auto& w : workers_) {
        if (!w.answered()) fds.push_back({w.channel->fd(), POLLIN, 0});
      }
      for (int fd : rendezvous_->store.fds()) fds.push_back({fd, POLLIN, 0});
      // Awake for the end of a quiet spell too, while a hang waits to be settled.
      const auto watch_interval = ends_when_known || any_store_blocked() ? detail::kFatesQuiet : detail::kWatchInterval;
      const long wait_ms = std::min<long>(wake.remaining().count(), watch_interval.count());
      ::poll(fds.data(), fds.size(), static_cast<int>(std::max(wait_ms, 1L)));
    }
  }

  // Everything the workers and the store clients sent so far, and which workers have died.
  void read_workers() {
    ending_.poll();  // an earlier job's workers that have ended since
    rendezvous_->store.serve();
    const std::set<int> blocked = rendezvous_->store.blocked();
    for (auto& w : workers_) {
      w.drain();
      w.store_blocked = !w.answered() && blocked.count(w.rank) > 0;
      if (!w.answered()) {
        if (auto status = processes_->exited(w.rank)) {  // dead, though a process it forked may hold its socket
          w.exit_status = status;
          w.drain();
          if (!w.outcome) w.lost = true;
        }
      }
    }
  }

  bool any_store_blocked() const;
  // Ranks wait in collectives and on the store where none can go on (fates_known), nothing heard
  // for detail::kFatesQuiet: a hang, whatever the backends' and the store's own timeouts would do later.
  bool deadlocked() const;
  // Every rank still running is blocked on the store, every other one has answered: nobody is
  // left to write the keys they wait for.
  bool nobody_left_to_write() const;
  // Ends those waits with an error, as their own timeout would later (a group that a rank makes
  // alone gives up, the rank goes on with its task): its outcome is then what it would have been,
  // without the wait.
  void fail_store_waits();
  // No rank moved, and none sent the store a request, for detail::kFatesQuiet.
  bool quiet() const;
  bool any_lost() const;
  bool any_timed_out() const;
  // A rank whose task is over (n collectives issued) will never issue collective #n, so a rank
  // waiting inside #n (or later) can never finish it.
  bool certain_hang() const;
  // Whether every rank's fate is known, so that waiting longer can tell nothing more (but what a
  // backend's own timeout would): each rank answered, or waits in a collective #n that some other
  // rank can never enter (it finished or died after fewer, it waits on the store before #n, or it
  // is itself stuck in an earlier one), or waits on the store while every other rank is done or
  // stuck (no rank is left running to write the keys it waits for). A fixpoint over the ranks.
  bool fates_known() const;
  // A rank waits inside collective #n, and another rank entered #n with another operation, dtype
  // or shape: they can never complete it together (PyTorch-Ignite's Precision on an empty rank
  // sends int64 [] where its peers send float64 [5]; gloo waits out its own timeout).
  bool mismatched_collective() const;
  JobResult collect(bool by_deadline);
  std::string how_died(detail::WorkerLink& w);
  void fill_log_tails(JobResult& run);

  // Whether a hung job's collectives can be ended in its ranks (Backend::hangs_end_in_place):
  // a direct launch, collectives on the CPU.
  bool hangs_end_in_place(const Job& job) const {
    const Backend* backend = find_backend(job.backend);
    return backend != nullptr && backend->hangs_end_in_place && job.comm_device == "cpu" &&
           !find_pool_launch(options_.launch).through_mpirun;
  }

  // After a hang (the verdict taken): every rank alive, and those that have not answered ended
  // in place (end_in_place). True when the workers can go on to the next job. (pool_recovery.cpp)
  bool end_hang_in_place(const Job& job);
  // Tells each of `ranks` that has not answered to end the job's collectives
  // (kWorkerAbortSignal), and waits, at most kAbortBudget, until each has answered and each told
  // one has said it did. False (nothing gained but the wait) where one of them waits somewhere a
  // shut connection does not reach (outside any collective and store wait: a sleep, a loop, a
  // stopped process), died, or did not answer in time.
  bool end_in_place(const std::vector<detail::WorkerLink*>& ranks);
  // After a crash (the verdict taken): the ranks that died (or were lost) are ended alone, each
  // with its process group, and the others kept for the next job, which first starts the dead
  // ranks' replacements (start_missing): the survivors stay warm. Where the launch is direct
  // and each rank its own process group; the survivors must all have answered, or wait where a
  // hang ends in place (they are ended there). False: every worker is ended, as before.
  bool end_dead_ranks_alone(const Job& job);

  void release() {
    for (auto& w : workers_) w.send({{"type", "release"}});
    if (any_lost()) end_workers();
  }

  // --- Ending --------------------------------------------------------------------------------

  // later: the workers are signalled and left to end (reaped by ending_): what they take to exit
  // is not the job's, and they are gone by the end of the next job (run) or of the pool.
  void end_workers(bool later = false) {
    workers_.clear();  // closing the channels tells the workers to go
    if (processes_ && later) processes_->end_all_later(ending_, options_.term_grace);
    else if (processes_) processes_->end_all(options_.term_grace);
    processes_.reset();
    rendezvous_.reset();
  }

  void shutdown() {
    if (!processes_) {
      rendezvous_.reset();
      ending_.poll(std::chrono::steady_clock::now());
      return;
    }
    for (auto& w : workers_) w.send({{"type", "shutdown"}}, 1s);
    // Let them leave on their own (MPI wants MPI_Finalize), then end whoever is left.
    processes_->wind_down(Deadline::after(5s), options_.term_grace);
    end_workers();
    ending_.poll(std::chrono::steady_clock::now());
  }

  PoolOptions options_;
  std::unique_ptr<detail::RankProcesses> processes_;
  std::unique_ptr<detail::Rendezvous> rendezvous_;
  std::vector<detail::WorkerLink> workers_;
  detail::EndingGroups ending_;  // workers of earlier jobs that hung or crashed, signalled, not yet reaped
  int spawn_count_ = 0;
  int hangs_ended_in_place_ = 0;
  int ranks_replaced_ = 0;
  int rejected_ = 0;
  std::uint64_t variant_count_ = 0;
  std::set<std::string> warmed_backends_;  // whose pool_warm_up_task these workers have run
};


}  // namespace distmetrics::runtime
