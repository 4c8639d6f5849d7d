// Calling a function in a child process (fork) under a deadline: for work that must not run
// unbounded inside a supervisor (e.g. the harness's single-process reference). The child leads its
// own process group; at the deadline, or once it has answered, the whole group is ended and
// reaped, with whatever it forked. A kept call (KeepUntilReleased: a peer rank's task, whose
// communicator its peers may still be using after it answered) is ended only by release().
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "distmetrics/runtime/deadline.h"

namespace distmetrics::runtime {

struct ChildCallResult {
  enum class Ended {
    Returned,  // `value` holds what the function returned
    Threw,     // `error` holds the exception's type and message
    Died,      // `how_died`: "killed by signal 11 (SIGSEGV)", "exit status 1"
    TimedOut,  // still running (or stopped: stop_signal) at the deadline: ended, unless kept
  };
  Ended ended = Ended::Returned;
  nlohmann::json value;
  std::string error;
  std::string how_died;           // Died; TimedOut while stopped: "stopped by SIGSTOP"
  std::optional<int> wait_status;  // Died: the child's waitpid status
  int stop_signal = 0;            // TimedOut: the signal that stopped it (0: it was running)
};

// What a kept call's child holds after it answered, until it is released.
using ChildHold = std::shared_ptr<void>;
struct KeepUntilReleased {};

// A function running in a forked child of this process (one intra-op thread, the default fatal-
// signal actions), started now and collected by wait(): the caller can do other work meanwhile
// (the engine runs a job's ranks while its reference computes). Destroying a call that was
// not waited for ends the child and whatever it forked. Start it from a process whose other
// threads the child does not need (a fork copies the calling thread only).
class ChildCall {
 public:
  explicit ChildCall(const std::function<nlohmann::json()>& fn);
  // A kept call: after answering, the child keeps what `fn` left in its ChildHold (and the child
  // itself stays) until release() or the call's end; wait() ends nothing, whatever it returns.
  ChildCall(KeepUntilReleased, const std::function<nlohmann::json(ChildHold& hold)>& fn);
  ~ChildCall();
  ChildCall(const ChildCall&) = delete;
  ChildCall& operator=(const ChildCall&) = delete;

  // The function's value, or how it ended, by the deadline (ended there). Once only. `stop`,
  // when given, is asked between polls (every 20 ms at most): true ends the wait as the deadline
  // would (TimedOut; a kept call's child is left running until released).
  ChildCallResult wait(const Deadline& deadline, const std::function<bool()>& stop = {});
  // A kept call: the child may go. It gets up to `grace` to leave on its own (drops its hold and
  // exits), then its process group is ended and reaped, with whatever it forked.
  void release(std::chrono::milliseconds grace);
  // The child's pid, also once reaped; -1 when it could not start.
  int pid() const { return started_pid_; }

 private:
  void start(const std::function<nlohmann::json(ChildHold& hold)>& fn, bool kept);
  void end_group();
  int pid_ = -1;    // the child, until reaped
  int group_ = -1;  // its process group, until ended
  int started_pid_ = -1;
  int out_fd_ = -1;
  int release_fd_ = -1;  // a kept call: closed to release the child
  bool kept_ = false;
  ChildCallResult failed_start_;  // Threw with why, when the pipe or the fork failed
};

// Runs `fn` in a child and waits for it: ChildCall(fn).wait(deadline).
ChildCallResult call_in_child(const std::function<nlohmann::json()>& fn, const Deadline& deadline);

}  // namespace distmetrics::runtime
