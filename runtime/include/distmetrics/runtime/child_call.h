// Calling a function in a child process (fork) under a deadline: for work that must not run
// unbounded inside a supervisor (e.g. the harness's single-process reference). The child leads its
// own process group; at the deadline, or once it has answered, the whole group is ended and
// reaped, with whatever it forked.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <string>

#include "distmetrics/runtime/deadline.h"

namespace distmetrics::runtime {

struct ChildCallResult {
  enum class Ended {
    Returned,  // `value` holds what the function returned
    Threw,     // `error` holds the exception's type and message
    Died,      // `how_died`: "killed by signal 11 (SIGSEGV)", "exit status 1"
    TimedOut,  // still running at the deadline: ended
  };
  Ended ended = Ended::Returned;
  nlohmann::json value;
  std::string error;
  std::string how_died;
};

// A function running in a forked child of this process (one intra-op thread, the default fatal-
// signal actions), started now and collected by wait(): the caller can do other work meanwhile
// (the engine runs a variant's ranks while its reference computes). Destroying a call that was
// not waited for ends the child and whatever it forked. Start it from a process whose other
// threads the child does not need (a fork copies the calling thread only).
class ChildCall {
 public:
  explicit ChildCall(const std::function<nlohmann::json()>& fn);
  ~ChildCall();
  ChildCall(const ChildCall&) = delete;
  ChildCall& operator=(const ChildCall&) = delete;

  // The function's value, or how it ended, by the deadline (ended there). Once only.
  ChildCallResult wait(const Deadline& deadline);

 private:
  void end_group();
  int pid_ = -1;    // the child, until reaped
  int group_ = -1;  // its process group, until ended
  int out_fd_ = -1;
  ChildCallResult failed_start_;  // Threw with why, when the pipe or the fork failed
};

// Runs `fn` in a child and waits for it: ChildCall(fn).wait(deadline).
ChildCallResult call_in_child(const std::function<nlohmann::json()>& fn, const Deadline& deadline);

}  // namespace distmetrics::runtime
