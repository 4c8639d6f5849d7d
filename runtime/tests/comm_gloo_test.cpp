// The gloo communicator's ways of being fast on a machine whose cores its ranks fill: the common
// CPU collectives in the calling thread (gloo_inline.h), the transport's loop thread found, named
// and scheduled (gloo_loop_priority.h), and its spins slept through (gloo_loop_shim.h). Each checked
// where it could fail: the ops counted as they ran, their results against closed forms, the loop
// thread's name and policy read back from the kernel, a spin made on purpose and counted.
#include <ATen/ATen.h>
#include <torch/version.h>
#include <gtest/gtest.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "../src/comm/gloo_loop_priority.h"
#include "../src/comm/gloo_loop_shim.h"
#include "distmetrics/runtime/errors.h"
#include "distmetrics/runtime/gloo_loop_hurry.h"
#include "distmetrics/fixtures/rank_test.h"
#if DISTMETRICS_GLOO_INLINE
#include "../src/comm/gloo_inline.h"
#endif

namespace distmetrics::runtime {
namespace {

using fixtures::RankTestContext;

std::string name_of(pid_t tid) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/comm");
  std::string name;
  std::getline(in, name);
  return name;
}

DISTMETRICS_RANK_TEST(GlooTransport, TheLoopThreadIsNamedAndScheduledAsTheVariableSays, DISTMETRICS_WORLD_SIZES(2, 3)) {
  if (ctx.comm.backend() != "gloo") GTEST_SKIP() << "a gloo communicator's transport";
  ctx.comm.barrier();  // the transport exists once a group has met
  const char* forced = std::getenv("DISTMETRICS_GLOO_LOOP");
  const bool idle = forced != nullptr && std::string(forced) == "idle";
  const std::set<pid_t> loops = detail::transport_loop_threads();
  EXPECT_EQ(loops.size(), 1u) << "one kept transport per process";
  for (pid_t tid : loops) {
    EXPECT_EQ(::sched_getscheduler(tid), idle ? SCHED_IDLE : SCHED_OTHER) << "thread " << tid << " " << name_of(tid);
    // The torch 2.x wheels' gloo names it; Debian's 2022 gloo (torch 1.13) does not, and the
    // transport does: either way gloo_loop_shim.cpp finds it by this name.
    EXPECT_EQ(name_of(tid), detail::kGlooLoopThreadName);
  }
  int named = 0;
  for (pid_t tid : detail::process_threads()) named += name_of(tid) == detail::kGlooLoopThreadName;
  EXPECT_EQ(named, 1);
}

TEST(GlooTransport, TheLoopVariableIsReadAndABadValueNamesIt) {
  ::unsetenv("DISTMETRICS_GLOO_LOOP");
  EXPECT_EQ(detail::loop_priority_from_environment(), detail::LoopPriority::Normal);
  ::setenv("DISTMETRICS_GLOO_LOOP", "idle", 1);
  EXPECT_EQ(detail::loop_priority_from_environment(), detail::LoopPriority::Idle);
  ::setenv("DISTMETRICS_GLOO_LOOP", "normal", 1);
  EXPECT_EQ(detail::loop_priority_from_environment(), detail::LoopPriority::Normal);
  ::setenv("DISTMETRICS_GLOO_LOOP", "auto", 1);
  EXPECT_EQ(detail::loop_priority_from_environment(), detail::LoopPriority::Normal);
  ::setenv("DISTMETRICS_GLOO_LOOP", "low", 1);
  try {
    (void)detail::loop_priority_from_environment();
    ADD_FAILURE() << "a bad value was taken";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("DISTMETRICS_GLOO_LOOP='low'"), std::string::npos) << e.what();
  }
  ::unsetenv("DISTMETRICS_GLOO_LOOP");
}

// The epoll_wait that gloo's library calls is this program's (gloo_loop_shim.cpp), not libc's.
TEST(GlooLoopShim, TheProgramsEpollWaitIsTheOneLibrariesCall) {
  void* found = ::dlsym(RTLD_DEFAULT, "epoll_wait");
  ASSERT_NE(found, nullptr);
  Dl_info where{};
  ASSERT_NE(::dladdr(found, &where), 0);
  char self[PATH_MAX];
  ASSERT_NE(::realpath("/proc/self/exe", self), nullptr);
  char from[PATH_MAX];
  ASSERT_NE(::realpath(where.dli_fname, from), nullptr) << where.dli_fname;
  EXPECT_EQ(std::string(from), std::string(self));
  EXPECT_NE(::dlsym(RTLD_DEFAULT, "distmetrics_gloo_loop_shim_counts"), nullptr);
}

