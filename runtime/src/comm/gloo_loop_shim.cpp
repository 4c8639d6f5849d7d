// gloo_loop_shim.h says what and why. No LibTorch here: the front links it.
// This file defines recv itself: no inline checking wrapper of it from the C library's headers.
#undef _FORTIFY_SOURCE
#include "gloo_loop_shim.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

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

constexpr int kMaxWatched = 8;       // a return with more ready sockets is never taken for a spin
constexpr long kFirstNapUs = 10;     // a lock's holder that has a core lets go within microseconds
constexpr long kLongestNapUs = 200;  // the most one return waits, however long the spin
constexpr int kHurriedWaitMs = 1;    // the longest wait of a hurried loop
// The shim's own eventfd in a loop's epoll set: its key is no address gloo's handlers can have.
constexpr std::uint64_t kWakeKey = 1;
constexpr int kMaxLoops = 16;  // loops that can be woken at once (one per process on the C++ route)

std::atomic<std::uint64_t> spins{0};
std::atomic<std::uint64_t> slept_us{0};
std::atomic<std::uint64_t> wakes{0};
std::atomic<std::uint64_t> capped{0};
std::atomic<int> hurrying{0};
// The eventfds a hurry writes to, one per slot, made by the slot's first loop and never closed:
// a hurry that read one just before its loop ended writes to that eventfd still, never to
// whatever file took its number. A slot is taken by one loop at a time; 0: not made yet.
std::atomic<int> wake_fds[kMaxLoops];
std::atomic<bool> slot_taken[kMaxLoops];

// What this thread's last epoll_wait returned, and how many recv calls it had made by then.
struct LoopThread {
  int ready = 0;
  std::uint64_t keys[kMaxWatched] = {};
  std::uint32_t events[kMaxWatched] = {};
  std::uint64_t recvs = 0;
  long nap_us = 0;
  bool named_loop = false;  // a "no" is asked again: the transport names a loop after it starts
  int wake_fd = -1;         // this loop's eventfd, in its epoll set
  int wake_slot = -1;
  // A loop thread ends with its Device (torch.distributed makes one per group of its own): its
  // slot and eventfd go to the next loop (its epoll set goes with the Device).
  ~LoopThread() {
    if (wake_slot >= 0) slot_taken[wake_slot].store(false);
  }
};

thread_local std::uint64_t recvs_here = 0;
thread_local LoopThread here;

bool unspin_wanted() {
  const char* choice = std::getenv("DISTMETRICS_GLOO_LOOP");
  return choice == nullptr || std::strcmp(choice, "normal") != 0;
}

bool on_loop_thread() {
  if (here.named_loop) return true;
  char name[17] = {};
  if (::prctl(PR_GET_NAME, name) != 0) return false;
  here.named_loop = std::strcmp(name, distmetrics::runtime::detail::kGlooLoopThreadName) == 0;
  return here.named_loop;
}

// The loop's first wait: an eventfd of the shim's joins its epoll set, so that a hurry can wake it.
void add_wake_fd(int epfd) {
  here.wake_fd = -2;  // asked once per loop thread, whatever comes of it
  for (int slot = 0; slot < kMaxLoops; ++slot) {
    bool taken = false;
    if (!slot_taken[slot].compare_exchange_strong(taken, true)) continue;
    int fd = wake_fds[slot].load();
    if (fd == 0) {
      fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
      if (fd <= 0) {
        slot_taken[slot].store(false);
        return;  // then this loop is hurried from its next wait on, not woken
      }
      wake_fds[slot].store(fd);
    }
    std::uint64_t stale = 0;
    (void)!::read(fd, &stale, sizeof(stale));  // hurries that came while the slot was free
    struct epoll_event watch{};
    watch.events = EPOLLIN;
    watch.data.u64 = kWakeKey;
    if (::epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &watch) != 0) {
      slot_taken[slot].store(false);
      return;
    }
    here.wake_fd = fd;
    here.wake_slot = slot;
    return;
  }
}

