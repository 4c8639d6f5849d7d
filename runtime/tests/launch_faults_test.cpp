// Fault injection (issue 12) on the local rank pool, gloo (workers spawned directly) and mpi
// (workers started by mpirun): every fault of launch_faults.h, in one pool, each with a short
// deadline, on rank 1 (some on rank 0 too; the mismatches and closed descriptors on both). For each: the outcome kind and the rank to blame, a verdict before the deadline plus
// a generous margin (a bound on hanging, not a speed check), the workers of the faulty job
// gone (and whatever the fault forked), and the next job passing.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <set>

#include "distmetrics/build_config.h"
#include "distmetrics/runtime/backends.h"
#include "distmetrics/runtime/launchers.h"
#include "distmetrics/runtime/rank_pool.h"
#include "../src/blame/diagnosis.h"
#include "local_pool_kinds.h"
#include "launch_faults.h"

namespace distmetrics::runtime {
namespace {

using namespace std::chrono_literals;

DISTMETRICS_TASK(fault_inject) { return fault_test::run_fault(ctx); }
DISTMETRICS_TASK(script_fault) { return fault_test::run_script_fault(ctx); }

constexpr auto kDeadline = 2s;
// Deadline, TERM grace, respawn: a verdict later than this is a hang of the supervisor itself.
constexpr auto kVerdictBound = kDeadline + 15s;

bool process_is_gone(long pid) {
  if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return true;
  // A zombie whose parent has not reaped it yet is gone for our purposes only if it is not ours.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(stat, text);
  const auto close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] == 'Z';
}

struct Fault {
  std::string name;
  RunStatus status;
  std::string how_died;  // expected in the blamed rank's how_died, "" for none
  // A hang whose stuck ranks all wait inside a collective: where the backend's hangs end in place
  // (Backend::hangs_end_in_place), the pool keeps its workers. Not a sleep, a loop or a stopped rank.
  bool stuck_in_collectives = false;
};

std::vector<Fault> faults() {
  return {
      {"skip_collective", RunStatus::Hang, "", true},
      {"extra_collective", RunStatus::Hang, "", true},
      {"segfault", RunStatus::Crash, "killed by signal 11 (SIGSEGV)"},
      {"abort", RunStatus::Crash, "killed by signal 6 (SIGABRT)"},
      {"exit3", RunStatus::Crash, "exit status 3"},
      {"sleep", RunStatus::Hang, ""},
      {"loop", RunStatus::Hang, ""},
      {"sigstop", RunStatus::Hang, ""},
      {"fork_crash", RunStatus::Crash, "killed by signal 11 (SIGSEGV)"},
      {"throw", RunStatus::Hang, "", true},
  };
}

bool hangs_end_in_place(const std::string& backend) {
  const Backend* b = find_backend(backend);
  return b != nullptr && b->hangs_end_in_place;
}

// After a crash on a direct launch, the ranks that died are ended alone and started again, and
// the others go on in the same processes (RankPool::ranks_replaced); under mpirun every process
// of the pool is ended. `before`: the ranks' pids before the crash; `with_launcher`: and mpirun's.
void expect_crash_ended(const RankPool& pool, const JobResult& run, const std::vector<long>& before,
                        const std::vector<long>& with_launcher, const std::string& launch) {
  if (find_pool_launch(launch).through_mpirun) {
    for (long pid : with_launcher) EXPECT_TRUE(process_is_gone(pid)) << "worker " << pid << " is still there";
    return;
  }
  const std::vector<long> now = pool.worker_pids();
  ASSERT_EQ(now.size(), before.size());
  for (size_t r = 0; r < now.size(); ++r) {
    if (run.ranks[r].state == RankState::Crashed) {
      EXPECT_TRUE(process_is_gone(before[r])) << "rank " << r << " died; its process " << before[r] << " is still there";
      EXPECT_NE(now[r], before[r]) << "rank " << r << " died: a new process runs it";
    } else {
      EXPECT_EQ(now[r], before[r]) << "rank " << r << " (" << to_string(run.ranks[r].state) << ") survived the crash";
    }
  }
}

using testing_support::PoolKind;

class FaultInjection : public testing::TestWithParam<PoolKind> {
 protected:
  Job request(const std::string& fault, int rank, const std::string& pid_file = "") {
    Job r;
    r.id = "faults/" + fault + "/rank" + std::to_string(rank);
    r.task = "fault_inject";
    r.params = {{"fault", fault}, {"rank", rank}};
    if (!pid_file.empty()) r.params["pid_file"] = pid_file;
    r.backend = GetParam().backend;
    r.deadline = kDeadline;
    return r;
  }

