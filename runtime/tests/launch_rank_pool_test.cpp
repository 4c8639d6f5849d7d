// The rank pool under hangs, crashes and errors, on gloo (workers spawned directly) and on mpi
// (workers started by mpirun): what it reports, whom it blames, and that it cleans up after
// itself (no orphan processes, no growing descriptors or threads).
#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <gtest/gtest.h>

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "distmetrics/build_config.h"
#include "distmetrics/runtime/backends.h"
#include "distmetrics/runtime/errors.h"
#include "distmetrics/runtime/launchers.h"
#include "distmetrics/runtime/rank_pool.h"
#include "local_pool_kinds.h"
#include "distmetrics/runtime/task.h"
#include "../src/launch/process.h"
#include "../src/launch/wire.h"
#include "../src/launch/worker_args.h"
#if DISTMETRICS_GLOO_THROUGH_PYTHON
#include "../src/comm/gloo_through_python.h"
#endif

namespace distmetrics::runtime {
namespace {

using namespace std::chrono_literals;

// An error type of the kind a metric raises on a rank with no data.
class NotComputableError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

int param(const TaskContext& ctx, const char* name, int fallback = -1) { return ctx.params.value(name, fallback); }

at::Tensor ones4() { return at::ones({4}, at::kDouble); }

// Every rank contributes its rank; returns the sum.
DISTMETRICS_TASK(launch_sum_of_ranks) {
  at::Tensor sum = ctx.comm.all_reduce_copy(at::full({1}, double(ctx.rank), at::kDouble), ReduceOp::Sum);
  return {{"sum", sum.item<double>()}, {"pid", static_cast<long>(::getpid())}};
}

// all_reduce #0 on every rank; #1 on every rank but the skipper.
DISTMETRICS_TASK(launch_skip_second_collective) {
  ctx.comm.all_reduce_copy(ones4(), ReduceOp::Sum);
  if (ctx.rank != param(ctx, "skipper")) ctx.comm.all_reduce_copy(ones4(), ReduceOp::Sum);
  return nlohmann::json::object();
}

// After all_reduce #0, rank `waiter` asks the job's store for a key that no rank writes (what a
// process group made on one rank alone waits for); the others, with `others_wait`, enter
// all_reduce #1, which it never does, else finish. Returns what its store request gave.
DISTMETRICS_TASK(launch_store_wait_alone) {
  ctx.comm.all_reduce_copy(ones4(), ReduceOp::Sum);
  if (ctx.rank == param(ctx, "waiter")) {
    auto erased = ctx.comm.rendezvous_store();
    auto* store = dynamic_cast<c10d::Store*>(erased.get());
    if (store == nullptr) return {{"store", "none"}};
    try {
      store->get("launch/never-written");
      return {{"store", "answered"}};
    } catch (const std::exception& e) {
      return {{"store", std::string(e.what())}};
    }
  }
  if (param(ctx, "others_wait", 1) == 1) ctx.comm.all_reduce_copy(ones4(), ReduceOp::Sum);
  return nlohmann::json::object();
}

// One rank works (sleeps) far longer than the collective timeout before its first collective.
DISTMETRICS_TASK(launch_slow_rank) {
  if (ctx.rank == param(ctx, "slow")) std::this_thread::sleep_for(std::chrono::milliseconds(param(ctx, "sleep_ms")));
  ctx.comm.all_reduce_copy(ones4(), ReduceOp::Sum);
  return nlohmann::json::object();
}

// After all_reduce #0, rank `sleeper` sleeps (outside any collective) while the others enter #1.
DISTMETRICS_TASK(launch_sleep_outside_collectives) {
  ctx.comm.all_reduce_copy(ones4(), ReduceOp::Sum);
  if (ctx.rank == param(ctx, "sleeper")) std::this_thread::sleep_for(std::chrono::milliseconds(param(ctx, "sleep_ms")));
  ctx.comm.all_reduce_copy(ones4(), ReduceOp::Sum);
  return nlohmann::json::object();
}

DISTMETRICS_TASK(launch_abort) {
  ctx.comm.barrier();
  if (ctx.rank == param(ctx, "victim")) {
    std::cerr << "rank " << ctx.rank << " is about to abort" << std::endl;
    std::abort();
  }
  ctx.comm.barrier();
  return nlohmann::json::object();
}

DISTMETRICS_TASK(launch_exit) {
  ctx.comm.barrier();
  if (ctx.rank == param(ctx, "victim")) std::exit(1);
  ctx.comm.barrier();
  return nlohmann::json::object();
}

DISTMETRICS_TASK(launch_raise_alone) {
  if (ctx.rank == param(ctx, "raiser")) throw NotComputableError("no samples on rank " + std::to_string(ctx.rank));
  ctx.comm.all_reduce_copy(ones4(), ReduceOp::Sum);
  return nlohmann::json::object();
}

DISTMETRICS_TASK(launch_every_rank_raises) { throw NotComputableError("no samples anywhere"); }

// The odd rank gathers where the others reduce.
DISTMETRICS_TASK(launch_desync) {
  ctx.comm.barrier();
  if (ctx.rank == param(ctx, "odd")) ctx.comm.all_gather(at::ones({3}, at::kLong));
  else ctx.comm.all_reduce_copy(ones4(), ReduceOp::Sum);
  return nlohmann::json::object();
}

// The odd rank all_reduces 5 elements where its peers all_reduce 4, then every rank barriers.
DISTMETRICS_TASK(launch_shape_mismatch) {
  ctx.comm.all_reduce_copy(at::ones({ctx.rank == param(ctx, "odd") ? 5 : 4}, at::kDouble), ReduceOp::Sum);
  ctx.comm.barrier();
  return nlohmann::json::object();
}

// Far more output than a pipe holds: a worker must never block on its own stderr.
DISTMETRICS_TASK(launch_noisy) {
  const std::string line(1023, 'x');
  for (int i = 0; i < 2048; ++i) std::cerr << line << '\n';
  std::cerr << "last line of rank " << ctx.rank << std::endl;
  ctx.comm.barrier();
  return nlohmann::json::object();
}

// PoolOptions::warm_up: takes a while (as importing a Python source does), and leaves a mark in
// the worker process that later jobs read.
bool warmed_up = false;
DISTMETRICS_TASK(launch_slow_warm_up) {
  std::this_thread::sleep_for(std::chrono::milliseconds(param(ctx, "sleep_ms")));
  if (param(ctx, "fail", 0) != 0) throw std::runtime_error("the source does not import");
  warmed_up = true;
  return nlohmann::json::object();
}
DISTMETRICS_TASK(launch_was_warmed_up) {
  ctx.comm.barrier();
  return {{"warmed_up", warmed_up}, {"pid", static_cast<long>(::getpid())}};
}

bool process_is_gone(long pid) { return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH; }

size_t entries_in(const char* dir) {
  size_t n = 0;
  if (DIR* d = ::opendir(dir)) {
    while (const dirent* e = ::readdir(d)) n += e->d_name[0] != '.';
    ::closedir(d);
  }
  return n;
}

using testing_support::PoolKind;

class RankPoolTest : public testing::TestWithParam<PoolKind> {
 protected:
  RankPool make_pool(int world_size) {
    PoolOptions options;
    options.world_size = world_size;
    options.launch = GetParam().launch;
    options.term_grace = 500ms;
    return RankPool(options);
  }

