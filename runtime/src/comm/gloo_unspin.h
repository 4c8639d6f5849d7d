// gloo's tcp loop, kept from spinning (pytorch/gloo#246).
//
// The loop asks epoll for readable sockets and hands each to its pair; a pair whose lock another
// thread holds is skipped (`tcp::Pair::handleEvents` only try_locks), the socket is still
// readable, and epoll_wait returns at once: the loop spins for as long as the lock is held. With
// at least as many ranks as cores the holder is often a thread waiting for a core, and the
// spinning loops are what keep it waiting (docs/performance.md, "7 December": 18.8 million
// epoll_wait calls in a 15 s world-size-3 run).
//
// gloo_unspin.cpp defines `epoll_wait` and `recv` for the program that links it (the distmetrics
// front and the test and bench executables; they export both, so they come before libc's for
// every library, gloo's included): each calls libc's. On a thread named `gloo_tcp_loop`, an
// epoll_wait that returns the same sockets with the same events as the last one, with no recv
// on that thread in between (a pair that got its lock drains its socket with recv), is a spin:
// the thread sleeps 10 us, doubling while the spin lasts, to at most 200 us, before it goes on.
// Nothing else changes: every call's result is libc's, and every other thread is untouched.
//
// DISTMETRICS_GLOO_LOOP=normal turns it off (gloo as shipped). Unlike SCHED_IDLE (tried before
// it), it leaves the loop's priority alone: a loop woken by data competes for a core as any
// thread does, and another program's load cannot starve it (docs/performance.md, "The loop kept
// from spinning, not starved").
#pragma once

#include <cstdint>

namespace distmetrics::runtime::detail {

struct UnspinCounts {
  std::uint64_t spins = 0;     // epoll_wait returns taken for a spin (and slept after)
  std::uint64_t slept_us = 0;  // the sleeps' total, in microseconds
};

// The name gloo's loop thread has (the torch 2.x wheels' gloo sets it; gloo_loop_priority.cpp
// sets it where the gloo does not).
inline constexpr const char* kGlooLoopThreadName = "gloo_tcp_loop";

}  // namespace distmetrics::runtime::detail

// Linked only into executables (see above): a library or program that wants to know whether this
// process has it asks the dynamic linker for this symbol (dlsym(RTLD_DEFAULT, ...)).
extern "C" distmetrics::runtime::detail::UnspinCounts distmetrics_gloo_unspin_counts();