// Takes the shim's own events out of what the loop is given; returns how many are left.
int without_wakes(struct epoll_event* ready, int count) {
  int kept = 0;
  for (int i = 0; i < count; ++i) {
    if (ready[i].data.u64 == kWakeKey && here.wake_fd >= 0) {
      std::uint64_t drained = 0;
      (void)!::read(here.wake_fd, &drained, sizeof(drained));
      wakes.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    ready[kept++] = ready[i];
  }
  return kept;
}

// The same sockets, the same events, nothing read since: the pairs were skipped.
bool same_as_last(const struct epoll_event* ready, int count) {
  if (count != here.ready || recvs_here != here.recvs) return false;
  for (int i = 0; i < count; ++i) {
    if ((ready[i].events & EPOLLOUT) != 0) return false;  // a pending write goes on with writev, not recv
    if (ready[i].data.u64 != here.keys[i] || ready[i].events != here.events[i]) return false;
  }
  return true;
}

void remember(const struct epoll_event* ready, int count) {
  here.ready = count;
  for (int i = 0; i < count; ++i) {
    here.keys[i] = ready[i].data.u64;
    here.events[i] = ready[i].events;
  }
  here.recvs = recvs_here;
}

void nap(long us) {
  struct timespec wait = {0, us * 1000};
  while (::nanosleep(&wait, &wait) == -1 && errno == EINTR) {
  }
}

// A forked child has none of its parent's threads: no loop of its own yet, no hurry under way, and
// the parent's eventfds (inherited, shared with the parent) are not its to write to.
void forget_the_parents_loops() {
  hurrying.store(0);
  for (int slot = 0; slot < kMaxLoops; ++slot) {
    wake_fds[slot].store(0);
    slot_taken[slot].store(false);
  }
}
const bool forget_in_children = [] { return ::pthread_atfork(nullptr, nullptr, forget_the_parents_loops) == 0; }();

// A loop thread's return: a spin is slept through before the loop goes on.
void unspin(const struct epoll_event* ready, int count) {
  if (count <= 0 || count > kMaxWatched) {
    here.ready = 0;
    here.nap_us = 0;
    return;
  }
  const bool spin = same_as_last(ready, count);
  remember(ready, count);
  if (!spin || !unspin_wanted()) {
    here.nap_us = 0;
    return;
  }
  here.nap_us = here.nap_us == 0 ? kFirstNapUs : std::min(2 * here.nap_us, kLongestNapUs);
  nap(here.nap_us);
  spins.fetch_add(1, std::memory_order_relaxed);
  slept_us.fetch_add(static_cast<std::uint64_t>(here.nap_us), std::memory_order_relaxed);
}

}  // namespace

extern "C" {

int epoll_wait(int epfd, struct epoll_event* events, int maxevents, int timeout) {
  static const EpollWait libc_epoll_wait = libc_next<EpollWait>("epoll_wait");
  if (!on_loop_thread()) return libc_epoll_wait(epfd, events, maxevents, timeout);
  if (here.wake_fd == -1) add_wake_fd(epfd);
  if (hurrying.load(std::memory_order_relaxed) > 0 && (timeout < 0 || timeout > kHurriedWaitMs)) {
    timeout = kHurriedWaitMs;
    capped.fetch_add(1, std::memory_order_relaxed);
  }
  int ready = libc_epoll_wait(epfd, events, maxevents, timeout);
  if (ready <= 0) {
    unspin(events, 0);
    return ready;
  }
  const int saved = errno;
  ready = without_wakes(events, ready);
  unspin(events, ready);
  errno = saved;
  return ready;  // 0 when only the shim's eventfd woke it: the loop ticks
}

ssize_t recv(int fd, void* buffer, size_t length, int flags) {
  static const Recv libc_recv = libc_next<Recv>("recv");
  ++recvs_here;
  return libc_recv(fd, buffer, length, flags);
}

void distmetrics_gloo_loop_hurry(bool on) {
  const int before = hurrying.fetch_add(on ? 1 : -1);
  if (!on || before != 0) return;
  const std::uint64_t one = 1;
  for (auto& slot : wake_fds) {
    const int fd = slot.load();
    if (fd > 0) (void)!::write(fd, &one, sizeof(one));
  }
}

distmetrics::runtime::detail::LoopShimCounts distmetrics_gloo_loop_shim_counts() {
  return {spins.load(std::memory_order_relaxed), slept_us.load(std::memory_order_relaxed),
          wakes.load(std::memory_order_relaxed), capped.load(std::memory_order_relaxed)};
}

}  // extern "C"