  Job request(const std::string& task, nlohmann::json params = nlohmann::json::object(),
                         std::chrono::milliseconds deadline = 4s) {
    Job r;
    r.id = "test/" + task;
    r.task = task;
    r.params = std::move(params);
    r.backend = GetParam().backend;
    r.deadline = deadline;
    return r;
  }

  void expect_completed(RankPool& pool, int world_size) {
    const JobResult run = pool.run(request("launch_sum_of_ranks"));
    ASSERT_EQ(run.status, RunStatus::Completed) << run.diagnosis;
    ASSERT_EQ(run.ranks.size(), static_cast<size_t>(world_size));
    for (const auto& rank : run.ranks) {
      EXPECT_EQ(rank.state, RankState::Finished);
      EXPECT_EQ(rank.result["sum"].get<double>(), world_size * (world_size - 1) / 2.0);
      EXPECT_EQ(rank.result["pid"].get<long>(), rank.pid);
    }
  }

  // Every process the pool had (workers, and mpirun) is gone: ended and reaped.
  static void expect_gone(const std::vector<long>& pids) {
    for (long pid : pids) EXPECT_TRUE(process_is_gone(pid)) << "process " << pid << " is still there";
  }

  // After a crash of `dead`: on a direct launch those ranks were ended alone and started again,
  // the others kept (the same processes); under mpirun every process was ended.
  void expect_only_the_dead_replaced(const RankPool& pool, const std::vector<long>& before, const std::vector<int>& dead) {
    if (pool.launcher_pid() > 0 || find_pool_launch(GetParam().launch).through_mpirun) {
      expect_gone(before);
      return;
    }
    const std::vector<long> now = pool.worker_pids();
    ASSERT_EQ(now.size(), before.size());
    for (size_t r = 0; r < now.size(); ++r) {
      if (std::find(dead.begin(), dead.end(), static_cast<int>(r)) != dead.end()) {
        EXPECT_NE(now[r], before[r]) << "rank " << r << " died: a new process runs it";
        EXPECT_TRUE(process_is_gone(before[r])) << "rank " << r << "'s dead process " << before[r];
      } else {
        EXPECT_EQ(now[r], before[r]) << "rank " << r << " survived: the same process goes on";
      }
    }
    EXPECT_EQ(pool.spawn_count(), 1);
    EXPECT_EQ(pool.ranks_replaced(), static_cast<int>(dead.size()));
  }

