// A rank worker in a program whose libraries carry a large static TLS (launch_static_tls_block,
// linked into this test): its progress flusher thread must still start, with its 256 KiB of stack
// past that TLS. With a fixed 256 KiB stack a torch 2.x rank's flusher had a few KiB left and died
// in its first lazy symbol binding (SIGSEGV, every gloo variant of the CLI); with more TLS than
// that the thread does not start at all (EINVAL).
#include <gtest/gtest.h>

#include <cstddef>

#include "../src/launch/progress_flusher.h"
#include "distmetrics/runtime/backends.h"
#include "distmetrics/runtime/rank_pool.h"
#include "distmetrics/runtime/task.h"
#include "local_pool_kinds.h"

std::size_t static_tls_block_touch(std::size_t i);

namespace distmetrics::runtime {
namespace {

using namespace std::chrono_literals;

DISTMETRICS_TASK(launch_flusher_stack) {
  const std::size_t block = static_tls_block_touch(static_cast<std::size_t>(ctx.rank));
  ctx.comm.barrier();
  const detail::ProgressFlusher flusher = detail::progress_flusher();
  return {{"running", flusher.running},
          {"stack", flusher.stack_bytes},
          {"tls", flusher.static_tls_bytes},
          {"block", block}};
}

class StaticTls : public testing::TestWithParam<testing_support::PoolKind> {};

TEST_P(StaticTls, ARanksProgressFlusherStartsWithItsStackPastTheStaticTls) {
  PoolOptions options;
  options.world_size = 2;
  options.launch = GetParam().launch;
  options.term_grace = 500ms;
  RankPool pool(options);
  Job job;
  job.id = "test/flusher_stack";
  job.task = "launch_flusher_stack";
  job.backend = GetParam().backend;
  job.deadline = 60s;
  const JobResult run = pool.run(job);
  ASSERT_EQ(run.status, RunStatus::Completed) << run.diagnosis;
  for (const auto& rank : run.ranks) {
    const auto& r = rank.result;
    const std::size_t block = r["block"], tls = r["tls"], stack = r["stack"];
    EXPECT_EQ(block, 512u * 1024u);
    EXPECT_GE(tls, block) << "the static TLS counted includes this test's own block";
    EXPECT_TRUE(r["running"].get<bool>()) << "the flusher thread did not start (its stack is smaller than the TLS)";
    EXPECT_GE(stack, block + 256u * 1024u) << "the flusher's stack leaves less than 256 KiB past this test's TLS block";
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, StaticTls, testing::ValuesIn(testing_support::local_pool_kinds()),
                         [](const auto& info) { return info.param.backend; });

}  // namespace
}  // namespace distmetrics::runtime
