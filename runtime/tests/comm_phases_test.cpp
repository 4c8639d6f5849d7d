// The rank's phase clock (runtime/phases.h): each moment belongs to the innermost phase, a
// collective inside a phase is "sync", and nothing is measured outside a job. No timing is
// asserted: only which phases were measured, and that they account for the job's time once.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <thread>

#include "distmetrics/runtime/comm.h"
#include "distmetrics/runtime/job.h"
#include "distmetrics/runtime/phases.h"
#include "../src/launch/protocol.h"

namespace distmetrics::runtime {
namespace {

double sum(const PhaseSeconds& phases) {
  double total = 0;
  for (const auto& [name, seconds] : phases) total += seconds;
  return total;
}

TEST(RankPhaseClock, EachMomentGoesToTheInnermostPhaseACollectiveIsSync) {
  auto comm = make_single_process_communicator();
  const auto before = std::chrono::steady_clock::now();
  RankPhaseClock::start("rank_other");
  {
    PhaseScope update("update");
    at::Tensor t = at::ones({4}, at::kDouble);
    comm->all_reduce_copy(t, ReduceOp::Sum);  // its time is "sync", not "update"
    {
      PhaseScope digest("digest");
    }
  }
  const PhaseSeconds phases = RankPhaseClock::take();
  const double outside = seconds_between(before, std::chrono::steady_clock::now());
  for (const char* name : {"rank_other", "update", "sync", "digest"}) EXPECT_EQ(phases.count(name), 1u) << name;
  for (const auto& [name, seconds] : phases) EXPECT_GE(seconds, 0) << name;
  EXPECT_LE(sum(phases), outside) << "every moment counted once";
}

TEST(RankPhaseClock, NothingIsMeasuredOutsideAJobNorByAScopeThatOutlivedIt) {
  { PhaseScope stray("update"); }
  EXPECT_TRUE(RankPhaseClock::take().empty()) << "no job runs";
  RankPhaseClock::start("rank_other");
  auto stale = std::make_unique<PhaseScope>("build");
  (void)RankPhaseClock::take();
  RankPhaseClock::start("rank_other");
  stale.reset();  // left after its job ended: changes nothing in the next one
  {
    PhaseScope data("data");
  }
  const PhaseSeconds phases = RankPhaseClock::take();
  EXPECT_EQ(phases.count("build"), 0u);
  EXPECT_EQ(phases.count("data"), 1u);
}

TEST(RankPhaseClock, AnotherThreadsScopesAreNotThisJobs) {
  RankPhaseClock::start("rank_other");
  std::thread other([] { PhaseScope elsewhere("compute"); });
  other.join();
  EXPECT_EQ(RankPhaseClock::take().count("compute"), 0u);
}

TEST(RankPhaseClock, TheOutcomesPhasesTravelWithIt) {
  RankOutcome outcome;
  outcome.phases = {{"group", 0.25}, {"sync", 0.5}};
  EXPECT_EQ(detail::outcome_from_json(detail::to_json(outcome)).phases, outcome.phases);
  JobResult run;
  run.phases = {{"ranks", 1.5}};
  run.ranks.push_back(outcome);
  const JobResult back = detail::job_result_from_json(run.to_json());
  EXPECT_EQ(back.phases, run.phases);
  EXPECT_EQ(back.ranks.front().phases, outcome.phases);
}

TEST(RankPhaseClock, ThePhaseTableNamesEachPhaseOnce) {
  std::set<std::string> names;
  for (const auto& phase : phase_table()) EXPECT_TRUE(names.insert(phase.name).second) << phase.name;
  for (const char* measured : {"group", "sync", "update", "compute", "ranks", "hang_wait", "pool_start"})
    EXPECT_EQ(names.count(measured), 1u) << measured;
}

}  // namespace
}  // namespace distmetrics::runtime
