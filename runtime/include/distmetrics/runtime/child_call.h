// Calling a function in a child process (fork) under a deadline: for work that must not run
// unbounded inside a supervisor (the single-process reference of a variant). The child leads its
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

// Runs `fn` in a forked child of this process (one intra-op thread, the default fatal-signal
// actions) and returns its value, or how it ended, by the deadline. Call from a process whose
// other threads the child does not need (a fork copies the calling thread only).
ChildCallResult call_in_child(const std::function<nlohmann::json()>& fn, const Deadline& deadline);

}  // namespace distmetrics::runtime
