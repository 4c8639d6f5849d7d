// The scheduling of gloo's transport loop thread (gloo.cpp keeps one per process).
//
// gloo's tcp loop asks epoll for ready sockets and hands each to its pair; a pair whose lock
// another thread holds is skipped until the next tick, and the socket, still readable, makes
// epoll_wait return at once: the loop spins for as long as that lock is held (gloo's own open
// issue, pytorch/gloo#246). With at least as many ranks as cores the holder is often a thread
// that is waiting for a core, and the spinning loop is what keeps it waiting: measured on 2
// cores, every rank worker's loop thread made 100k-470k epoll_wait calls a second for its whole
// life (docs/performance.md, "The transport's loop at SCHED_IDLE"). At SCHED_IDLE the loop runs
// only on a core no other thread wants: a spin gives way to the lock's holder at once, and a
// loop woken by data on an idle core still runs at once.
#pragma once

#include <sys/types.h>

#include <set>
#include <string>

namespace distmetrics::runtime::detail {

enum class LoopPriority { Normal, Idle };

// DISTMETRICS_GLOO_LOOP=idle or normal decides; unset or auto: Idle where every rank of the group
// is on this host (`ranks_on_this_host`) and there are at least as many of them as cores this
// process may run on. Any other value: ConfigError naming the variable.
LoopPriority loop_priority_for(int world_size, bool ranks_on_this_host);

// The threads of this process, by id (/proc/self/task).
std::set<pid_t> process_threads();

// Finds the loop thread a transport made since `before` (the only new thread, else the new one
// named "gloo_tcp_loop": Debian's 2022 gloo does not name it), remembers it, and
// puts it at SCHED_IDLE for LoopPriority::Idle. Returns how many threads it found.
int adopt_new_loop_threads(const std::set<pid_t>& before, LoopPriority priority);

// The loop threads adopt_new_loop_threads found in this process that are still running.
std::set<pid_t> transport_loop_threads();

}  // namespace distmetrics::runtime::detail