  static std::vector<long> all_pids(const RankPool& pool) {
    std::vector<long> pids = pool.worker_pids();
    if (pool.launcher_pid() > 0) pids.push_back(pool.launcher_pid());
    return pids;
  }
};

TEST_P(RankPoolTest, ASkippedCollectiveIsAHangBlamedOnTheSkipperAndThePoolRecovers) {
  RankPool pool = make_pool(3);
  expect_completed(pool, 3);
  const auto before = all_pids(pool);

  const JobResult run = pool.run(request("launch_skip_second_collective", {{"skipper", 1}}));
  EXPECT_EQ(run.status, RunStatus::Hang);
  EXPECT_EQ(run.blamed_rank, 1);
  EXPECT_NE(run.diagnosis.find("rank 1 never entered all_reduce(sum) #1 (float64 [4]) that ranks 0, 2 were waiting in"),
            std::string::npos) << run.diagnosis;
  EXPECT_NE(run.diagnosis.find("rank 1 finished its task after 1 collective"), std::string::npos) << run.diagnosis;
  ASSERT_EQ(run.ranks.size(), 3u);
  EXPECT_EQ(run.ranks[1].state, RankState::Finished);
  for (int r : {0, 2}) {
    ASSERT_TRUE(run.ranks[r].blocked_in.has_value());
    EXPECT_EQ(run.ranks[r].blocked_in->seq, 1u);
    EXPECT_EQ(run.ranks[r].blocked_in->op, "all_reduce(sum)");
  }
  expect_completed(pool, 3);
  if (find_backend(GetParam().backend)->hangs_end_in_place) {
    // The stuck ranks' collective ended in place: the same workers ran the next job.
    EXPECT_EQ(all_pids(pool), before);
    EXPECT_EQ(pool.spawn_count(), 1);
    EXPECT_EQ(pool.hangs_ended_in_place(), 1);
  } else {
    expect_gone(before);  // a fresh pool: the old one ended at once, gone by the end of the next job
    EXPECT_EQ(pool.spawn_count(), 2);
    EXPECT_EQ(pool.hangs_ended_in_place(), 0);
  }
}

// Where the backend's hangs end in place (gloo), the pool keeps its workers across every kind of
// hang whose stuck ranks wait in a collective or on the store, and the verdict is the one the
// ranks' places gave: a skipped collective, a rank waiting on the store while its peers wait in
// a collective, every rank stuck. The next job runs on the same processes and gets right sums.
TEST_P(RankPoolTest, AHangEndsInPlaceAndTheSameWorkersRunTheNextJob) {
  if (!find_backend(GetParam().backend)->hangs_end_in_place) GTEST_SKIP() << GetParam().backend << "'s hangs end its workers";
  RankPool pool = make_pool(3);
  expect_completed(pool, 3);
  const auto before = all_pids(pool);

  JobResult run = pool.run(request("launch_skip_second_collective", {{"skipper", 0}}));
  ASSERT_EQ(run.status, RunStatus::Hang) << run.diagnosis;
  EXPECT_EQ(run.blamed_rank, 0) << run.diagnosis;
  EXPECT_EQ(run.phases.count("end_workers"), 1u);
  expect_completed(pool, 3);

  Job store_wait = request("launch_store_wait_alone", {{"waiter", 2}}, 60s);
  store_wait.op_timeout = 40s;
  run = pool.run(store_wait);
  ASSERT_EQ(run.status, RunStatus::Hang) << run.diagnosis;
  EXPECT_EQ(run.blamed_rank, 2) << run.diagnosis;
  EXPECT_TRUE(run.ranks[2].blocked_on_store);
  for (int r : {0, 1}) EXPECT_EQ(run.ranks[r].state, RankState::Stuck) << "rank " << r << ": " << run.diagnosis;
  EXPECT_LT(run.seconds, 10.0) << "neither the 40 s collective timeout nor the 60 s deadline was waited for";
  expect_completed(pool, 3);

  EXPECT_EQ(all_pids(pool), before);
  EXPECT_EQ(pool.spawn_count(), 1);
  EXPECT_EQ(pool.hangs_ended_in_place(), 2);
}

// A rank that hangs outside any collective and store wait (a sleep) cannot be reached by ending
// collectives: the pool ends its workers as after any hang, and the next job gets fresh ones.
TEST_P(RankPoolTest, AHangOutsideTheCollectivesEndsTheWorkers) {
  RankPool pool = make_pool(2);
  expect_completed(pool, 2);
  const auto before = all_pids(pool);
  const JobResult run = pool.run(request("launch_sleep_outside_collectives", {{"sleeper", 1}, {"sleep_ms", 60000}}, 2s));
  ASSERT_EQ(run.status, RunStatus::Hang) << run.diagnosis;
  EXPECT_EQ(run.blamed_rank, 1) << run.diagnosis;
  expect_completed(pool, 2);
  expect_gone(before);
  EXPECT_EQ(pool.spawn_count(), 2);
  EXPECT_EQ(pool.hangs_ended_in_place(), 0);
}

// Hangs ended in place leave nothing behind in the workers (the job's connections, threads) or
// in the supervisor.
TEST_P(RankPoolTest, TwentyHangsEndedInPlaceDoNotGrowDescriptorsOrThreads) {
  if (!find_backend(GetParam().backend)->hangs_end_in_place) GTEST_SKIP() << GetParam().backend << "'s hangs end its workers";
  RankPool pool = make_pool(2);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(pool.run(request("launch_skip_second_collective", {{"skipper", 1}})).status, RunStatus::Hang);
    expect_completed(pool, 2);
  }
  const auto pids = pool.worker_pids();
  // Read once the workers are at rest: a worker tears the last job's group down (its threads, its
  // connections) after it is released, while pool.run() has already returned.
  auto counts = [&](const char* what) {
    auto read = [&] {
      std::vector<size_t> n{entries_in(("/proc/self/" + std::string(what)).c_str())};
      for (long pid : pids) n.push_back(entries_in(("/proc/" + std::to_string(pid) + "/" + what).c_str()));
      return n;
    };
    auto last = read();
    for (int i = 0; i < 100; ++i) {
      std::this_thread::sleep_for(20ms);
      auto now = read();
      if (now == last) return now;
      last = now;
    }
    return last;
  };
  const auto fds = counts("fd");
  const auto threads = counts("task");
  for (int i = 0; i < 20; ++i) {
    const JobResult run = pool.run(request("launch_skip_second_collective", {{"skipper", i % 2}}));
    ASSERT_EQ(run.status, RunStatus::Hang) << "hang " << i << ": " << run.diagnosis;
    expect_completed(pool, 2);
  }
  EXPECT_EQ(pool.worker_pids(), pids);
  EXPECT_EQ(pool.hangs_ended_in_place(), 23);
  EXPECT_EQ(counts("fd"), fds);
  EXPECT_EQ(counts("task"), threads);
}

// Where a job's time went (runtime/phases.h): the supervisor's phases in the result, each rank's
// own with its outcome; the start only in the job that started the pool, the wait after the
// ranks' last move and the ending of the workers only in one that hung. Which phases, not how long.
TEST_P(RankPoolTest, AJobSaysWhereItsTimeWentByPhase) {
  RankPool pool = make_pool(2);
  const JobResult first = pool.run(request("launch_sum_of_ranks"));
  ASSERT_EQ(first.status, RunStatus::Completed) << first.diagnosis;
  EXPECT_EQ(first.phases.count("pool_start"), 1u);
  EXPECT_EQ(first.phases.count("ranks"), 1u);
  EXPECT_EQ(first.phases.count("hang_wait"), 0u) << "every rank answered";
  for (const auto& rank : first.ranks) {
    EXPECT_EQ(rank.phases.count("group"), 1u) << "rank " << rank.rank;
    EXPECT_EQ(rank.phases.count("sync"), 1u) << "rank " << rank.rank;
  }
  const JobResult second = pool.run(request("launch_sum_of_ranks"));
  EXPECT_EQ(second.phases.count("pool_start"), 0u) << "the pool was up";
  const JobResult hung = pool.run(request("launch_skip_second_collective", {{"skipper", 1}}));
  ASSERT_EQ(hung.status, RunStatus::Hang) << hung.diagnosis;
  EXPECT_EQ(hung.phases.count("end_workers"), 1u);
  EXPECT_EQ(hung.ranks[1].phases.count("group"), 1u) << "the rank that finished sent its own";
  EXPECT_TRUE(hung.ranks[0].phases.empty()) << "the stuck rank sent nothing";
}

TEST_P(RankPoolTest, TheWarmUpRunsOnEveryStartAndIsNotChargedToTheFirstJob) {
  PoolOptions options;
  options.world_size = 2;
  options.launch = GetParam().launch;
  options.term_grace = 500ms;
  Job warm;
  warm.task = "launch_slow_warm_up";
  warm.params = {{"sleep_ms", 1500}};
  options.warm_up = warm;
  RankPool pool(options);
  // The first job's deadline (1 s) is shorter than the warm-up (1.5 s): it still completes.
  JobResult run = pool.run(request("launch_was_warmed_up", {}, 1s));
  ASSERT_EQ(run.status, RunStatus::Completed) << run.diagnosis;
  for (const auto& rank : run.ranks) EXPECT_TRUE(rank.result["warmed_up"].get<bool>()) << "rank " << rank.rank;
  EXPECT_GE(run.start_seconds, 1.5);
  // A hang outside the collectives restarts the pool: the new workers are warmed up again
  // before the next job.
  EXPECT_EQ(pool.run(request("launch_sleep_outside_collectives", {{"sleeper", 1}, {"sleep_ms", 60000}}, 2s)).status,
            RunStatus::Hang);
  run = pool.run(request("launch_was_warmed_up", {}, 1s));
  ASSERT_EQ(run.status, RunStatus::Completed) << run.diagnosis;
  for (const auto& rank : run.ranks) EXPECT_TRUE(rank.result["warmed_up"].get<bool>()) << "rank " << rank.rank;
  EXPECT_EQ(pool.spawn_count(), 2);
}

TEST_P(RankPoolTest, AWarmUpThatFailsIsTheStartsFailureAndSaysSo) {
  PoolOptions options;
  options.world_size = 2;
  options.launch = GetParam().launch;
  options.term_grace = 500ms;
  Job warm;
  warm.task = "launch_slow_warm_up";
  warm.params = {{"sleep_ms", 0}, {"fail", 1}};
  options.warm_up = warm;
  RankPool pool(options);
  const JobResult run = pool.run(request("launch_was_warmed_up", {}, 2s));
  EXPECT_NE(run.status, RunStatus::Completed);
  EXPECT_NE(run.diagnosis.find("warm-up job (launch_slow_warm_up, run once when the pool starts) did not complete"),
            std::string::npos) << run.diagnosis;
  EXPECT_NE(run.diagnosis.find("the source does not import"), std::string::npos) << run.diagnosis;
  EXPECT_TRUE(pool.worker_pids().empty());  // down again: the next job starts it afresh
}

TEST_P(RankPoolTest, ARankTooSlowForTheCollectiveTimeoutIsBlamed) {
  RankPool pool = make_pool(3);
  Job r = request("launch_slow_rank", {{"slow", 2}, {"sleep_ms", 20000}}, 3s);
  r.op_timeout = 1500ms;
  const JobResult run = pool.run(r);
  EXPECT_EQ(run.status, RunStatus::Hang);
  EXPECT_EQ(run.blamed_rank, 2);
  EXPECT_EQ(run.ranks[0].state, RankState::TimedOut);
  EXPECT_NE(run.ranks[0].error.find("rank 0: all_reduce(sum) #0 (float64 [4]) timed out"), std::string::npos)
      << run.ranks[0].error;
  EXPECT_NE(run.diagnosis.find("rank 2 never entered all_reduce(sum) #0"), std::string::npos) << run.diagnosis;
  EXPECT_NE(run.diagnosis.find("rank 2 was still running its task outside any collective"), std::string::npos)
      << run.diagnosis;
  expect_completed(pool, 3);
}

TEST_P(RankPoolTest, AnAbortIsACrashWithTheSignalAndOnlyTheDeadRankIsReplaced) {
  RankPool pool = make_pool(3);
  expect_completed(pool, 3);
  const auto before = all_pids(pool);
  const JobResult run = pool.run(request("launch_abort", {{"victim", 1}}));
  EXPECT_EQ(run.status, RunStatus::Crash);
  EXPECT_EQ(run.blamed_rank, 1);
  EXPECT_EQ(run.ranks[1].state, RankState::Crashed);
  EXPECT_EQ(run.ranks[1].how_died, "killed by signal 6 (SIGABRT)");
  EXPECT_NE(run.ranks[1].log_tail.find("rank 1 is about to abort"), std::string::npos) << run.ranks[1].log_tail;
  EXPECT_NE(run.diagnosis.find("rank 1 crashed (killed by signal 6 (SIGABRT)) after 1 collective"), std::string::npos)
      << run.diagnosis;
  for (int r : {0, 2}) EXPECT_NE(run.ranks[r].state, RankState::Crashed);
  expect_completed(pool, 3);
  expect_only_the_dead_replaced(pool, before, {1});
}

TEST_P(RankPoolTest, AnExitIsACrashWithTheExitStatus) {
  RankPool pool = make_pool(2);
  expect_completed(pool, 2);
  const auto before = all_pids(pool);
  const JobResult run = pool.run(request("launch_exit", {{"victim", 0}}));
  EXPECT_EQ(run.status, RunStatus::Crash);
  EXPECT_EQ(run.blamed_rank, 0);
  EXPECT_EQ(run.ranks[0].how_died, "exit status 1");
  EXPECT_NE(run.ranks[1].state, RankState::Crashed);
  expect_completed(pool, 2);
  expect_only_the_dead_replaced(pool, before, {0});
}

TEST_P(RankPoolTest, ARankThatRaisesAloneIsBlamedForTheHang) {
  RankPool pool = make_pool(4);
  const JobResult run = pool.run(request("launch_raise_alone", {{"raiser", 2}}));
  EXPECT_EQ(run.status, RunStatus::Hang);
  EXPECT_EQ(run.blamed_rank, 2);
  EXPECT_EQ(run.ranks[2].state, RankState::Raised);
  EXPECT_EQ(run.ranks[2].error_type, "NotComputableError");
  EXPECT_NE(run.diagnosis.find("rank 2 raised NotComputableError before all_reduce(sum) #0 (float64 [4]) while "
                               "ranks 0, 1, 3 waited in it: no samples on rank 2"),
            std::string::npos) << run.diagnosis;
  expect_completed(pool, 4);
}

TEST_P(RankPoolTest, EveryRankRaisingIsAnErrorAndKeepsThePool) {
  RankPool pool = make_pool(2);
  expect_completed(pool, 2);
  const auto before = pool.worker_pids();
  const JobResult run = pool.run(request("launch_every_rank_raises"));
  EXPECT_EQ(run.status, RunStatus::Error);
  EXPECT_EQ(run.blamed_rank, -1);
  EXPECT_EQ(run.diagnosis, "every rank raised NotComputableError; rank 0: no samples anywhere");
  EXPECT_EQ(pool.worker_pids(), before);  // nothing hung: the same workers go on
  expect_completed(pool, 2);
  EXPECT_EQ(pool.spawn_count(), 1);
}

TEST_P(RankPoolTest, RanksIssuingDifferentCollectivesAreNamed) {
  RankPool pool = make_pool(3);
  const JobResult run = pool.run(request("launch_desync", {{"odd", 0}}));
  EXPECT_NE(run.status, RunStatus::Completed);
  EXPECT_NE(run.diagnosis.find("ranks disagree at #1: ranks 1, 2 issued all_reduce(sum) (float64 [4]), rank 0 issued "
                               "all_gather(shapes)"),
            std::string::npos) << run.diagnosis;
  EXPECT_EQ(run.blamed_rank, 0);
  expect_completed(pool, 3);
}

// Ranks seen in one collective with contributions that do not match can never complete it: the
// pool ends the job on that sight, not when the backend's own timeout (here 40 s) or the
// deadline would, so every rank still inside a collective is stuck, none timed out.
TEST_P(RankPoolTest, AMismatchedCollectiveEndsTheVariantWithoutWaitingForTheBackendsTimeout) {
  RankPool pool = make_pool(3);
  Job job = request("launch_shape_mismatch", {{"odd", 1}}, 60s);
  job.op_timeout = 40s;
  const JobResult run = pool.run(job);
  EXPECT_EQ(run.status, RunStatus::Hang) << run.diagnosis;
  EXPECT_EQ(run.blamed_rank, 1) << run.diagnosis;
  EXPECT_NE(run.diagnosis.find("(float64 [5])"), std::string::npos) << run.diagnosis;
  for (const auto& rank : run.ranks) EXPECT_NE(rank.state, RankState::TimedOut) << "rank " << rank.rank << ": " << run.diagnosis;
  expect_completed(pool, 3);
}

// A hang decided when it is certain: ranks 0 and 2 wait in a collective that rank 1 never
// enters, since it waits on the store for a key none of them will write. Neither the
// collectives' timeout nor the store's is waited for: the ranks are stuck, not timed out.
TEST_P(RankPoolTest, RanksWaitingInACollectiveAndOnTheStoreWhereNoneCanGoOnAreAHang) {
  if (GetParam().backend != "gloo") GTEST_SKIP() << GetParam().backend << " makes no group over the job's store";
  RankPool pool = make_pool(3);
  Job job = request("launch_store_wait_alone", {{"waiter", 1}}, 60s);
  job.op_timeout = 40s;
  const JobResult run = pool.run(job);
  EXPECT_EQ(run.status, RunStatus::Hang) << run.diagnosis;
  EXPECT_EQ(run.blamed_rank, 1) << run.diagnosis;
  EXPECT_NE(run.diagnosis.find("rank 1 was waiting on the store after 1 collective"), std::string::npos) << run.diagnosis;
  EXPECT_TRUE(run.ranks[1].blocked_on_store);
  for (int r : {0, 2}) {
    EXPECT_EQ(run.ranks[r].state, RankState::Stuck) << "rank " << r << ": " << run.diagnosis;
    ASSERT_TRUE(run.ranks[r].blocked_in.has_value());
    EXPECT_EQ(run.ranks[r].blocked_in->seq, 1u);
  }
  expect_completed(pool, 3);
}

// Rank 1 waits on the store after every other rank finished: nobody is left to write its key,
// and its wait ends at once, with the error its timeout would give later; it goes on.
TEST_P(RankPoolTest, AStoreWaitNoRankIsLeftToAnswerEndsAtOnce) {
  if (GetParam().backend != "gloo") GTEST_SKIP() << GetParam().backend << " makes no group over the job's store";
  RankPool pool = make_pool(3);
  const JobResult run = pool.run(request("launch_store_wait_alone", {{"waiter", 1}, {"others_wait", 0}}, 60s));
  ASSERT_EQ(run.status, RunStatus::Completed) << run.diagnosis;
  const std::string said = run.ranks[1].result.value("store", "");
  EXPECT_NE(said.find("no rank is left to write the keys it waits for"), std::string::npos) << said;
}

TEST_P(RankPoolTest, AnUnknownTaskIsAnErrorThatSaysWhatIsRegistered) {
  RankPool pool = make_pool(2);
  const JobResult run = pool.run(request("no_such_task"));
  EXPECT_EQ(run.status, RunStatus::Error);
  EXPECT_NE(run.ranks[0].error.find("no task named 'no_such_task'"), std::string::npos) << run.ranks[0].error;
  EXPECT_NE(run.ranks[0].error.find("launch_sum_of_ranks"), std::string::npos);
}

TEST_P(RankPoolTest, LotsOfOutputNeverBlocksAWorker) {
  RankPool pool = make_pool(2);
  const JobResult run = pool.run(request("launch_noisy"));
  EXPECT_EQ(run.status, RunStatus::Completed) << run.diagnosis;
}

TEST_P(RankPoolTest, AHundredVariantsDoNotGrowDescriptorsOrThreads) {
  RankPool pool = make_pool(2);
  expect_completed(pool, 2);
  expect_completed(pool, 2);
  const size_t fds = entries_in("/proc/self/fd");
  const size_t threads = entries_in("/proc/self/task");
  for (int i = 0; i < 100; ++i) {
    const JobResult run = pool.run(request("launch_sum_of_ranks"));
    ASSERT_EQ(run.status, RunStatus::Completed) << "job " << i << ": " << run.diagnosis;
  }
  EXPECT_EQ(entries_in("/proc/self/fd"), fds);
  EXPECT_EQ(entries_in("/proc/self/task"), threads);
  // Respawns after crashes leave nothing behind either: the dead rank's alone on a direct
  // launch, the pool's under mpirun.
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(pool.run(request("launch_exit", {{"victim", 1}})).status, RunStatus::Crash);
    expect_completed(pool, 2);
  }
  if (!find_pool_launch(GetParam().launch).through_mpirun) {
    EXPECT_EQ(pool.spawn_count(), 1);
    EXPECT_EQ(pool.ranks_replaced(), 3);
  } else {
    EXPECT_EQ(pool.spawn_count(), 4);
  }
  EXPECT_EQ(entries_in("/proc/self/fd"), fds);
  EXPECT_EQ(entries_in("/proc/self/task"), threads);
}