// A socket with a byte nobody reads, as gloo's loop sees one whose pair another thread has locked.
class ReadableSocket {
 public:
  ReadableSocket() {
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, ends_), 0);
    epoll_ = ::epoll_create1(0);
    epoll_event watch{};
    watch.events = EPOLLIN;
    watch.data.u64 = 42;
    EXPECT_EQ(::epoll_ctl(epoll_, EPOLL_CTL_ADD, ends_[0], &watch), 0);
    send_byte();
  }
  ~ReadableSocket() {
    ::close(epoll_);
    ::close(ends_[0]);
    ::close(ends_[1]);
  }
  void send_byte() { EXPECT_EQ(::write(ends_[1], "x", 1), 1); }
  void drain() {
    char byte;
    EXPECT_EQ(::recv(ends_[0], &byte, 1, 0), 1);
  }
  // One tick of a loop: what epoll_wait returned is checked to be libc's answer, unchanged.
  void tick() {
    epoll_event ready[4];
    ASSERT_EQ(::epoll_wait(epoll_, ready, 4, 0), 1);
    EXPECT_EQ(ready[0].data.u64, 42u);
    EXPECT_EQ(ready[0].events, static_cast<std::uint32_t>(EPOLLIN));
  }

 private:
  int ends_[2] = {-1, -1};
  int epoll_ = -1;
};

// `ticks` ticks on a fresh thread of the given name, nothing read between them; the spins and
// microseconds slept that this process counted meanwhile.
detail::LoopShimCounts ticks_on_thread(const char* name, int ticks, bool drain_between = false) {
  const auto before = distmetrics_gloo_loop_shim_counts();
  std::thread loop([&] {
    ::pthread_setname_np(::pthread_self(), name);
    ReadableSocket socket;
    for (int i = 0; i < ticks; ++i) {
      socket.tick();
      if (drain_between) {
        socket.drain();
        socket.send_byte();
      }
    }
  });
  loop.join();
  const auto after = distmetrics_gloo_loop_shim_counts();
  return {after.spins - before.spins, after.slept_us - before.slept_us, 0, 0};
}

TEST(GlooLoopShim, ALoopThreadThatSpinsSleepsLongerWhileItLastsOthersNever) {
  ::unsetenv("DISTMETRICS_GLOO_LOOP");
  // 10 ticks: the first is news, the 9 after it are spins; naps 10, 20, 40, 80, 160, then 200 us.
  const auto spun = ticks_on_thread(detail::kGlooLoopThreadName, 10);
  EXPECT_EQ(spun.spins, 9u);
  EXPECT_EQ(spun.slept_us, 10u + 20 + 40 + 80 + 160 + 4 * 200);
  // A byte read between ticks: each tick is news (the pair got its lock and read).
  EXPECT_EQ(ticks_on_thread(detail::kGlooLoopThreadName, 5, /*drain_between=*/true).spins, 0u);
  // Any other thread's epoll_wait is libc's alone.
  EXPECT_EQ(ticks_on_thread("not_a_gloo_loop", 5).spins, 0u);
  // gloo as shipped.
  ::setenv("DISTMETRICS_GLOO_LOOP", "normal", 1);
  EXPECT_EQ(ticks_on_thread(detail::kGlooLoopThreadName, 5).spins, 0u);
  ::unsetenv("DISTMETRICS_GLOO_LOOP");
}

// Whether `tid` is inside epoll_wait now (the kernel's own record of the call it sleeps in).
bool in_epoll_wait(pid_t tid) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/syscall");
  long number = -1;
  in >> number;
  return number == SYS_epoll_wait || number == SYS_epoll_pwait;
}

