// The worker zygote (start_worker_zygote, restart_worker_zygote): workers forked from it start as
// a copy of the zygote, so what they have is what this process had when the zygote was made; a
// restart takes what was loaded since (how `conform --python` gives workers torch and the
// library already imported), with the fork hooks run in the processes and order they promise.
#include <gtest/gtest.h>

#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "../src/comm/gloo_through_python.h"
#include "../src/launch/zygote.h"
#include "distmetrics/build_config.h"
#include "distmetrics/runtime/backends.h"
#include "distmetrics/runtime/rank_pool.h"
#include "distmetrics/runtime/task.h"

namespace distmetrics::runtime {
namespace {

using namespace std::chrono_literals;

// What this process "loaded" (set after the first zygote was made), and how often each fork hook
// ran in this process: a forked worker reports its own copies.
int loaded_here = 0;
int hooks_before = 0, hooks_in_parent = 0, hooks_in_child = 0;

DISTMETRICS_TASK(launch_zygote_state) {
  return {{"loaded", loaded_here},
          {"before", hooks_before},
          {"in_parent", hooks_in_parent},
          {"in_child", hooks_in_child},
          {"parent", static_cast<long>(::getppid())}};
}

// What gloo loads into forked workers on this build (Backend::load_for_forked_workers: on a
// build whose gloo is made through torch's Python binding, torch.distributed and Python's fork
// hooks; nothing on one with gloo's headers). Loaded before a test's own zygote state is set,
// as a program's first gloo pool would.
ForkHooks gloo_hooks() {
  const Backend* gloo = find_backend("gloo");
  if (gloo == nullptr || gloo->load_for_forked_workers == nullptr) return {};
  return gloo->load_for_forked_workers().value_or(ForkHooks{});
}

// Counts each hook, around gloo's own (which the workers' gloo needs).
ForkHooks counting_hooks() {
  static ForkHooks inner;
  inner = gloo_hooks();
  ForkHooks hooks;
  hooks.before = [] {
    ++hooks_before;
    if (inner.before) inner.before();
  };
  hooks.in_parent = [] {
    if (inner.in_parent) inner.in_parent();
    ++hooks_in_parent;
  };
  hooks.in_child = [] {
    if (inner.in_child) inner.in_child();
    ++hooks_in_child;
  };
  return hooks;
}

// The workers' reports of one job on a fresh local gloo pool of two workers forked from the zygote.
std::vector<nlohmann::json> state_of_new_workers() {
  PoolOptions options;
  options.world_size = 2;
  options.term_grace = 500ms;
  RankPool pool(options);
  Job job;
  job.id = "test/zygote_state";
  job.task = "launch_zygote_state";
  job.backend = "gloo";
  job.deadline = 20s;
  const JobResult run = pool.run(job);
  EXPECT_EQ(run.status, RunStatus::Completed) << run.diagnosis;
  std::vector<nlohmann::json> states;
  for (const auto& rank : run.ranks) states.push_back(rank.result);
  return states;
}

class WorkerZygote : public testing::Test {
 protected:
  void SetUp() override {
    loaded_here = hooks_before = hooks_in_parent = hooks_in_child = 0;
    start_worker_zygote();
    detail::load_into_worker_zygote("gloo");  // what a first gloo pool does (once per process)
    loaded_here = 7;  // after the zygote was made: its workers do not have it
  }
  void TearDown() override { stop_worker_zygote(); }
};

TEST_F(WorkerZygote, WorkersForkedAfterARestartHaveWhatThisProcessLoadedSince) {
  for (const auto& state : state_of_new_workers()) {
    EXPECT_EQ(state["loaded"], 0) << "forked from the zygote made before `loaded_here` was set";
    EXPECT_EQ(state["parent"], static_cast<long>(::getpid())) << "a worker is re-parented to its supervisor";
  }
  ASSERT_TRUE(restart_worker_zygote(counting_hooks())) << "no thread runs once the pool is gone";
  // Here: the zygote's own fork, bracketed by `before` and `in_parent`.
  EXPECT_EQ(hooks_before, 1);
  EXPECT_EQ(hooks_in_parent, 1);
  EXPECT_EQ(hooks_in_child, 0);
  for (const auto& state : state_of_new_workers()) {
    EXPECT_EQ(state["loaded"], 7) << "forked from a copy of this process made after `loaded_here` was set";
    // In a worker: `in_child` ran once in the zygote and once in the worker. Every fork's
    // `before` is matched by an `in_parent` in the forking process after the copy was taken,
    // except the two forks this worker is a copy from: this process's of the zygote and the
    // zygote's of the worker (a later worker also sees the zygote's earlier forks, both hooks).
    EXPECT_EQ(state["in_child"], 2);
    EXPECT_EQ(state["before"].get<int>() - state["in_parent"].get<int>(), 2);
    EXPECT_EQ(state["parent"], static_cast<long>(::getpid()));
  }
}

TEST_F(WorkerZygote, ARestartWhileAThreadRunsKeepsTheOldZygote) {
  std::mutex mutex;
  std::condition_variable done;
  bool release = false;
  std::thread waiting([&] {
    std::unique_lock<std::mutex> lock(mutex);
    done.wait(lock, [&] { return release; });
  });
  const bool restarted = restart_worker_zygote(counting_hooks());
  {
    std::lock_guard<std::mutex> lock(mutex);
    release = true;
  }
  done.notify_all();
  waiting.join();
  EXPECT_FALSE(restarted) << "fork is unsafe once a thread runs";
  EXPECT_EQ(hooks_before, 0) << "nothing was forked";
  for (const auto& state : state_of_new_workers()) EXPECT_EQ(state["loaded"], 0) << "still the old zygote's workers";
}

#if DISTMETRICS_GLOO_THROUGH_PYTHON
DISTMETRICS_TASK(launch_zygote_python) {
  return {{"python_started_by", detail::embedded_python_started_by_pid()}, {"pid", static_cast<long>(::getpid())}};
}
#endif

// A program's first gloo pool loads what gloo needs in every process into the supervisor and
// restarts the zygote from it: on a build whose gloo is torch's, made through its Python binding,
// the workers start with the interpreter and torch.distributed (~4 s of CPU each otherwise).
TEST(WorkerZygoteLoad, AGlooPoolsFirstStartForksItsWorkersWithWhatGlooLoadsInEveryProcess) {
#if !DISTMETRICS_GLOO_THROUGH_PYTHON
  EXPECT_EQ(find_backend("gloo")->load_for_forked_workers, nullptr) << "gloo.cpp loads nothing per process";
  GTEST_SKIP() << "this build's gloo (gloo.cpp, on gloo's headers) loads nothing per process";
#else
  start_worker_zygote();
  PoolOptions options;
  options.world_size = 2;
  options.term_grace = 500ms;
  RankPool pool(options);
  Job job;
  job.id = "test/zygote_python";
  job.task = "launch_zygote_python";
  job.backend = "gloo";
  job.deadline = 60s;
  const JobResult run = pool.run(job);
  ASSERT_EQ(run.status, RunStatus::Completed) << run.diagnosis;
  for (const auto& rank : run.ranks) {
    EXPECT_NE(rank.result["pid"], static_cast<long>(::getpid()));
    EXPECT_EQ(rank.result["python_started_by"], static_cast<long>(::getpid()))
        << "rank " << rank.rank << "'s interpreter was started by this process, before its worker was forked";
  }
  stop_worker_zygote();
#endif
}

}  // namespace
}  // namespace distmetrics::runtime
