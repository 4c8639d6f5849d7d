// The diagnosis rules on hand-made rank outcomes (no processes), and the splitting of mpirun's
// tagged output per rank.
#include <gtest/gtest.h>

#include "../src/launch/diagnosis.h"
#include "../src/launch/process.h"
#include "distmetrics/runtime/errors.h"

namespace distmetrics::runtime {
namespace {

using namespace std::chrono_literals;

CollectiveRecord record(std::uint64_t seq, const std::string& op, const std::string& dtype = "float64",
                        std::vector<std::int64_t> shape = {4}) {
  return CollectiveRecord{seq, op, dtype, std::move(shape)};
}

std::vector<CollectiveRecord> reduces(int n) {
  std::vector<CollectiveRecord> out;
  for (int i = 0; i < n; ++i) out.push_back(record(static_cast<std::uint64_t>(i), "all_reduce(sum)"));
  return out;
}

RankOutcome rank(int r, RankState state, std::vector<CollectiveRecord> trace, bool blocked_in_last = false) {
  RankOutcome out;
  out.rank = r;
  out.state = state;
  out.trace = std::move(trace);
  if (blocked_in_last && !out.trace.empty()) out.blocked_in = out.trace.back();
  return out;
}

// The diagnosis begins with `expected` (it then says what to do).
testing::AssertionResult begins_with(const std::string& text, const std::string& expected) {
  if (text.rfind(expected, 0) == 0) return testing::AssertionSuccess();
  return testing::AssertionFailure() << "\n  the diagnosis: " << text << "\n  should begin:  " << expected;
}

JobResult diagnosed(std::vector<RankOutcome> ranks, std::vector<std::string> phases = {}) {
  JobResult run;
  run.ranks = std::move(ranks);
  detail::diagnose(run, phases, 3000ms);
  return run;
}

// Two reduces per compute, stamped with the compute (0-based) and script step that issued them.
std::vector<CollectiveRecord> computes(const std::vector<std::pair<int, int>>& compute_and_step) {
  std::vector<CollectiveRecord> out;
  for (const auto& [compute, step] : compute_and_step) {
    for (int i = 0; i < 2; ++i) {
      auto r = record(out.size(), "all_reduce(sum)");
      r.compute = compute;
      r.step = step;
      out.push_back(r);
    }
  }
  return out;
}

TEST(Diagnosis, CollectivesOfDifferentComputesPairedAreADesyncNamedByCompute) {
  // Rank 1 skipped compute 2's collectives: its compute 3 ones went to rank 0's compute 2 ones,
  // and rank 0 waits in compute 3's first collective, which rank 1 never issues.
  const auto run = diagnosed({rank(0, RankState::TimedOut, computes({{0, 1}, {1, 2}, {2, 4}}), true),
                              rank(1, RankState::Finished, computes({{0, 1}, {2, 4}}))});
  EXPECT_EQ(run.status, RunStatus::Hang);
  EXPECT_EQ(run.blamed_rank, 1);
  EXPECT_TRUE(begins_with(run.diagnosis, "rank 1 issued its collectives of compute 3 (script step 5) while rank 0 waited in "
                                         "those of compute 2 (script step 3): from #2 on"));
}

TEST(Diagnosis, AFailedCollectiveAfterALostPeerGetsNoDeviceHint) {
  // Gloo's words when the peer crashed: the cause is the peer, not the tensors or NCCL.
  const CollectiveError lost(0, CollectiveFailure::Failed, record(3, "all_reduce(sum)"),
                             "[../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer [127.0.0.1]:1234");
  EXPECT_EQ(std::string(lost.what()).find("NCCL"), std::string::npos) << lost.what();
  EXPECT_NE(std::string(lost.what()).find("A peer's connection went away"), std::string::npos) << lost.what();
  const CollectiveError reset(0, CollectiveFailure::Failed, record(3, "all_reduce(sum)"), "Connection reset by peer");
  EXPECT_EQ(std::string(reset.what()).find("NCCL"), std::string::npos) << reset.what();
  // Words about devices keep the device hint.
  const CollectiveError cpu(0, CollectiveFailure::Failed, record(3, "all_reduce(sum)"), "Tensors must be CUDA and dense");
  EXPECT_NE(std::string(cpu.what()).find("NCCL needs CUDA tensors"), std::string::npos) << cpu.what();
}

TEST(Diagnosis, EveryRankFinishedIsCompleted) {
  const auto run = diagnosed({rank(0, RankState::Finished, reduces(2)), rank(1, RankState::Finished, reduces(2))});
  EXPECT_EQ(run.status, RunStatus::Completed);
  EXPECT_EQ(run.blamed_rank, -1);
  EXPECT_EQ(run.diagnosis, "");
}

TEST(Diagnosis, ARankThatFinishedEarlyIsBlamedForThePeersThatWait) {
  const auto run = diagnosed({rank(0, RankState::TimedOut, reduces(4), true), rank(1, RankState::Finished, reduces(3)),
                              rank(2, RankState::Stuck, reduces(4), true), rank(3, RankState::Stuck, reduces(4), true)});
  EXPECT_EQ(run.status, RunStatus::Hang);
  EXPECT_EQ(run.blamed_rank, 1);
  EXPECT_TRUE(begins_with(run.diagnosis, "rank 1 never entered all_reduce(sum) #3 (float64 [4]) that ranks 0, 2, 3 were waiting in; rank 1 "
            "finished its task after 3 collectives."));
}

TEST(Diagnosis, ARankThatRaisedAloneIsBlamedWithItsMessage) {
  auto raiser = rank(2, RankState::Raised, {});
  raiser.error_type = "NotComputableError";
  raiser.error = "no samples on rank 2\nmore detail";
  const auto run = diagnosed({rank(0, RankState::Stuck, reduces(1), true), rank(1, RankState::Stuck, reduces(1), true),
                              raiser, rank(3, RankState::Stuck, reduces(1), true)});
  EXPECT_EQ(run.status, RunStatus::Hang);
  EXPECT_EQ(run.blamed_rank, 2);
  EXPECT_TRUE(begins_with(run.diagnosis, "rank 2 raised NotComputableError before all_reduce(sum) #0 (float64 [4]) while ranks 0, 1, 3 waited in "
            "it: no samples on rank 2."));
}

TEST(Diagnosis, DifferentCollectivesAtOneSequenceNumberAreNamedAndTheMinorityBlamed) {
  auto odd = reduces(2);
  odd[1] = record(1, "all_gather(shapes)", "int64", {11});
  const auto run = diagnosed({rank(0, RankState::Stuck, reduces(2), true), rank(1, RankState::Stuck, odd, true),
                              rank(2, RankState::Stuck, reduces(2), true)});
  EXPECT_EQ(run.status, RunStatus::Hang);
  EXPECT_EQ(run.blamed_rank, 1);
  EXPECT_TRUE(begins_with(run.diagnosis, "ranks disagree at #1: ranks 0, 2 issued all_reduce(sum) (float64 [4]), rank 1 issued all_gather(shapes) "
            "(int64 [11])."));
}

TEST(Diagnosis, OneCollectiveWithMismatchedContributionsNamesTheOddRankOut) {
  // Every rank waits in #1 and none is missing, but rank 2 sends int64 [] where its peers send
  // float64 [5] (PyTorch-Ignite 0.4.13's Precision on an empty rank).
  auto peers = reduces(1);
  peers.push_back(record(1, "dist.all_reduce(sum)", "float64", {5}));
  auto odd = reduces(1);
  odd.push_back(record(1, "dist.all_reduce(sum)", "int64", {}));
  const auto run = diagnosed({rank(0, RankState::Stuck, peers, true), rank(1, RankState::TimedOut, peers, true),
                              rank(2, RankState::Stuck, odd, true), rank(3, RankState::Stuck, peers, true)});
  EXPECT_EQ(run.status, RunStatus::Hang);
  EXPECT_EQ(run.blamed_rank, 2);
  EXPECT_TRUE(begins_with(run.diagnosis, "mismatched collective #1: every rank entered it and none is missing, but rank 2 issued "
            "dist.all_reduce(sum) (int64 []) where ranks 0, 1, 3 issued dist.all_reduce(sum) (float64 [5]). Rank 2 is the "
            "odd one out and is blamed."));
  // Two ranks: the one that does not hold rank 0's contribution is the odd one out.
  const auto pair = diagnosed({rank(0, RankState::Stuck, peers, true), rank(1, RankState::Stuck, odd, true)});
  EXPECT_EQ(pair.blamed_rank, 1);
  EXPECT_TRUE(begins_with(pair.diagnosis, "mismatched collective #1: every rank entered it and none is missing, but rank 1 issued "
            "dist.all_reduce(sum) (int64 [])"));
}

// MPI raises MPI_ERR_TRUNCATE on some ranks of a mismatched all_reduce while the odd rank finishes
// (or waits): not an error of the ranks that raised but a desync, a hang blamed on the odd one out,
// whichever ranks happened to raise.
TEST(Diagnosis, MismatchedContributionsThatMakeSomeRanksRaiseAreADesyncBlamingTheOddRank) {
  auto peers = reduces(1);
  peers.push_back(record(1, "all_reduce(sum)", "float64", {4}));
  auto odd = reduces(1);
  odd.push_back(record(1, "all_reduce(sum)", "float64", {5}));
  auto truncated = [&](int r) {
    auto out = rank(r, RankState::Raised, peers, true);
    out.error_type = "CollectiveError";
    out.error = "rank " + std::to_string(r) + ": all_reduce(sum) #1 (float64 [4]) failed: MPI_ERR_TRUNCATE: message truncated";
    return out;
  };
  const auto run = diagnosed({rank(0, RankState::Finished, odd), truncated(1), truncated(2)});
  EXPECT_EQ(run.status, RunStatus::Hang);
  EXPECT_EQ(run.blamed_rank, 0);
  EXPECT_TRUE(begins_with(run.diagnosis, "ranks disagree at #1: ranks 1, 2 issued all_reduce(sum) (float64 [4]), rank 0 "
                                         "issued all_reduce(sum) (float64 [5]). Rank 0 is blamed."));
  EXPECT_NE(run.diagnosis.find(" (then rank 1 raised CollectiveError: rank 1: all_reduce(sum) #1 (float64 [4]) failed: "
                               "MPI_ERR_TRUNCATE: message truncated)"),
            std::string::npos)
      << run.diagnosis;
  // The same collectives everywhere: a rank that raised is an error, as before.
  auto raiser = rank(1, RankState::Raised, reduces(2));
  raiser.error_type = "ValueError";
  EXPECT_EQ(diagnosed({rank(0, RankState::Finished, reduces(2)), raiser}).status, RunStatus::Error);
}

TEST(Diagnosis, GathersOfDifferentLengthsAreNotADisagreement) {
  // all_gather shapes differ in dim 0 by design; rank 1 is simply missing from #1
  auto mine = std::vector<CollectiveRecord>{record(0, "all_gather", "float64", {3})};
  auto theirs = std::vector<CollectiveRecord>{record(0, "all_gather", "float64", {5}), record(1, "barrier", "", {})};
  const auto run = diagnosed({rank(0, RankState::Stuck, theirs, true), rank(1, RankState::Finished, mine)});
  EXPECT_EQ(run.blamed_rank, 1);
  EXPECT_EQ(run.diagnosis.find("rank 1 never entered barrier #1 that rank 0 was waiting in"), 0u) << run.diagnosis;
}

TEST(Diagnosis, ARankBusyOutsideCollectivesOrStillConnectingIsSaidSo) {
  const auto busy = diagnosed({rank(0, RankState::Stuck, reduces(1), true), rank(1, RankState::Stuck, {})}, {"running", "running"});
  EXPECT_EQ(busy.blamed_rank, 1);
  EXPECT_NE(busy.diagnosis.find("rank 1 was still running its task outside any collective after 0 collectives"),
            std::string::npos) << busy.diagnosis;
  const auto connecting = diagnosed({rank(0, RankState::Stuck, {}), rank(1, RankState::Stuck, {})}, {"running", "connecting"});
  EXPECT_EQ(connecting.status, RunStatus::Hang);
  EXPECT_NE(connecting.diagnosis.find("rank 1 was still connecting to its peers"), std::string::npos) << connecting.diagnosis;
}

TEST(Diagnosis, EveryRankInsideTheSameCollectiveIsABackendStall) {
  const auto run = diagnosed({rank(0, RankState::TimedOut, reduces(2), true), rank(1, RankState::TimedOut, reduces(2), true)});
  EXPECT_EQ(run.status, RunStatus::Hang);
  EXPECT_EQ(run.blamed_rank, -1);
  EXPECT_EQ(run.diagnosis,
            "every rank entered all_reduce(sum) #1 (float64 [4]) but it did not complete within 3000 ms: the backend "
            "stalled, or the deadline is too short for this work.");
}

// A collective outside the communicator (a raw c10d call) on ranks 0 and 2 paired with rank 1's
// all_reduce #1: every trace entered #1, rank 1 completed it and finished, the others wait in it.
TEST(Diagnosis, ACollectiveTheTraceCannotSeeIsBlamedFromEachRanksLastPosition) {
  const auto run = diagnosed({rank(0, RankState::TimedOut, reduces(2), true), rank(1, RankState::Finished, reduces(2)),
                              rank(2, RankState::TimedOut, reduces(2), true)},
                             {"script step 2 (compute)", "", "script step 2 (compute)"});
  EXPECT_EQ(run.status, RunStatus::Hang);
  EXPECT_EQ(run.blamed_rank, 1);
  EXPECT_EQ(run.diagnosis,
            "rank 1 completed all_reduce(sum) #1 (float64 [4]) that ranks 0, 2 were still waiting in: it paired with a "
            "collective the communicator's trace does not show (the task's own c10d call, such as a raw Gloo "
            "collective waited without a timeout, issued on some ranks and not on others). Blamed from each rank's "
            "last known position: rank 0 at script step 2 (compute), inside all_reduce(sum) #1 (float64 [4]); rank 1, "
            "last entered all_reduce(sum) #1 (float64 [4]) (finished); rank 2 at script step 2 (compute), inside "
            "all_reduce(sum) #1 (float64 [4]); on the fewer side, rank 1 (skipped a collective the others issued). "
            "Every rank must issue the same collectives in the same order (a rank that returns early, raises alone "
            "or skips a collective leaves its peers waiting).");
  // Two ranks, one on each side: the rank that went on is blamed, as for a skipped collective.
  const auto tie = diagnosed({rank(0, RankState::TimedOut, reduces(2), true), rank(1, RankState::Finished, reduces(2))});
  EXPECT_EQ(tie.blamed_rank, 1);
  EXPECT_NE(tie.diagnosis.find("as many on each side: the ranks that went on are blamed"), std::string::npos) << tie.diagnosis;
  // One rank waiting while two went on: the waiting one issued a collective the others did not.
  const auto extra = diagnosed({rank(0, RankState::Finished, reduces(2)), rank(1, RankState::Finished, reduces(2)),
                                rank(2, RankState::TimedOut, reduces(2), true)});
  EXPECT_EQ(extra.blamed_rank, 2);
  EXPECT_NE(extra.diagnosis.find("rank 2 (issued a collective the others did not)"), std::string::npos) << extra.diagnosis;
}

TEST(Diagnosis, ACrashNamesTheRankHowItDiedAndWhereThePeersWaited) {
  auto dead = rank(1, RankState::Crashed, reduces(1));
  dead.how_died = "killed by signal 11 (SIGSEGV)";
  const auto run = diagnosed({rank(0, RankState::Ended, reduces(2), true), dead, rank(2, RankState::Ended, reduces(2), true)});
  EXPECT_EQ(run.status, RunStatus::Crash);
  EXPECT_EQ(run.blamed_rank, 1);
  EXPECT_EQ(run.diagnosis,
            "rank 1 crashed (killed by signal 11 (SIGSEGV)) after 1 collective, while ranks 0, 2 were waiting in "
            "all_reduce(sum) #1 (float64 [4]). The other ranks were ended.");
}

TEST(Diagnosis, SomeRanksRaisingWhileTheOthersFinishIsAnErrorBlamingTheRaiser) {
  auto raiser = rank(1, RankState::Raised, reduces(2));
  raiser.error_type = "ValueError";
  raiser.error = "bad input";
  const auto run = diagnosed({rank(0, RankState::Finished, reduces(2)), raiser});
  EXPECT_EQ(run.status, RunStatus::Error);
  EXPECT_EQ(run.blamed_rank, 1);
  EXPECT_EQ(run.diagnosis, "rank 1 raised ValueError after 2 collectives (rank 1: bad input); rank 0 finished.");
}

TEST(Diagnosis, RanksListsReadNaturally) {
  EXPECT_EQ(detail::describe_ranks({2}), "rank 2");
  EXPECT_EQ(detail::describe_ranks({0, 1, 3}), "ranks 0, 1, 3");
}

TEST(MpirunOutput, ChunksOfSeveralRanksOnOneLineAreSplitPerRank) {
  const std::string tagged =
      "[1,0]<stdout>:VARIANT {\"a\"[1,1]<stdout>:RANK 1 SAW hang 1\n"
      "[1,0]<stdout>::1}\n"
      "[1,1]<stderr>:rank [1,1]<stderr>:1 aborts\n"
      "Primary job terminated\n";
  EXPECT_EQ(detail::mpirun_rank_output(tagged, 0, false), "VARIANT {\"a\":1}\n");
  EXPECT_EQ(detail::mpirun_rank_output(tagged, 1, false), "RANK 1 SAW hang 1\nrank 1 aborts\n");
  EXPECT_EQ(detail::mpirun_rank_output(tagged, 1, true), "RANK 1 SAW hang 1\nrank 1 aborts\nmpirun: Primary job terminated\n");
  EXPECT_EQ(detail::mpirun_rank_output("[not a tag] text\n", 0, true), "mpirun: [not a tag] text\n");
}

}  // namespace
}  // namespace distmetrics::runtime