TEST_P(RankPoolTest, DestroyingThePoolEndsEveryWorker) {
  std::vector<long> pids;
  {
    RankPool pool = make_pool(3);
    expect_completed(pool, 3);
    pids = all_pids(pool);
  }
  ASSERT_FALSE(pids.empty());
  expect_gone(pids);
}

INSTANTIATE_TEST_SUITE_P(Backends, RankPoolTest, testing::ValuesIn(testing_support::local_pool_kinds()),
                         [](const testing::TestParamInfo<PoolKind>& info) { return info.param.backend; });

TEST(RankPool, AWorldSizeBeyondTheMachinesLimitIsRefused) {
  const int most = max_local_world_size();
  EXPECT_GE(most, kFewestLocalRanks);
  EXPECT_LE(most, kMostLocalRanks);
  PoolOptions options;
  options.world_size = most + 1;
  try {
    RankPool pool(options);
    ADD_FAILURE() << "a pool of " << most + 1 << " ranks was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("world size " + std::to_string(most + 1) +
                                         " is more ranks than a local pool starts on this machine (at most " +
                                         std::to_string(most) + ": 4 per core, one per 512 MiB of memory"),
              std::string::npos) << e.what();
  }
}

// A worker that exits while starting: the diagnosis gives its exit status and its last words.
TEST(RankPool, AWorkerThatExitsWhileStartingIsNamedWithWhatItSaid) {
  PoolOptions options;
  options.world_size = 2;
  options.worker_command = {"/bin/sh", "-c", "echo 'not a distmetrics worker: no such option' >&2; exit 3"};
  RankPool pool(options);
  Job r;
  r.id = "test/bad-worker";
  r.task = "launch_sum_of_ranks";
  r.backend = "gloo";
  r.deadline = 10s;
  const JobResult run = pool.run(r);
  ASSERT_EQ(run.status, RunStatus::Crash) << run.diagnosis;
  EXPECT_NE(run.diagnosis.find(" exited while starting (exit status 3); it said: not a distmetrics worker: no such option"),
            std::string::npos) << run.diagnosis;
}

