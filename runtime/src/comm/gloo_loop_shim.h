// gloo's tcp loop thread, seen from the C library calls it makes: kept from spinning, and made to
// tick at once while a group is built or torn down.
//
// gloo_loop_shim.cpp defines `epoll_wait` and `recv` for the program that links it
// (the distmetrics front and the test and bench executables; they export them, so they come
// before libc's for every library, gloo's included). Each calls libc's; only the thread named
// `gloo_tcp_loop` is treated otherwise (the torch 2.x wheels' gloo names it; gloo_loop_priority.cpp
// names it where the gloo does not).
//
// **A spin** (pytorch/gloo#246). The loop asks epoll for readable sockets and hands each to its
// pair; a pair whose lock another thread holds is skipped (`tcp::Pair::handleEvents` only
// try_locks), the socket is still readable, and epoll_wait returns at once: the loop spins for as
// long as the lock is held. With at least as many ranks as cores the holder is often a thread
// waiting for a core, and the spinning loops are what keep it waiting (docs/performance.md,
// "7 December": 18.8 million epoll_wait calls in a 15 s world-size-3 run). A return with the same
// sockets and events as the last one, and no recv on the loop thread in between (a pair that got
// its lock drains its socket with recv), is a spin: the thread sleeps 10 us, doubling while the
// spin lasts, to at most 200 us, before it goes on. Unlike SCHED_IDLE (tried before it) this
// leaves the loop's priority alone: another program's load cannot starve it (docs/performance.md,
// "The loop kept from spinning, not starved"). DISTMETRICS_GLOO_LOOP=normal turns it off.
//
// **A hurry.** A pair that connects or closes waits for the loop's next tick, and an idle loop
// ticks every 10 ms (its epoll_wait timeout): a fresh group per job paid that per pair, on both
// ends. While distmetrics_gloo_loop_hurry(true) is in force (gloo.cpp's LoopHurry, where gloo's
// headers are not LibTorch's own and its timerfd handler cannot be built), the loop's waits last
// at most 1 ms, and the call wakes the wait under way: the shim adds an eventfd of its own to the
// loop's epoll set, and takes its events out of what the loop is given.
#pragma once

#include <cstdint>

namespace distmetrics::runtime::detail {

struct LoopShimCounts {
  std::uint64_t spins = 0;     // epoll_wait returns taken for a spin (and slept after)
  std::uint64_t slept_us = 0;  // the sleeps' total, in microseconds
  std::uint64_t wakes = 0;     // loop waits the shim's own eventfd ended (a hurry begun)
  std::uint64_t capped = 0;    // loop waits shortened to 1 ms (a hurry in force)
};

inline constexpr const char* kGlooLoopThreadName = "gloo_tcp_loop";

}  // namespace distmetrics::runtime::detail

// Linked only into executables (see above): a library that wants them asks the dynamic linker
// (dlsym(RTLD_DEFAULT, ...)), and goes without where the program has no shim.
extern "C" {
distmetrics::runtime::detail::LoopShimCounts distmetrics_gloo_loop_shim_counts();
// Nested and concurrent: the loop hurries while more calls said true than false.
void distmetrics_gloo_loop_hurry(bool on);
}
