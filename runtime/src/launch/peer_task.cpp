#include "peer_task.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include "process.h"
#include "protocol.h"

namespace distmetrics::runtime::detail {

namespace {

// Writes where this rank is to the store, so that rank 0 can say where a rank that never
// reported got stuck.
class StoreProgress final : public CollectiveObserver {
 public:
  StoreProgress(c10::intrusive_ptr<c10d::Store> store, int rank) : store_(std::move(store)), key_("progress/" + std::to_string(rank)) {}
  void on_enter(const CollectiveRecord& record) override {
    entered_.push_back(to_json(record));
    publish(true);
  }
  void on_exit(const CollectiveRecord&, bool) override { publish(false); }

 private:
  void publish(bool open) {
    try {
      store_->set(key_, bytes_of(nlohmann::json({{"trace", entered_}, {"open", open}}).dump()));
    } catch (const std::exception&) {
      // Progress is for the diagnosis only; the outcome still travels.
    }
  }
  c10::intrusive_ptr<c10d::Store> store_;
  std::string key_;
  nlohmann::json entered_ = nlohmann::json::array();
};


// What a gloo task's child holds until it is released: its communicator over its own store.
struct HeldTask {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::Store> group_store;
  LocalRun local;  // destroyed first
};

}  // namespace

TaskHooks store_task_hooks(const c10::intrusive_ptr<c10d::Store>& store, int rank) {
  TaskHooks hooks;
  hooks.observer = std::make_shared<StoreProgress>(store, rank);
  hooks.on_phase = [store, rank](const std::string& phase) {
    set_quietly(*store, "phase/" + std::to_string(rank),
                nlohmann::json({{"phase", phase}, {"pid", static_cast<long>(::getpid())}, {"host", this_host_name()}}));
  };
  return hooks;
}

void fill_progress(c10d::Store& store, int rank, RankOutcome& outcome) {
  if (auto progress = get_json(store, "progress/" + std::to_string(rank))) {
    for (const auto& record : progress->value("trace", nlohmann::json::array())) {
      outcome.trace.push_back(record_from_json(record));
    }
    if (progress->value("open", false) && !outcome.trace.empty()) outcome.blocked_in = outcome.trace.back();
  }
}

RankOutcome outcome_of(const TaskEnd& end, int rank, long pid, c10d::Store& store) {
  if (end.outcome) return *end.outcome;
  RankOutcome outcome;
  outcome.rank = rank;
  outcome.pid = pid;
  fill_progress(store, rank, outcome);
  if (end.wait_status) {
    outcome.state = RankState::Crashed;
    outcome.how_died = describe_wait_status(*end.wait_status);
    if (WIFSIGNALED(*end.wait_status)) outcome.died_of_signal = WTERMSIG(*end.wait_status);
    if (WIFEXITED(*end.wait_status)) outcome.how_died += " (the task's process exited inside the task)";
  } else {
    outcome.state = RankState::Stuck;
    if (end.stop_signal != 0) {
      const char* name = signal_name(end.stop_signal);
      outcome.how_died = "stopped by " + (name ? std::string(name) : "signal " + std::to_string(end.stop_signal));
    }
  }
  return outcome;
}

TaskChild::TaskChild(const Job& job, const CommSpec& spec, const std::string& prefix, const StoreAddress& store,
                     const Deadline& deadline, std::uint64_t rank_memory_bytes)
    : rank_(spec.rank),
      call_(KeepUntilReleased{}, [&](ChildHold& hold) -> nlohmann::json {
        // In the child. A failure outside the task (its store unreachable) is its process's
        // exit status 1, with why on stderr; the rank reports it as this rank's crash.
        try {
          // A write to a peer whose host vanished must fail in the collective (EPIPE), not kill
          // this task with SIGPIPE and make its rank look crashed (gloo's sends do not all ask
          // the kernel for no signal, and an embedded Python does not ignore it as python does).
          ::signal(SIGPIPE, SIG_IGN);
          limit_rank_memory(rank_memory_bytes, /*for_life=*/false);  // the child's life: it never returns
          auto held = std::make_shared<HeldTask>();
          held->store = c10::make_intrusive<c10d::PrefixStore>(prefix, store.connect(deadline));
          held->group_store = c10::make_intrusive<c10d::PrefixStore>("group/", held->store);
          held->local = run_task_here(job, spec, held->group_store, deadline, store_task_hooks(held->store, spec.rank));
          hold = held;
          return to_json(held->local.outcome);
        } catch (const std::exception& e) {
          write_all(STDERR_FILENO, "distmetrics: rank " + std::to_string(spec.rank) + ": the task's process failed: " + e.what() + "\n");
          ::_exit(1);  // no static destructors or atexit handlers of the rank (MPI's among them)
        }
      }) {}

RankOutcome TaskChild::wait(const Deadline& until, c10d::Store& store, const std::function<bool()>& stop) {
  const ChildCallResult result = call_.wait(until, stop);
  TaskEnd end;
  switch (result.ended) {
    case ChildCallResult::Ended::Returned:
      try {
        end.outcome = outcome_from_json(result.value);
      } catch (const std::exception&) {
        // not an outcome: said as stuck below, with its progress
      }
      break;
    case ChildCallResult::Ended::Threw: {  // it could not start (the task's own errors are outcomes)
      RankOutcome failed;
      failed.rank = rank_;
      failed.state = RankState::Raised;
      failed.error_type = "ConfigError";
      failed.error = "rank " + std::to_string(rank_) + ": cannot start the task's process: " + result.error;
      return failed;
    }
    case ChildCallResult::Ended::Died:
      end.wait_status = result.wait_status;  // none: it closed its pipe and was not reaped in time (stuck)
      break;
    case ChildCallResult::Ended::TimedOut:
      end.stop_signal = result.stop_signal;
      break;
  }
  return outcome_of(end, rank_, call_.pid(), store);
}

}  // namespace distmetrics::runtime::detail