#if DISTMETRICS_HAVE_GLOO
// A memory limit too small for the backend's threads: every rank says so, naming itself and the
// limit, instead of a bare "Resource temporarily unavailable". Workers exec'd: whether one forked
// from this test's zygote (this process's mappings) gets as far as its communicator under this
// limit varies from run to run here (then the worker says it could not start within the limit).
TEST(RankPool, AMemoryLimitTooSmallForTheCommunicatorIsNamedOnEveryRank) {
  if (DISTMETRICS_TORCH_HAS_CUDA) {
    // libtorch_cuda alone maps more than 300 MiB of address space before main: the worker cannot
    // even connect (which is why default_rank_memory_bytes() sets no limit on such a build).
    GTEST_SKIP() << "a CUDA LibTorch maps more than the 300 MiB limit of this test before main";
  }
  PoolOptions options;
  options.world_size = 2;
  options.worker_command = {detail::current_executable()};  // exec'd, not forked from the zygote
  options.rank_memory_bytes = std::uint64_t{300} << 20;
  RankPool pool(options);
  Job r;
  r.id = "test/small-memory";
  r.task = "launch_sum_of_ranks";
  r.backend = "gloo";
  r.deadline = 10s;
  const JobResult run = pool.run(r);
  ASSERT_EQ(run.status, RunStatus::Error) << run.diagnosis;
  for (int rank : {0, 1}) {
    EXPECT_EQ(run.ranks[rank].error_type, "RankMemoryExceeded") << run.ranks[rank].error;
    EXPECT_EQ(run.ranks[rank].error.rfind("rank " + std::to_string(rank) +
                                          " could not build the gloo communicator within its memory limit of 0.3 GiB", 0),
              0u) << run.ranks[rank].error;
  }
}
#endif

