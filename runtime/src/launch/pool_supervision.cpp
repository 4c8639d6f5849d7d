// The rank pool's reading of its workers' fates during a job (RankPool::Impl, pool_supervisor.h):
// whether a hang is certain, whether every rank's fate is known, and the job's result.
#include "pool_supervisor.h"

namespace distmetrics::runtime {

bool RankPool::Impl::any_store_blocked() const {
  return std::any_of(workers_.begin(), workers_.end(), [](const detail::WorkerLink& w) { return w.store_blocked && !w.open; });
}

// Ranks wait in collectives and on the store where none can go on (fates_known), nothing heard
// for detail::kFatesQuiet: a hang, whatever the backends' and the store's own timeouts would do later.
bool RankPool::Impl::deadlocked() const {
  const bool in_collective = std::any_of(workers_.begin(), workers_.end(), [](const detail::WorkerLink& w) { return !w.answered() && w.open; });
  return in_collective && any_store_blocked() && fates_known() && quiet();
}

// Every rank still running is blocked on the store, every other one has answered: nobody is
// left to write the keys they wait for.
bool RankPool::Impl::nobody_left_to_write() const {
  return std::all_of(workers_.begin(), workers_.end(),
                     [](const detail::WorkerLink& w) { return w.answered() || (w.store_blocked && !w.open); });
}

// Ends those waits with an error, as their own timeout would later (a group that a rank makes
// alone gives up, the rank goes on with its task): its outcome is then what it would have been,
// without the wait.
void RankPool::Impl::fail_store_waits() {
  std::set<int> blocked;
  for (auto& w : workers_) {
    if (w.answered() || !w.store_blocked) continue;
    blocked.insert(w.rank);
    w.store_blocked = false;
  }
  rendezvous_->store.fail_blocked(blocked, "every other rank has finished, raised or died: no rank is left to write the "
                                           "keys it waits for");
}

// No rank moved, and none sent the store a request, for detail::kFatesQuiet.
bool RankPool::Impl::quiet() const {
  auto last = std::chrono::steady_clock::time_point{};
  for (const auto& w : workers_) last = std::max(last, w.moved);
  for (const auto& [rank, heard] : rendezvous_->store.heard()) last = std::max(last, heard);
  return std::chrono::steady_clock::now() - last >= detail::kFatesQuiet;
}

bool RankPool::Impl::any_lost() const {
  return std::any_of(workers_.begin(), workers_.end(), [](const detail::WorkerLink& w) { return w.lost; });
}

bool RankPool::Impl::any_timed_out() const {
  return std::any_of(workers_.begin(), workers_.end(),
                     [](const detail::WorkerLink& w) { return w.outcome && w.outcome->state == RankState::TimedOut; });
}

// A rank whose task is over (n collectives issued) will never issue collective #n, so a rank
// waiting inside #n (or later) can never finish it.
bool RankPool::Impl::certain_hang() const {
  for (const auto& done : workers_) {
    if (!done.outcome) continue;
    for (const auto& waiting : workers_) {
      if (waiting.open && waiting.open->seq >= done.outcome->trace.size()) return true;
    }
  }
  return false;
}

// Whether every rank's fate is known, so that waiting longer can tell nothing more (but what a
// backend's own timeout would): each rank answered, or waits in a collective #n that some other
// rank can never enter (it finished or died after fewer, it waits on the store before #n, or it
// is itself stuck in an earlier one), or waits on the store while every other rank is done or
// stuck (no rank is left running to write the keys it waits for). A fixpoint over the ranks.
bool RankPool::Impl::fates_known() const {
  const std::size_t n = workers_.size();
  std::vector<bool> stuck(n, false);
  auto on_store = [](const detail::WorkerLink& w) { return !w.answered() && !w.open && w.store_blocked; };
  auto reached = [](const detail::WorkerLink& w) { return w.outcome ? w.outcome->trace.size() : w.entered.size(); };
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t i = 0; i < n; ++i) {
      const detail::WorkerLink& w = workers_[i];
      if (stuck[i] || w.answered() || !w.open) continue;
      for (std::size_t j = 0; j < n && !stuck[i]; ++j) {
        const detail::WorkerLink& q = workers_[j];
        if (j == i) continue;
        if (q.answered() || on_store(q)) stuck[i] = reached(q) <= w.open->seq;
        else if (stuck[j]) stuck[i] = q.open->seq < w.open->seq;
      }
      changed = changed || stuck[i];
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (!on_store(workers_[i])) continue;
    stuck[i] = true;
    for (std::size_t j = 0; j < n; ++j)
      if (j != i && !workers_[j].answered() && !stuck[j] && !on_store(workers_[j])) stuck[i] = false;
  }
  for (std::size_t i = 0; i < n; ++i)
    if (!workers_[i].answered() && !stuck[i]) return false;
  return true;
}