  void expect_completed(RankPool& pool, const std::string& after) {
    const JobResult run = pool.run(request("none", 1));
    ASSERT_EQ(run.status, RunStatus::Completed) << "the job after " << after << ": " << run.diagnosis;
    for (const auto& rank : run.ranks) EXPECT_EQ(rank.result["sum"].get<double>(), 3.0) << "after " << after;
  }
};

TEST_P(FaultInjection, EveryFaultIsReportedAndBlamedInTimeAndThePoolRecovers) {
  PoolOptions options;
  options.world_size = 3;
  options.launch = GetParam().launch;
  options.term_grace = 500ms;
  RankPool pool(options);
  expect_completed(pool, "the start");
  const std::string pid_file = ::testing::TempDir() + "fault_fork_child_" + std::to_string(::getpid());
  for (const Fault& fault : faults()) {
    // Every fault on rank 1; a crash, a hang outside and inside a collective also on rank 0,
    // which the diagnosis must blame as readily.
    const bool also_rank0 = fault.name == "segfault" || fault.name == "loop" || fault.name == "skip_collective" ||
                            fault.name == "fork_crash";
    for (int rank : also_rank0 ? std::vector<int>{1, 0} : std::vector<int>{1}) {
      SCOPED_TRACE(fault.name + " on rank " + std::to_string(rank));
      std::remove(pid_file.c_str());
      const std::vector<long> ranks_before = pool.worker_pids();
      std::vector<long> workers = ranks_before;
      if (pool.launcher_pid() > 0) workers.push_back(pool.launcher_pid());
      const int in_place_before = pool.hangs_ended_in_place();
      const auto started = std::chrono::steady_clock::now();
      const JobResult run = pool.run(request(fault.name, rank, pid_file));
      const auto took = std::chrono::steady_clock::now() - started;
      EXPECT_EQ(to_string(run.status), std::string(to_string(fault.status))) << run.diagnosis;
      EXPECT_EQ(run.blamed_rank, rank) << run.diagnosis;
      EXPECT_LT(took, kVerdictBound) << "the verdict took longer than the deadline plus a generous margin";
      ASSERT_EQ(run.ranks.size(), 3u);
      if (!fault.how_died.empty()) { EXPECT_EQ(run.ranks[rank].how_died, fault.how_died) << run.diagnosis; }
      EXPECT_NE(run.diagnosis.find("rank " + std::to_string(rank)), std::string::npos) << run.diagnosis;
      // A hang whose stuck ranks wait in collectives ends in place where the backend can: the
      // same workers run the next job. Otherwise the ranks of a job that hung or crashed are
      // signalled at once and reaped while the next job runs (their teardown is no variant's):
      // gone by the end of it.
      const bool in_place = fault.stuck_in_collectives && hangs_end_in_place(GetParam().backend);
      EXPECT_EQ(pool.hangs_ended_in_place(), in_place_before + (in_place ? 1 : 0));
      expect_completed(pool, fault.name);
      if (in_place) {
        EXPECT_EQ(pool.worker_pids(), ranks_before);
      } else if (run.status == RunStatus::Crash) {
        expect_crash_ended(pool, run, ranks_before, workers, GetParam().launch);
      } else {
        for (long pid : workers) EXPECT_TRUE(process_is_gone(pid)) << "worker " << pid << " is still there";
      }
      if (fault.name == "fork_crash") {
        long forked = 0;
        std::ifstream(pid_file) >> forked;
        ASSERT_GT(forked, 0) << "the fault did not write its child's pid";
        EXPECT_TRUE(process_is_gone(forked)) << "the process the rank forked (" << forked << ") is still there";
      }
    }
  }
  std::remove(pid_file.c_str());
}

// Mismatched contributions and a rank that closes its descriptors, on 3 ranks so that the odd
// one out is plain. What each does depends on the backend, and each is checked as it is:
// - shape mismatch: gloo leaves the odd rank waiting (the others complete); MPI raises
//   MPI_ERR_TRUNCATE on some ranks while others finish or wait. Either way a hang (a desync),
//   blamed on the odd rank out.
// - dtype mismatch: gloo aborts in the odd rank (a crash after the divergence, SIGABRT); on MPI
//   as the shape mismatch, a hang.
// - closed descriptors: a crash; the rank loses its connection to the supervisor and exits (65,
//   said so), or gloo's own thread finds its socket gone first and aborts (SIGABRT): either way.
struct ContributionFault {
  std::string name;
  std::map<std::string, RunStatus> status;  // by backend
  std::map<std::string, std::set<std::string>> how_died;  // by backend: what the blamed rank may die of
};

std::vector<ContributionFault> contribution_faults() {
  const std::string closed =
      "exit status 65 (its connection to the supervisor closed under it: did the task close descriptors it does not own?)";
  return {
      {"shape_mismatch", {{"gloo", RunStatus::Hang}, {"mpi", RunStatus::Hang}}, {}},
      {"dtype_mismatch", {{"gloo", RunStatus::Crash}, {"mpi", RunStatus::Hang}}, {{"gloo", {"killed by signal 6 (SIGABRT)"}}}},
      // Under mpirun a rank that exits is ended with the job's other processes by mpirun: no status.
      {"close_fds", {{"gloo", RunStatus::Crash}, {"mpi", RunStatus::Crash}}, {{"gloo", {closed, "killed by signal 6 (SIGABRT)"}}}},
  };
}

TEST_P(FaultInjection, MismatchedContributionsAndClosedDescriptorsAreBlamedOnTheRank) {
  PoolOptions options;
  options.world_size = 3;
  options.launch = GetParam().launch;
  options.term_grace = 500ms;
  RankPool pool(options);
  const std::string backend = GetParam().backend;
  for (const auto& fault : contribution_faults()) {
    for (int rank : {1, 0}) {
      SCOPED_TRACE(fault.name + " on rank " + std::to_string(rank));
      std::vector<long> workers = pool.worker_pids();
      if (pool.launcher_pid() > 0) workers.push_back(pool.launcher_pid());
      const int in_place_before = pool.hangs_ended_in_place();
      const auto started = std::chrono::steady_clock::now();
      const JobResult run = pool.run(request(fault.name, rank));
      std::vector<long> ran;  // the processes that ran this job (the pool may have started for it)
      for (const auto& r : run.ranks) ran.push_back(r.pid);
      EXPECT_LT(std::chrono::steady_clock::now() - started, kVerdictBound);
      const RunStatus expected = fault.status.count(backend) ? fault.status.at(backend) : RunStatus::Hang;
      EXPECT_EQ(to_string(run.status), std::string(to_string(expected))) << run.diagnosis;
      EXPECT_EQ(run.blamed_rank, rank) << run.diagnosis;
      ASSERT_EQ(run.ranks.size(), 3u);
      if (fault.how_died.count(backend)) {
        EXPECT_EQ(fault.how_died.at(backend).count(run.ranks[rank].how_died), 1u) << run.ranks[rank].how_died << "\n" << run.diagnosis;
      }
      if (fault.name != "close_fds") {
        EXPECT_NE(run.diagnosis.find("Rank " + std::to_string(rank) + " is"), std::string::npos) << run.diagnosis;
      } else {
        EXPECT_EQ(run.diagnosis.rfind("rank " + std::to_string(rank) + " crashed (", 0), 0u) << run.diagnosis;
      }
      // A hang ends in place where the backend can (the odd rank waits in its collective);
      // otherwise the ranks of a hang or crash are reaped while the next job runs.
      const bool in_place = run.status == RunStatus::Hang && hangs_end_in_place(backend);
      EXPECT_EQ(pool.hangs_ended_in_place(), in_place_before + (in_place ? 1 : 0));
      expect_completed(pool, fault.name);
      if (in_place) {
        EXPECT_EQ(pool.worker_pids(), ran);  // the processes that hung ran the next job
      } else if (run.status == RunStatus::Crash) {
        expect_crash_ended(pool, run, ran, workers, GetParam().launch);
      } else if (run.status == RunStatus::Hang) {
        for (long pid : workers) EXPECT_TRUE(process_is_gone(pid)) << "worker " << pid << " is still there";
      }
    }
  }
}

// Issue 26: faults in a task that declares its script steps, judged per step. An extra barrier
// in compute 2 is blamed on the rank that issued it, however many peers went on to compute 3 (at
// world sizes 2, 3 and 4); a compute 2 that returns a cached value without its all_reduce is
// blamed on the ranks that skipped it, however many they are (1, 2 or 3 of 4). Each: the kind,
// the blamed rank, the words of the verdict, the next job passing.
TEST_P(FaultInjection, AnExtraCollectiveAndACachedComputeAreBlamedFromEachRanksCollectivesPerStep) {
  struct Case {
    int world_size;
    std::string fault;
    std::vector<int> ranks;
  };
  const std::vector<Case> cases = {{2, "extra_barrier", {1}},       {3, "extra_barrier", {0}},
                                   {4, "extra_barrier", {3}},       {4, "cached_compute", {2}},
                                   {4, "cached_compute", {0, 2}},   {4, "cached_compute", {0, 1, 3}}};
  std::unique_ptr<RankPool> pool;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.fault + " on " + detail::describe_ranks(c.ranks) + " of " + std::to_string(c.world_size));
    if (!pool || pool->world_size() != c.world_size) {
      PoolOptions options;
      options.world_size = c.world_size;
      options.launch = GetParam().launch;
      options.term_grace = 500ms;
      pool.reset();
      pool = std::make_unique<RankPool>(options);
    }
    Job job;
    job.id = "faults/" + c.fault;
    job.task = "script_fault";
    job.backend = GetParam().backend;
    job.deadline = 1s;  // the ranks' computes are a few small all_reduces: a hang is plain after 1 s
    job.params = {{"fault", c.fault}, {"ranks", c.ranks}};
    const auto started = std::chrono::steady_clock::now();
    const JobResult run = pool->run(job);
    EXPECT_LT(std::chrono::steady_clock::now() - started, kVerdictBound);
    EXPECT_EQ(to_string(run.status), std::string("hang")) << run.diagnosis;
    EXPECT_EQ(run.blamed_rank, c.ranks.front()) << run.diagnosis;
    std::vector<int> others;
    for (int r = 0; r < c.world_size; ++r)
      if (std::find(c.ranks.begin(), c.ranks.end(), r) == c.ranks.end()) others.push_back(r);
    const std::string them = detail::describe_ranks(c.ranks), peers = detail::describe_ranks(others);
    const std::string blamed = std::string(c.ranks.size() == 1 ? "Rank " : "Ranks ") + them.substr(them.find(' ') + 1) +
                               (c.ranks.size() == 1 ? " is blamed" : " are blamed");
    if (c.fault == "extra_barrier") {
      EXPECT_EQ(run.diagnosis.rfind(them + " issued barrier #2 in compute 2 (script step 4), which " + peers +
                                        " never issued. " + blamed + ": in the other computes where the ranks agree (compute 1 (script step 2))",
                                    0),
                0u) << run.diagnosis;
    } else {
      EXPECT_EQ(run.diagnosis.rfind(them + " returned from compute 2 (script step 4) without its all_reduce(sum) #1 (float64 [4]), "
                                        "which " + peers + " issued. " + blamed + ": in the other computes where the ranks agree "
                                        "(compute 1 (script step 2), compute 3 (script step 6))",
                                    0),
                0u) << run.diagnosis;
      EXPECT_NE(run.diagnosis.find("collectives of compute 3 (script step 6) while " + peers +
                                   " waited in those of compute 2 (script step 4): from #1 on"),
                std::string::npos) << run.diagnosis;
      for (int r : c.ranks) EXPECT_EQ(run.ranks.at(r).state, RankState::Finished) << run.diagnosis;
    }
    job.params = {{"fault", "none"}};
    const JobResult next = pool->run(job);
    EXPECT_EQ(next.status, RunStatus::Completed) << "after " << c.fault << ": " << next.diagnosis;
  }
}

