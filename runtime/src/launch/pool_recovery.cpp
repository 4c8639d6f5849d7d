// The rank pool's ways back after a hang or a crash without a new generation of workers
// (RankPool::Impl, pool_supervisor.h; docs/runtime.md): a hang ended in place, a crash that ends
// only the ranks that died, and the start of their replacements beside the workers kept; with the
// start's wait for the workers' hellos, which a whole start shares.
#include <poll.h>
#include <signal.h>

#include "pool_supervisor.h"

namespace distmetrics::runtime {

std::optional<JobResult> RankPool::Impl::start_missing(const Deadline& deadline) {
  warmed_backends_.clear();
  std::vector<int> missing;
  for (int r = 0; r < options_.world_size; ++r) {
    if (std::none_of(workers_.begin(), workers_.end(), [r](const detail::WorkerLink& w) { return w.rank == r; }))
      missing.push_back(r);
  }
  std::string failure;
  int failed_rank = -1;
  const int rejected_before = rendezvous_->rejected();
  try {
    rendezvous_->listen_again();
    for (int r : missing) processes_->spawn_rank(r, worker_command(), worker_args(), options_.worker_command.empty());
    await_hellos(deadline, missing, failure, failed_rank);
  } catch (const std::exception& e) {
    failure = detail::short_what(e);
  }
  rejected_ += rendezvous_->rejected() - rejected_before;
  rendezvous_->stop_listening();
  std::sort(workers_.begin(), workers_.end(),
            [](const detail::WorkerLink& a, const detail::WorkerLink& b) { return a.rank < b.rank; });
  if (failure.empty()) return std::nullopt;
  return failed_start(failure, failed_rank);
}

JobResult RankPool::Impl::failed_start(const std::string& failure, int failed_rank) {
  JobResult run;
  run.status = RunStatus::Crash;
  detail::blame_failed_start(run, failed_rank);
  for (int r = 0; r < options_.world_size; ++r) {
    RankOutcome outcome;
    outcome.rank = r;
    outcome.state = r == failed_rank ? RankState::Crashed : RankState::Ended;
    if (r == failed_rank) outcome.how_died = failure;
    run.ranks.push_back(outcome);
  }
  fill_log_tails(run);
  run.diagnosis = "the rank pool could not start: " + failure;
  // What the rank said last, usually why (its memory limit, a bad worker command).
  if (failed_rank >= 0) {
    std::string said = run.ranks[static_cast<std::size_t>(failed_rank)].log_tail;
    while (!said.empty() && (said.back() == '\n' || said.back() == ' ')) said.pop_back();
    if (const auto newline = said.rfind('\n'); newline != std::string::npos) said = said.substr(newline + 1);
    if (!said.empty()) run.diagnosis += "; it said: " + said;
  }
  end_workers();
  return run;
}

void RankPool::Impl::await_hellos(const Deadline& deadline, const std::vector<int>& ranks, std::string& failure, int& failed_rank) {
  std::vector<std::optional<detail::WorkerLink>> control(options_.world_size);
  std::vector<bool> store(options_.world_size, false);
  auto complete = [&]() {
    for (int r : ranks) {
      if (!control[r] || !store[r]) return false;
    }
    return true;
  };
  auto keep_what_came = [&]() {
    for (auto& w : control) {
      if (w) workers_.push_back(std::move(*w));
    }
  };
  while (!complete()) {
    for (int r : ranks) {
      if (auto status = processes_->exited(r)) {
        failed_rank = r;
        failure = "rank " + std::to_string(r) + " exited while starting (" + detail::describe_wait_status(*status) + ")";
        keep_what_came();
        return;
      }
    }
    if (auto status = processes_->launcher_exited()) {
      failure = "mpirun exited while starting the ranks (" + detail::describe_wait_status(*status) + ")";
      keep_what_came();
      return;
    }
    if (deadline.expired()) {
      std::vector<int> silent;
      for (int r : ranks) {
        if (!control[r] || !store[r]) silent.push_back(r);
      }
      failed_rank = silent.empty() ? -1 : silent.front();
      failure = detail::describe_ranks(silent) + " did not connect within " +
                std::to_string(deadline.budget().count()) + " ms";
      keep_what_came();
      return;
    }
    std::vector<pollfd> fds{{rendezvous_->listen_fd(), POLLIN, 0}};
    for (int fd : rendezvous_->pending_fds()) fds.push_back({fd, POLLIN, 0});
    ::poll(fds.data(), fds.size(), static_cast<int>(std::min<long>(deadline.remaining().count(), 100)));
    auto trusted = [&](pid_t pid, int rank) {
      return std::find(ranks.begin(), ranks.end(), rank) != ranks.end() && processes_->may_be(pid, rank);
    };
    for (auto& hello : rendezvous_->accept_hellos(trusted)) {
      const int r = hello.rank;
      if (hello.role == "control" && !control[r]) {
        detail::WorkerLink link;
        link.rank = r;
        link.pid = hello.pid;
        link.channel = std::move(hello.channel);
        processes_->adopt(r, hello.pid);
        control[r] = std::move(link);
      } else if (hello.role == "store" && !store[r] && control[r] && control[r]->pid == hello.pid) {
        rendezvous_->store.add_client(r, std::move(hello.channel));
        store[r] = true;
      } else {
        ++rejected_;  // a second control or store connection for a rank, or a store before its control
      }
    }
  }
  for (auto& w : control) {
    if (w) workers_.push_back(std::move(*w));
  }
}

bool RankPool::Impl::end_hang_in_place(const Job& job) {
  if (!hangs_end_in_place(job)) return false;
  std::vector<detail::WorkerLink*> all;
  for (auto& w : workers_) {
    if (w.lost || w.exit_status) return false;
    all.push_back(&w);
  }
  return end_in_place(all);
}

bool RankPool::Impl::end_in_place(const std::vector<detail::WorkerLink*>& ranks) {
  std::vector<detail::WorkerLink*> told;
  for (auto* w : ranks) {
    if (w->answered()) continue;
    if (!w->open && !w->store_blocked) return false;
    if (detail::process_is_stopped(w->pid)) return false;  // it would not act on the signal: not worth the wait
    told.push_back(w);
  }
  for (auto* w : told) {
    if (::kill(w->pid, detail::kWorkerAbortSignal) != 0) return false;
  }
  const Deadline budget = Deadline::after(detail::kAbortBudget);
  while (true) {
    read_workers();
    if (std::any_of(ranks.begin(), ranks.end(), [](const detail::WorkerLink* w) { return w->lost; })) return false;
    if (std::all_of(ranks.begin(), ranks.end(), [](const detail::WorkerLink* w) { return w->answered(); }) &&
        std::all_of(told.begin(), told.end(), [](const detail::WorkerLink* w) { return w->aborted; }))
      return true;
    if (nobody_left_to_write() && quiet()) fail_store_waits();
    if (budget.expired()) return false;
    std::vector<pollfd> fds;
    for (auto* w : ranks) fds.push_back({w->channel->fd(), POLLIN, 0});
    for (int fd : rendezvous_->store.fds()) fds.push_back({fd, POLLIN, 0});
    const long wait_ms = std::min<long>(budget.remaining().count(), detail::kFatesQuiet.count());
    ::poll(fds.data(), fds.size(), static_cast<int>(std::max(wait_ms, 1L)));
  }
}

bool RankPool::Impl::end_dead_ranks_alone(const Job& job) {
  if (find_pool_launch(options_.launch).through_mpirun) return false;
  std::vector<detail::WorkerLink*> survivors;
  std::vector<int> dead;
  for (auto& w : workers_) {
    if (w.lost || w.exit_status) {
      if (!processes_->ends_alone(w.rank)) return false;
      dead.push_back(w.rank);
    } else {
      survivors.push_back(&w);
    }
  }
  if (dead.empty() || survivors.empty()) return false;
  const bool reachable = hangs_end_in_place(job);
  for (auto* w : survivors) {
    if (!w->answered() && !reachable) return false;
  }
  if (!end_in_place(survivors)) return false;
  for (int r : dead) {
    processes_->end_rank_later(r, ending_, options_.term_grace);
    rendezvous_->store.remove_client(r);
  }
  workers_.erase(std::remove_if(workers_.begin(), workers_.end(),
                                [](const detail::WorkerLink& w) { return w.lost || w.exit_status.has_value(); }),
                 workers_.end());
  ranks_replaced_ += static_cast<int>(dead.size());
  return true;
}

}  // namespace distmetrics::runtime
