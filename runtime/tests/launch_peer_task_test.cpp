// A peer rank's gloo task in its child (peer_task.h): two ranks' children of this process run a
// real all_reduce over a private store and are kept, with their communicators, until released;
// a child that crashes, exits or stops itself is said as the rank's outcome, with the progress
// it left in the store; nothing of it is left after the release.
#include <gtest/gtest.h>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include <ATen/ATen.h>

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

#include "../src/launch/peer_task.h"
#include "../src/launch/pool_store.h"
#include "distmetrics/runtime/backends.h"
#include "distmetrics/runtime/task.h"

namespace distmetrics::runtime {
namespace {

DISTMETRICS_TASK(peer_task_test_sum) {
  at::Tensor sum = ctx.comm.all_reduce_copy(at::full({1}, double(ctx.rank + 1), at::kDouble), ReduceOp::Sum);
  return {{"sum", sum.item<double>()}, {"pid", static_cast<long>(::getpid())}};
}

// One collective, then the end the params ask for.
DISTMETRICS_TASK(peer_task_test_then) {
  ctx.comm.all_reduce_copy(at::ones({3}, at::kDouble), ReduceOp::Sum);
  const std::string how = ctx.params.value("then", "");
  if (how == "segv") ::raise(SIGSEGV);
  if (how == "exit") ::_exit(3);
  if (how == "stop") ::raise(SIGSTOP);
  return nlohmann::json::object();
}

// Why gloo cannot run two ranks here, or nullopt after loading what a peer rank loads as it
// starts (PeerRunner) for the task children it forks: gloo through Python's torch.distributed.
std::optional<std::string> gloo_for_task_children() {
  if (auto why = backend_unavailable("gloo", "cpu", 2)) return why->text;
  if (const Backend* gloo = find_backend("gloo"); gloo->load_for_forked_workers != nullptr) gloo->load_for_forked_workers();
  return std::nullopt;
}

}  // namespace

namespace detail {
namespace {

using namespace std::chrono_literals;

bool gone(long pid) { return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH; }

struct Bed {
  PoolStoreHost host;
  c10::intrusive_ptr<c10d::Store> store = connect_to_private_store(host.socket_path(), Deadline::after(10s), 5000ms);
  StoreAddress address() const {
    StoreAddress a;
    a.socket = host.socket_path();
    return a;
  }
};

Job job_of(const std::string& task, nlohmann::json params = nlohmann::json::object()) {
  Job job;
  job.id = task;
  job.task = task;
  job.params = std::move(params);
  job.backend = "gloo";
  job.deadline = 20s;
  return job;
}

CommSpec spec_of(int rank, int world_size) {
  CommSpec spec;
  spec.backend = "gloo";
  spec.rank = rank;
  spec.world_size = world_size;
  spec.local_rank = rank;
  spec.op_timeout = 20s;
  return spec;
}

TEST(PeerTask, TwoRanksChildrenAllReduceAndAreKeptUntilReleased) {
  if (auto reason = gloo_for_task_children()) GTEST_SKIP() << *reason;
  Bed bed;
  const Job job = job_of("peer_task_test_sum");
  const Deadline deadline = Deadline::after(job.deadline);
  TaskChild rank0(job, spec_of(0, 2), "v1/", bed.address(), deadline, 0);
  TaskChild rank1(job, spec_of(1, 2), "v1/", bed.address(), deadline, 0);
  const RankOutcome a = rank0.wait(deadline, *bed.store);
  const RankOutcome b = rank1.wait(deadline, *bed.store);
  ASSERT_EQ(a.state, RankState::Finished) << a.error << a.how_died;
  ASSERT_EQ(b.state, RankState::Finished) << b.error << b.how_died;
  EXPECT_EQ(a.result.at("sum").get<double>(), 3.0);  // 1 + 2
  EXPECT_EQ(b.result.at("sum").get<double>(), 3.0);
  const long pid0 = a.result.at("pid").get<long>();
  const long pid1 = b.result.at("pid").get<long>();
  EXPECT_NE(pid0, static_cast<long>(::getpid()));
  EXPECT_NE(pid0, pid1);
  // Answered, and still there with their communicators until released.
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(gone(pid0));
  EXPECT_FALSE(gone(pid1));
  rank0.release(1s);
  rank1.release(1s);
  EXPECT_TRUE(gone(pid0));
  EXPECT_TRUE(gone(pid1));
}

TEST(PeerTask, ACrashOrAnExitInTheTaskIsTheRanksCrashWithItsProgress) {
  if (auto reason = gloo_for_task_children()) GTEST_SKIP() << *reason;
  for (const std::string how : {"segv", "exit"}) {
    Bed bed;
    const Job job = job_of("peer_task_test_then", {{"then", how}});
    const Deadline deadline = Deadline::after(job.deadline);
    TaskChild child(job, spec_of(0, 1), "v1/", bed.address(), deadline, 0);
    auto store = c10::make_intrusive<c10d::PrefixStore>("v1/", bed.store);
    const RankOutcome outcome = child.wait(deadline, *store);
    EXPECT_EQ(outcome.state, RankState::Crashed) << how;
    EXPECT_EQ(outcome.how_died, how == "segv" ? "killed by signal 11 (SIGSEGV)"
                                              : "exit status 3 (the task's process exited inside the task)");
    ASSERT_EQ(outcome.trace.size(), 1u) << how;  // the one all_reduce, from its progress in the store
    EXPECT_EQ(outcome.trace[0].op, "all_reduce(sum)");
    EXPECT_FALSE(outcome.blocked_in.has_value());  // it had left the collective
    const long pid = outcome.pid;
    EXPECT_GT(pid, 0);
    EXPECT_TRUE(gone(pid));  // reaped
    child.release(0ms);
  }
}

TEST(PeerTask, AChildThatStopsItselfIsStuckAndEndedOnRelease) {
  if (auto reason = gloo_for_task_children()) GTEST_SKIP() << *reason;
  Bed bed;
  const Job job = job_of("peer_task_test_then", {{"then", "stop"}});
  TaskChild child(job, spec_of(0, 1), "v1/", bed.address(), Deadline::after(job.deadline), 0);
  auto store = c10::make_intrusive<c10d::PrefixStore>("v1/", bed.store);
  const RankOutcome outcome = child.wait(Deadline::after(3s), *store);
  EXPECT_EQ(outcome.state, RankState::Stuck);
  EXPECT_EQ(outcome.how_died, "stopped by SIGSTOP");
  ASSERT_EQ(outcome.trace.size(), 1u);
  EXPECT_FALSE(gone(outcome.pid));  // kept (stopped) until the release
  child.release(0ms);
  EXPECT_TRUE(gone(outcome.pid));
}

// outcome_of on its own: a task that sent nothing and is still running is stuck inside the
// collective its progress names.
TEST(PeerTask, AStuckRankIsInsideTheCollectiveItsProgressNames) {
  Bed bed;
  bed.store->set("progress/2", bytes_of(R"({"trace":[{"seq":0,"op":"barrier"},{"seq":1,"op":"all_gather","dtype":"int64","shape":[2]}],"open":true})"));
  const RankOutcome outcome = outcome_of(TaskEnd{}, 2, 4242, *bed.store);
  EXPECT_EQ(outcome.rank, 2);
  EXPECT_EQ(outcome.pid, 4242);
  EXPECT_EQ(outcome.state, RankState::Stuck);
  EXPECT_EQ(outcome.how_died, "");
  ASSERT_EQ(outcome.trace.size(), 2u);
  ASSERT_TRUE(outcome.blocked_in.has_value());
  EXPECT_EQ(outcome.blocked_in->describe(), "all_gather #1 (int64 [2])");
}

}  // namespace
}  // namespace detail
}  // namespace distmetrics::runtime
