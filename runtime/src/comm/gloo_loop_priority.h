// The transport's loop thread (gloo.cpp keeps one per process): found, named, and scheduled as
// DISTMETRICS_GLOO_LOOP says.
//
// gloo's tcp loop spins while another thread holds a pair's lock (gloo_loop_shim.h, pytorch/gloo#246).
// By default (auto) the loop keeps its priority and gloo_loop_shim.cpp makes it sleep through a spin;
// it needs the thread's name, which Debian's 2022 gloo (torch 1.13) does not set: it is set here.
// `idle` puts the loop at SCHED_IDLE as well, where it runs only on a core no other thread wants:
// on a quiet machine the fastest (docs/performance.md, "7 December"), but another program's load
// starves the loop, collectives wait on it and a verdict that races a backend's abort comes out
// otherwise (a crash read as a hang: docs/performance.md, "The loop kept from spinning, not
// starved"), so it is a choice, never the default.
// `normal` is gloo as shipped: the priority left alone, no sleeping through a spin.
#pragma once

#include <sys/types.h>

#include <set>
#include <string>

namespace distmetrics::runtime::detail {

enum class LoopPriority { Normal, Idle };

// DISTMETRICS_GLOO_LOOP: unset, auto or normal: Normal; idle: Idle. Any other value: ConfigError
// naming the variable.
LoopPriority loop_priority_from_environment();

// The threads of this process, by id (/proc/self/task).
std::set<pid_t> process_threads();

// Finds the loop thread a transport made since `before` (the only new thread, else the new one
// named "gloo_tcp_loop"), remembers it, names it "gloo_tcp_loop" where its gloo did not, and
// puts it at SCHED_IDLE for LoopPriority::Idle. Returns how many threads it found.
int adopt_new_loop_threads(const std::set<pid_t>& before, LoopPriority priority);

// The loop threads adopt_new_loop_threads found in this process that are still running.
std::set<pid_t> transport_loop_threads();

}  // namespace distmetrics::runtime::detail