// One loop thread's two long waits under a hurry begun while the first is under way: the first
// woken by the shim's eventfd, the second cut to 1 ms. Counted by the shim, never timed.
void two_waits_under_a_hurry() {
  const auto before = distmetrics_gloo_loop_shim_counts();
  std::atomic<pid_t> loop_tid{0};
  int woken = -1, capped = -1;
  std::thread loop([&] {
    ::pthread_setname_np(::pthread_self(), detail::kGlooLoopThreadName);
    const int epfd = ::epoll_create1(0);  // nothing of its own: only the shim's eventfd is in it
    epoll_event ready[4];
    loop_tid = static_cast<pid_t>(::syscall(SYS_gettid));
    woken = ::epoll_wait(epfd, ready, 4, 600000);   // 10 minutes, unless the hurry wakes it
    capped = ::epoll_wait(epfd, ready, 4, 600000);  // at most 1 ms: the hurry is still on
    ::close(epfd);
  });
  std::optional<GlooLoopHurry> hurry;
  while (loop_tid == 0 || !in_epoll_wait(loop_tid)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  hurry.emplace();  // as pyhost and the communicator do
  loop.join();
  hurry.reset();
  const auto after = distmetrics_gloo_loop_shim_counts();
  EXPECT_EQ(woken, 0) << "the shim's own event is not the loop's";
  EXPECT_EQ(capped, 0);
  EXPECT_EQ(after.wakes - before.wakes, 1u);
  EXPECT_EQ(after.capped - before.capped, 1u);
}

TEST(GlooLoopShim, AHurryWakesTheLoopsWaitAndShortensTheNextOnes) {
  two_waits_under_a_hurry();
  // The loop thread ended and left its slot; the next loop takes it, with its eventfd drained.
  two_waits_under_a_hurry();
}

#if DISTMETRICS_GLOO_INLINE
DISTMETRICS_RANK_TEST(GlooTransport, CommonCollectivesRunInTheCallingThreadTheRestQueued, DISTMETRICS_WORLD_SIZES(2, 3)) {
  if (ctx.comm.backend() != "gloo") GTEST_SKIP() << "a gloo communicator's group";
  auto* group = dynamic_cast<detail::InlineGlooGroup*>(ctx.comm.process_group().get());
  ASSERT_NE(group, nullptr) << "the gloo communicator's group is an InlineGlooGroup in this build";
  c10d::ProcessGroupGloo& ops = *group;  // as torch.distributed calls it
  const std::int64_t N = ctx.world_size, r = ctx.rank;
  const auto before = group->counts();

  std::vector<at::Tensor> sum{at::full({3}, double(r + 1), at::kDouble)};
  ops.allreduce(sum)->wait();
  EXPECT_TRUE(at::equal(sum[0], at::full({3}, double(N * (N + 1) / 2), at::kDouble)));
  c10d::AllreduceOptions min_opts;
  min_opts.reduceOp = c10d::ReduceOp::MIN;
  std::vector<at::Tensor> least{at::tensor({std::int32_t(r + 5), std::int32_t(-r)})};
  ops.allreduce(least, min_opts)->wait();
  EXPECT_TRUE(at::equal(least[0], at::tensor({std::int32_t(5), std::int32_t(1 - N)})));
  std::vector<std::vector<at::Tensor>> gathered(1);
  for (int i = 0; i < N; ++i) gathered[0].push_back(at::empty({2}, at::kHalf));
  std::vector<at::Tensor> mine{at::full({2}, double(r), at::kHalf)};
  ops.allgather(gathered, mine)->wait();
  for (int i = 0; i < N; ++i) EXPECT_TRUE(at::equal(gathered[0][i], at::full({2}, double(i), at::kHalf))) << i;
  std::vector<at::Tensor> shared{at::full({}, r == N - 1 ? 42L : -1L, at::kLong)};
  c10d::BroadcastOptions from_last;
  from_last.rootRank = N - 1;
  ops.broadcast(shared, from_last)->wait();
  EXPECT_EQ(shared[0].item<std::int64_t>(), 42);
  ops.barrier()->wait();
  EXPECT_EQ(group->counts().inline_ops - before.inline_ops, 5);
  EXPECT_EQ(group->counts().queued_ops, before.queued_ops);

  // A bitwise reduction is ProcessGroupGloo's own, on its worker thread: the same tags go on.
  c10d::AllreduceOptions band;
  band.reduceOp = c10d::ReduceOp::BAND;
  std::vector<at::Tensor> bits{at::tensor({std::int64_t(7 - r)})};
  ops.allreduce(bits, band)->wait();
  std::int64_t expected = 7;
  for (std::int64_t i = 1; i < N; ++i) expected &= 7 - i;
  EXPECT_EQ(bits[0].item<std::int64_t>(), expected);
  EXPECT_EQ(group->counts().queued_ops - before.queued_ops, 1);
  std::vector<at::Tensor> after{at::full({1}, 1.0, at::kFloat)};
  ops.allreduce(after)->wait();
  EXPECT_EQ(after[0].item<float>(), float(N));
}
#endif

}  // namespace
}  // namespace distmetrics::runtime
