// The gloo communicator's two ways of being fast on a machine whose cores its ranks fill: the
// common CPU collectives in the calling thread (gloo_inline.h) and the transport's loop thread at
// SCHED_IDLE (gloo_loop_priority.h). Each checked where it could fail: the ops counted as they
// ran, their results against closed forms, the loop thread's policy read back from the kernel.
#include <ATen/ATen.h>
#include <torch/version.h>
#include <gtest/gtest.h>
#include <sched.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <string>

#include "../src/comm/gloo_loop_priority.h"
#include "distmetrics/runtime/errors.h"
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

DISTMETRICS_RANK_TEST(GlooTransport, TheLoopThreadIdlesWhereTheRanksFillTheCores, DISTMETRICS_WORLD_SIZES(2, 3)) {
  if (ctx.comm.backend() != "gloo") GTEST_SKIP() << "a gloo communicator's transport";
  ctx.comm.barrier();  // the transport exists once a group has met
  // The rule, from the kernel's own count of this process's cores (the pool's ranks share a host).
  cpu_set_t cores;
  CPU_ZERO(&cores);
  ASSERT_EQ(::sched_getaffinity(0, sizeof(cores), &cores), 0);
  const char* forced = std::getenv("DISTMETRICS_GLOO_LOOP");
  const bool idle = forced && std::string(forced) != "auto" ? std::string(forced) == "idle"
                                                            : ctx.world_size >= CPU_COUNT(&cores);
  const std::set<pid_t> loops = detail::transport_loop_threads();
  EXPECT_EQ(loops.size(), 1u) << "one kept transport per process";
  for (pid_t tid : loops) {
    EXPECT_EQ(::sched_getscheduler(tid), idle ? SCHED_IDLE : SCHED_OTHER) << "thread " << tid << " " << name_of(tid);
  }
  // The gloo inside the torch 2.x wheels names its loop thread; Debian's 2022 gloo (torch 1.13) does not.
  int named = 0;
  for (pid_t tid : detail::process_threads()) named += name_of(tid) == "gloo_tcp_loop";
  EXPECT_EQ(named, TORCH_VERSION_MAJOR >= 2 ? 1 : 0);
}

TEST(GlooTransport, TheLoopVariableIsReadAndABadValueNamesIt) {
  ::setenv("DISTMETRICS_GLOO_LOOP", "idle", 1);
  EXPECT_EQ(detail::loop_priority_for(2, false), detail::LoopPriority::Idle);
  ::setenv("DISTMETRICS_GLOO_LOOP", "normal", 1);
  EXPECT_EQ(detail::loop_priority_for(64, true), detail::LoopPriority::Normal);
  ::setenv("DISTMETRICS_GLOO_LOOP", "auto", 1);
  EXPECT_EQ(detail::loop_priority_for(1, true), detail::LoopPriority::Normal);  // one rank: no pairs
  EXPECT_EQ(detail::loop_priority_for(4096, false), detail::LoopPriority::Normal);  // ranks on other hosts
  EXPECT_EQ(detail::loop_priority_for(4096, true), detail::LoopPriority::Idle);
  ::setenv("DISTMETRICS_GLOO_LOOP", "low", 1);
  try {
    (void)detail::loop_priority_for(2, true);
    ADD_FAILURE() << "a bad value was taken";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("DISTMETRICS_GLOO_LOOP='low'"), std::string::npos) << e.what();
  }
  ::unsetenv("DISTMETRICS_GLOO_LOOP");
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