#if DISTMETRICS_GLOO_THROUGH_PYTHON
// What this worker process had done through torch's Python binding when this job ran.
DISTMETRICS_TASK(launch_gloo_through_python_counts) {
  ctx.comm.barrier();
  return {{"groups_made", detail::gloo_groups_made_through_python()},
          {"warm_ups_run", detail::gloo_warm_ups_run()},
          {"pid", static_cast<long>(::getpid())}};
}
#endif

// On a build whose gloo goes through torch's Python binding (the pip torch 2.x), each worker
// imports torch.distributed once: the gloo descriptor names a warm-up, which the pool runs on
// every (re)start before the first gloo job, so that job's group is not the process's first (the
// import and first group were paid under the start's deadline). gloo.cpp loads nothing: no warm-up.
TEST(RankPool, GlooThroughPythonWarmsUpEachStartBeforeTheFirstGlooJob) {
  const Backend* gloo = find_backend("gloo");
  ASSERT_NE(gloo, nullptr);
#if !DISTMETRICS_GLOO_THROUGH_PYTHON
  EXPECT_EQ(gloo->pool_warm_up_task, "");
  GTEST_SKIP() << "this build makes gloo groups from gloo's headers (gloo.cpp): the backend needs no warm-up";
#else
  EXPECT_EQ(gloo->pool_warm_up_task, detail::kGlooThroughPythonWarmUpTask);
  PoolOptions options;
  options.world_size = 2;
  options.term_grace = 500ms;
  // What is checked is where the import happens, not how fast: on 2 loaded cores at nice 19 the
  // import alone has taken over 60 s of wall time (4 s of CPU).
  options.startup_deadline = 300s;
  RankPool pool(options);
  Job r;
  r.task = "launch_gloo_through_python_counts";
  r.backend = "gloo";
  r.deadline = 60s;
  auto expect_counts = [&](const JobResult& run, int groups_made, int warm_ups) {
    ASSERT_EQ(run.status, RunStatus::Completed) << run.diagnosis;
    ASSERT_EQ(run.ranks.size(), 2u);
    for (const auto& rank : run.ranks) {
      EXPECT_EQ(rank.result["groups_made"].get<int>(), groups_made) << "rank " << rank.rank;
      EXPECT_EQ(rank.result["warm_ups_run"].get<int>(), warm_ups) << "rank " << rank.rank;
      EXPECT_EQ(rank.result["pid"].get<long>(), rank.pid);
    }
  };
  r.id = "test/first";
  const JobResult first = pool.run(r);
  expect_counts(first, 2, 1);  // the warm-up's group, then this job's
  EXPECT_GT(first.start_seconds, 0.0);
  r.id = "test/second";
  const JobResult second = pool.run(r);
  expect_counts(second, 3, 1);  // no second warm-up in the same workers
  EXPECT_EQ(second.start_seconds, 0.0);
  for (size_t i = 0; i < 2; ++i) EXPECT_EQ(first.ranks[i].pid, second.ranks[i].pid);

  // A hang outside the collectives restarts the pool: the new workers warm up again.
  Job hang;
  hang.id = "test/hang";
  hang.task = "launch_sleep_outside_collectives";
  hang.params = {{"sleeper", 1}, {"sleep_ms", 60000}};
  hang.backend = "gloo";
  hang.deadline = 2s;
  EXPECT_EQ(pool.run(hang).status, RunStatus::Hang);
  r.id = "test/after-restart";
  const JobResult after = pool.run(r);
  expect_counts(after, 2, 1);
  EXPECT_EQ(pool.spawn_count(), 2);
#endif
}

