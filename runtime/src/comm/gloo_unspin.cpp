// gloo_unspin.h says what and why. No LibTorch here: the front links it.
// This file defines recv itself: no inline checking wrapper of it from the C library's headers.
#undef _FORTIFY_SOURCE
#include "gloo_unspin.h"

#include <dlfcn.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace {

using EpollWait = int (*)(int, struct epoll_event*, int, int);
using Recv = ssize_t (*)(int, void*, size_t, int);

template <typename Function>
Function libc_next(const char* name) {
  return reinterpret_cast<Function>(::dlsym(RTLD_NEXT, name));
}

constexpr int kMaxWatched = 8;      // a loop's return with more ready sockets is never taken for a spin
constexpr long kFirstNapUs = 10;    // a lock's holder that has a core lets go within microseconds
constexpr long kLongestNapUs = 200;  // the most one return waits, however long the spin

// What this thread's last epoll_wait returned, and how many recv calls it had made by then.
struct LastReturn {
  int ready = 0;
  std::uint64_t keys[kMaxWatched] = {};
  std::uint32_t events[kMaxWatched] = {};
  std::uint64_t recvs = 0;
  long nap_us = 0;
  signed char loop_thread = -1;  // unknown; a thread's name can change, so a "no" is asked again
};

thread_local std::uint64_t recvs_here = 0;
thread_local LastReturn last;

std::atomic<std::uint64_t> spins{0};
std::atomic<std::uint64_t> slept_us{0};

bool unspin_wanted() {
  const char* choice = std::getenv("DISTMETRICS_GLOO_LOOP");
  return choice == nullptr || std::strcmp(choice, "normal") != 0;
}

bool on_loop_thread() {
  if (last.loop_thread == 1) return true;
  char name[17] = {};
  if (::prctl(PR_GET_NAME, name) != 0) return false;
  last.loop_thread = std::strcmp(name, distmetrics::runtime::detail::kGlooLoopThreadName) == 0 ? 1 : 0;
  return last.loop_thread == 1;
}

// The same sockets, the same events, nothing read since: the pairs were skipped.
bool same_as_last(const struct epoll_event* ready, int count) {
  if (count != last.ready || recvs_here != last.recvs) return false;
  for (int i = 0; i < count; ++i) {
    if ((ready[i].events & EPOLLOUT) != 0) return false;  // a pending write goes on with writev, not recv
    if (ready[i].data.u64 != last.keys[i] || ready[i].events != last.events[i]) return false;
  }
  return true;
}

void remember(const struct epoll_event* ready, int count) {
  last.ready = count;
  for (int i = 0; i < count; ++i) {
    last.keys[i] = ready[i].data.u64;
    last.events[i] = ready[i].events;
  }
  last.recvs = recvs_here;
}

void nap(long us) {
  struct timespec wait = {0, us * 1000};
  while (::nanosleep(&wait, &wait) == -1 && errno == EINTR) {
  }
}

}  // namespace

extern "C" {

int epoll_wait(int epfd, struct epoll_event* events, int maxevents, int timeout) {
  static const EpollWait libc_epoll_wait = libc_next<EpollWait>("epoll_wait");
  const int ready = libc_epoll_wait(epfd, events, maxevents, timeout);
  if (ready <= 0 || ready > kMaxWatched) {
    last.ready = 0;
    last.nap_us = 0;
    return ready;
  }
  const bool spin = same_as_last(events, ready);
  remember(events, ready);
  if (!spin || !on_loop_thread() || !unspin_wanted()) {
    last.nap_us = 0;
    return ready;
  }
  const int saved = errno;
  last.nap_us = last.nap_us == 0 ? kFirstNapUs : std::min(2 * last.nap_us, kLongestNapUs);
  nap(last.nap_us);
  spins.fetch_add(1, std::memory_order_relaxed);
  slept_us.fetch_add(static_cast<std::uint64_t>(last.nap_us), std::memory_order_relaxed);
  errno = saved;
  return ready;
}

ssize_t recv(int fd, void* buffer, size_t length, int flags) {
  static const Recv libc_recv = libc_next<Recv>("recv");
  ++recvs_here;
  return libc_recv(fd, buffer, length, flags);
}

distmetrics::runtime::detail::UnspinCounts distmetrics_gloo_unspin_counts() {
  return {spins.load(std::memory_order_relaxed), slept_us.load(std::memory_order_relaxed)};
}

}  // extern "C"