#if DISTMETRICS_HAVE_GLOO
// A raw Gloo collective (the task's own c10d call, no timeout) that one rank skips: the others'
// raw call pairs with the skipper's all_reduce #1, so every trace says "entered #1" and only the
// skipper completed it. Blamed from each rank's last known position, on the fewer side (with 2
// ranks, a tie: the rank that went on), and the diagnosis says how it was decided.
TEST(RawGlooFault, ACollectiveOutsideTheCommunicatorSkippedByOneRankIsBlamedOnIt) {
  for (int world_size : {3, 2}) {
    SCOPED_TRACE("world size " + std::to_string(world_size));
    PoolOptions options;
    options.world_size = world_size;
    options.term_grace = 500ms;
    RankPool pool(options);
    Job job;
    job.task = "fault_inject";
    job.backend = "gloo";
    job.deadline = kDeadline;
    for (int rank : {1, 0}) {
      SCOPED_TRACE("skipped by rank " + std::to_string(rank));
      job.id = "faults/raw_gloo_skip/rank" + std::to_string(rank);
      job.params = {{"fault", "raw_gloo_skip"}, {"rank", rank}};
      const auto started = std::chrono::steady_clock::now();
      const JobResult run = pool.run(job);
      EXPECT_LT(std::chrono::steady_clock::now() - started, kVerdictBound);
      EXPECT_EQ(to_string(run.status), std::string("hang")) << run.diagnosis;
      EXPECT_EQ(run.blamed_rank, rank) << run.diagnosis;
      EXPECT_NE(run.diagnosis.find("Blamed from each rank's last known position"), std::string::npos) << run.diagnosis;
      EXPECT_NE(run.diagnosis.find("a collective the communicator's trace does not show"), std::string::npos) << run.diagnosis;
      EXPECT_EQ(run.ranks.at(rank).state, RankState::Finished) << run.diagnosis;
      job.id = "faults/none";
      job.params = {{"fault", "none"}, {"rank", 1}};
      const JobResult next = pool.run(job);
      EXPECT_EQ(next.status, RunStatus::Completed) << "after raw_gloo_skip: " << next.diagnosis;
    }
  }
}
#endif

INSTANTIATE_TEST_SUITE_P(Backends, FaultInjection, testing::ValuesIn(testing_support::local_pool_kinds()),
                         [](const testing::TestParamInfo<PoolKind>& info) { return info.param.backend; });

}  // namespace
}  // namespace distmetrics::runtime