TEST(RankPool, AWorkerThatCannotStartIsReportedNotHung) {
  PoolOptions options;
  options.world_size = 2;
  options.worker_command = {"/bin/false"};
  options.startup_deadline = 5s;
  RankPool pool(options);
  Job r;
  r.id = "startup";
  r.task = "launch_sum_of_ranks";
  r.deadline = 2s;
  const JobResult run = pool.run(r);
  EXPECT_EQ(run.status, RunStatus::Crash);
  EXPECT_NE(run.diagnosis.find("the rank pool could not start: rank"), std::string::npos) << run.diagnosis;
  EXPECT_NE(run.diagnosis.find("exited while starting (exit status 1)"), std::string::npos) << run.diagnosis;
}

// A worker started for a supervisor that has ended or given up on the start (its socket still
// there, nothing listening on it, as after a SIGKILL): it leaves at once, saying so, instead of
// retrying its connection for the minute a slow start is allowed (an orphan, seen once).
TEST(RankPool, AWorkerWhoseSupervisorNoLongerListensLeavesAtOnce) {
  char folder_template[] = "/tmp/distmetrics-orphan-XXXXXX";
  ASSERT_NE(::mkdtemp(folder_template), nullptr);
  const std::string folder = folder_template;
  const std::string socket = folder + "/pool.sock";
  ::close(detail::listen_on_unix_path(socket));  // the file stays; nothing listens on it any more
  detail::WorkerArgs args;
  args.socket_path = socket;
  args.rank = 0;
  args.world_size = 2;
  detail::OutputCapture log("orphan-worker");
  detail::SpawnSpec spec;
  spec.argv = {detail::current_executable()};
  for (const auto& flag : detail::worker_flags(args)) spec.argv.push_back(flag);
  spec.output_fd = log.fd();
  const pid_t worker = detail::spawn_process(spec);
  // Far below the connect budget (60 s) the old retry loop waited out.
  const auto status = detail::reap_child(worker, Deadline::after(20s));
  if (!status) detail::end_processes({worker}, 1s);
  ::unlink(socket.c_str());
  ::rmdir(folder.c_str());
  ASSERT_TRUE(status.has_value()) << "the worker was still retrying after 20 s: " << log.tail();
  EXPECT_EQ(detail::describe_wait_status(*status), "exit status " + std::to_string(detail::kWorkerExitBadStart));
  EXPECT_NE(log.tail().find("nothing listens on " + socket + " any more (Connection refused)"), std::string::npos)
      << log.tail();
}

TEST(RankPool, RequestsThatCannotRunAreRefused) {
  PoolOptions options;
  options.world_size = 2;
  RankPool pool(options);
  Job r;
  r.id = "bad";
  r.task = "launch_sum_of_ranks";
  r.backend = "mpi";
  EXPECT_THROW(pool.run(r), ConfigError);  // mpi needs an mpirun pool
  r.backend = "nccl";
  EXPECT_THROW(pool.run(r), ConfigError);  // no NCCL (or too few GPUs) here
  r.backend = "gloo";
  r.task = "";
  EXPECT_THROW(pool.run(r), ConfigError);
  EXPECT_EQ(pool.spawn_count(), 0);
  PoolOptions bad = options;
  bad.launch = "ssh";
  EXPECT_THROW(RankPool{bad}, ConfigError);
}

}  // namespace
}  // namespace distmetrics::runtime