// A rank waits inside collective #n, and another rank entered #n with another operation, dtype
// or shape: they can never complete it together (PyTorch-Ignite's Precision on an empty rank
// sends int64 [] where its peers send float64 [5]; gloo waits out its own timeout).
bool RankPool::Impl::mismatched_collective() const {
  for (const auto& waiting : workers_) {
    if (!waiting.open) continue;
    for (const auto& other : workers_) {
      if (&other == &waiting) continue;
      const auto& trace = other.outcome ? other.outcome->trace : other.entered;
      const auto same_seq = std::find_if(trace.rbegin(), trace.rend(),
                                         [&](const CollectiveRecord& r) { return r.seq == waiting.open->seq; });
      if (same_seq != trace.rend() && !detail::same_collective(*waiting.open, *same_seq)) return true;
    }
  }
  return false;
}

JobResult RankPool::Impl::collect(bool by_deadline) {
  JobResult run;
  // Who crashed: ranks that said how they died; else (direct launch) the exit status of each
  // lost rank; ranks mpirun took down after a crash said nothing and count as ended.
  const bool someone_said = std::any_of(workers_.begin(), workers_.end(),
                                        [](const detail::WorkerLink& w) { return w.lost && !w.dying.empty(); });
  const bool crash = any_lost();
  for (auto& w : workers_) {
    RankOutcome outcome;
    if (w.outcome) {
      outcome = *w.outcome;
      if (outcome.state != RankState::Finished) outcome.records = std::move(w.records);
    } else {
      outcome.records = std::move(w.records);
      outcome.rank = w.rank;
      outcome.pid = static_cast<long>(w.pid);
      outcome.trace = w.entered;
      outcome.blocked_in = w.open;
      outcome.blocked_on_store = w.store_blocked && !w.open;
      if (w.lost && (!someone_said || !w.dying.empty())) {
        outcome.state = RankState::Crashed;
        outcome.how_died = how_died(w);
        outcome.died_of_signal = w.dying_signal != 0                                  ? w.dying_signal
                                 : w.exit_status && WIFSIGNALED(*w.exit_status) ? WTERMSIG(*w.exit_status)
                                                                                : 0;
      } else if (crash) {
        outcome.state = RankState::Ended;
      } else {
        // A hang: ranks still inside a collective (or, at the deadline, still running) are stuck;
        // the others were merely stopped with them.
        outcome.state = (by_deadline || w.open) ? RankState::Stuck : RankState::Ended;
      }
    }
    run.ranks.push_back(std::move(outcome));
  }
  return run;
}

std::string RankPool::Impl::how_died(detail::WorkerLink& w) {
  if (!w.dying.empty()) return w.dying;
  if (!w.exit_status) w.exit_status = processes_->await_exit(w.rank, Deadline::after(500ms));
  if (w.exit_status && WIFEXITED(*w.exit_status) && WEXITSTATUS(*w.exit_status) == detail::kWorkerExitSupervisorGone)
    return detail::describe_wait_status(*w.exit_status) +
           " (its connection to the supervisor closed under it: did the task close descriptors it does not own?)";
  if (w.exit_status) return detail::describe_wait_status(*w.exit_status);
  if (processes_->under_mpirun()) {
    return "its connection closed without a word (ended by MPI or mpirun, or killed by SIGKILL: see its log tail)";
  }
  return "its connection closed without a word (killed by SIGKILL? out of memory?)";
}

void RankPool::Impl::fill_log_tails(JobResult& run) {
  if (!processes_) return;
  const auto* launcher_log = processes_->launcher_log();
  const std::string launcher = launcher_log ? launcher_log->tail(64 * 1024) : std::string();
  for (auto& outcome : run.ranks) {
    if (launcher_log) {
      outcome.log_tail = detail::mpirun_rank_output(launcher, outcome.rank, true);
      if (outcome.log_tail.size() > detail::kLogTailBytes) outcome.log_tail.erase(0, outcome.log_tail.size() - detail::kLogTailBytes);
    } else if (auto* log = processes_->log(outcome.rank)) {
      outcome.log_tail = log->tail(detail::kLogTailBytes);
    }
  }
}

}  // namespace distmetrics::runtime
