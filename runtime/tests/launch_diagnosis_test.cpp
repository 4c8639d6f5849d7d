// The diagnosis rules on hand-made rank outcomes (no processes), and the splitting of mpirun's
// tagged output per rank.
#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>
#include <set>
#include <stdexcept>

#include "../src/blame/diagnosis.h"
#include "../src/launch/process.h"
#include "../src/launch/protocol.h"
#include "distmetrics/runtime/blame.h"
#include "distmetrics/runtime/desync.h"
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
  EXPECT_TRUE(begins_with(run.diagnosis, "rank 1 returned from compute 2 (script step 3) without its all_reduce(sum) #2 "
                                         "(float64 [4]), which rank 0 issued. Rank 1 is blamed: in the other computes where the "
                                         "ranks agree (compute 1 (script step 2), compute 3 (script "
                                         "step 5)), every rank issued what rank 0 issued here (all_reduce(sum) (float64 [4]), "
                                         "...), not what rank 1 did."));
  EXPECT_NE(run.diagnosis.find("Then rank 1 issued its collectives of compute 3 (script step 5) while rank 0 waited in "
                               "those of compute 2 (script step 3): from #2 on, collectives of different computes were paired."),
            std::string::npos) << run.diagnosis;
  const auto deviation = find_step_deviation(run.ranks);
  ASSERT_TRUE(deviation.has_value());
  EXPECT_EQ(deviation->step, 2);
  EXPECT_EQ(deviation->compute, 1);
  EXPECT_EQ(deviation->blamed, std::vector<int>{1});
}

// One compute (and script step) per entry: the records that rank issues in it, "ar" an
// all_reduce(sum) of float64 [4], "barrier" a barrier; numbered in order.
std::vector<CollectiveRecord> script(const std::vector<std::pair<int, std::vector<std::string>>>& computes_issued) {
  std::vector<CollectiveRecord> out;
  for (const auto& [compute, ops] : computes_issued) {
    for (const auto& op : ops) {
      auto r = op == "barrier" ? record(out.size(), "barrier", "", {}) : record(out.size(), "all_reduce(sum)");
      r.compute = compute;
      r.step = 2 * compute + 1;  // update, compute, update, compute, ...
      out.push_back(r);
    }
  }
  return out;
}

// Issue 26: the last rank issues a barrier after compute 2's all_reduce, which its peers never
// issue; they go on to compute 3 and wait in its all_reduce. The rank that issued the extra one
// is blamed at every world size (2 included: compute 1 shows what a compute issues), not the
// ranks that moved on.
TEST(Diagnosis, AnExtraCollectiveInAComputeIsBlamedOnTheRankThatIssuedItAtEveryWorldSize) {
  for (int world_size : {2, 3, 4}) {
    SCOPED_TRACE("world size " + std::to_string(world_size));
    std::vector<RankOutcome> ranks;
    std::vector<int> others;
    for (int r = 0; r + 1 < world_size; ++r) {
      ranks.push_back(rank(r, RankState::TimedOut, script({{0, {"ar"}}, {1, {"ar"}}, {2, {"ar"}}}), true));
      others.push_back(r);
    }
    const int extra = world_size - 1;
    ranks.push_back(rank(extra, RankState::TimedOut, script({{0, {"ar"}}, {1, {"ar", "barrier"}}}), true));
    const auto run = diagnosed(ranks);
    EXPECT_EQ(run.status, RunStatus::Hang);
    EXPECT_EQ(run.blamed_rank, extra) << run.diagnosis;
    EXPECT_TRUE(begins_with(run.diagnosis, "rank " + std::to_string(extra) + " issued barrier #2 in compute 2 (script step 4), "
                                           "which " + detail::describe_ranks(others) + " never issued. Rank " +
                                           std::to_string(extra) + " is blamed: in the other computes where the ranks "
                                           "agree (compute 1 (script step 2)), every rank issued what " +
                                           detail::describe_ranks(others) + " issued here (all_reduce(sum) (float64 [4])), "
                                           "not what rank " + std::to_string(extra) + " did."));
    EXPECT_NE(run.diagnosis.find("Now " + detail::describe_ranks(others) + (others.size() == 1 ? " waits" : " wait") +
                                 " in all_reduce(sum) #2 (float64 [4]) of compute 3 (script step 6); rank " +
                                 std::to_string(extra) + " waits in barrier #2 of compute 2 (script step 4)."),
              std::string::npos) << run.diagnosis;
    const auto deviation = find_step_deviation(run.ranks);
    ASSERT_TRUE(deviation.has_value());
    EXPECT_EQ(deviation->blamed, std::vector<int>{extra});
    EXPECT_EQ(deviation->more, std::vector<int>{extra});
    EXPECT_EQ(deviation->fewer, others);
    EXPECT_EQ(deviation->parted.seq, 2u);
    EXPECT_EQ(deviation->parted.op, "barrier");
  }
}

// Issue 26 (and 22): a compute cache that returns early on ranks without a new update. The
// ranks that skipped compute 2's all_reduce are blamed, however many they are (1, 2 or 3 of 4):
// their compute 3 all_reduce paired with the others' compute 2 one, they finished, and the
// others wait in compute 3's.
TEST(Diagnosis, ACachedComputeIsBlamedOnTheRanksThatSkippedItsCollectivesHoweverManyTheyAre) {
  for (const std::vector<int>& skippers : {std::vector<int>{2}, std::vector<int>{0, 2}, std::vector<int>{0, 1, 3}}) {
    SCOPED_TRACE("skipped by " + detail::describe_ranks(skippers));
    std::vector<RankOutcome> ranks;
    std::vector<int> issuers;
    for (int r = 0; r < 4; ++r) {
      if (std::count(skippers.begin(), skippers.end(), r)) {
        ranks.push_back(rank(r, RankState::Finished, script({{0, {"ar"}}, {2, {"ar"}}})));
      } else {
        ranks.push_back(rank(r, RankState::TimedOut, script({{0, {"ar"}}, {1, {"ar"}}, {2, {"ar"}}}), true));
        issuers.push_back(r);
      }
    }
    const auto run = diagnosed(ranks);
    EXPECT_EQ(run.status, RunStatus::Hang);
    EXPECT_EQ(run.blamed_rank, skippers.front()) << run.diagnosis;
    const std::string them = detail::describe_ranks(skippers), others = detail::describe_ranks(issuers);
    EXPECT_TRUE(begins_with(run.diagnosis, them + " returned from compute 2 (script step 4) without its all_reduce(sum) #1 "
                                           "(float64 [4]), which " + others + " issued. " + (skippers.size() == 1 ? "Rank 2 is" : std::string(skippers.size() == 2 ? "Ranks 0, 2 are" : "Ranks 0, 1, 3 are")) +
                                           " blamed: in the other computes where the ranks agree (compute 1 "
                                           "(script step 2), compute 3 (script step 6)), every rank issued what " + others +
                                           " issued here (all_reduce(sum) (float64 [4])), not what " + them + " did."));
    EXPECT_NE(run.diagnosis.find("Then " + them + " issued " + (skippers.size() == 1 ? "its" : "their") +
                                 " collectives of compute 3 (script step 6) while " + others + " waited in those of "
                                 "compute 2 (script step 4): from #1 on"),
              std::string::npos) << run.diagnosis;
    const auto deviation = find_step_deviation(run.ranks);
    ASSERT_TRUE(deviation.has_value());
    EXPECT_EQ(deviation->blamed, skippers);
    EXPECT_EQ(deviation->fewer, skippers);
    EXPECT_EQ(deviation->more, issuers);
  }
}

// When the ranks part in their first compute, nothing tells which sequence is the metric's: the
// fewer ranks are blamed, and with as many on each side neither (both named, and who did more).
TEST(Diagnosis, RanksThatPartInTheirOnlyComputeBlameTheFewerOrWithAnEvenSplitNeither) {
  const auto odd = diagnosed({rank(0, RankState::TimedOut, script({{0, {"ar", "ar"}}}), true),
                              rank(1, RankState::Finished, script({{0, {"ar"}}})),
                              rank(2, RankState::TimedOut, script({{0, {"ar", "ar"}}}), true)});
  EXPECT_EQ(odd.blamed_rank, 1);
  EXPECT_TRUE(begins_with(odd.diagnosis, "rank 1 returned from compute 1 (script step 2) without its all_reduce(sum) #1 "
                                         "(float64 [4]), which ranks 0, 2 wait in. Rank 1 is blamed: the fewer ranks (1 "
                                         "against 2); no other compute where the ranks agree tells which sequence is the "
                                         "metric's."));
  for (int world_size : {2, 4}) {
    SCOPED_TRACE("world size " + std::to_string(world_size));
    std::vector<RankOutcome> ranks;
    std::vector<int> more, fewer;
    for (int r = 0; r < world_size; ++r) {
      if (r % 2 == 0) {
        ranks.push_back(rank(r, RankState::TimedOut, script({{0, {"ar", "ar"}}}), true));
        more.push_back(r);
      } else {
        ranks.push_back(rank(r, RankState::Finished, script({{0, {"ar"}}})));
        fewer.push_back(r);
      }
    }
    const auto even = diagnosed(ranks);
    EXPECT_EQ(even.status, RunStatus::Hang);
    EXPECT_EQ(even.blamed_rank, -1) << even.diagnosis;
    EXPECT_TRUE(begins_with(even.diagnosis, "ranks split evenly over compute 1 (script step 2): " + detail::describe_ranks(more) +
                                            " issued all_reduce(sum) #1 (float64 [4]) in compute 1 (script step 2), which " +
                                            detail::describe_ranks(fewer) + " never issued (" + detail::describe_ranks(more) +
                                            " did more: 2 collectives in it against 1). With as many ranks on each side and "
                                            "no other compute where the ranks agree to tell which sequence is the metric's, "
                                            "neither side is blamed"));
    const auto deviation = find_step_deviation(even.ranks);
    ASSERT_TRUE(deviation.has_value());
    EXPECT_TRUE(deviation->blamed.empty());
    EXPECT_EQ(deviation->more, more);
    EXPECT_EQ(deviation->fewer, fewer);
  }
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

// A host lost under mpirun (issue 36): rank 2's process is gone with it, and rank 1's task died of
// SIGPIPE writing to rank 2's closed connection inside the same collective. Rank 2 is the cause.
TEST(Diagnosis, ARankKilledBySigpipeAfterAPeerVanishedIsNotBlamedForIt) {
  auto pipe = rank(1, RankState::Crashed, reduces(22), true);
  pipe.how_died = "killed by signal 13 (SIGPIPE)";
  pipe.died_of_signal = SIGPIPE;
  auto gone = rank(2, RankState::Crashed, reduces(22), true);
  gone.how_died = "its process is gone: its connection to the rendezvous store closed (host h3)";
  const auto run = diagnosed({rank(0, RankState::Stuck, reduces(22), true), pipe, gone});
  EXPECT_EQ(run.status, RunStatus::Crash);
  EXPECT_EQ(run.blamed_rank, 2);
  EXPECT_EQ(run.diagnosis,
            "rank 2 crashed (its process is gone: its connection to the rendezvous store closed (host h3)) inside "
            "all_reduce(sum) #21 (float64 [4]); rank 1 crashed too (killed by signal 13 (SIGPIPE): it wrote to rank 2's "
            "closed connection), while rank 0 was waiting in all_reduce(sum) #21 (float64 [4]). The other ranks were ended.");
  // Alone, a SIGPIPE is still that rank's crash.
  auto only = rank(1, RankState::Crashed, reduces(1));
  only.how_died = "killed by signal 13 (SIGPIPE)";
  only.died_of_signal = SIGPIPE;
  EXPECT_EQ(diagnosed({rank(0, RankState::Ended, reduces(2), true), only}).blamed_rank, 1);
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

TEST(Diagnosis, ARankWhosePeerLeftWithoutTheCollectiveIsAHangBlamingThePeer) {
  // torch 2.x gloo: rank 1 finished after 3 collectives and its group's connections closed, so
  // rank 0, inside #3, raised "Connection closed by peer" instead of waiting (1.13's hang).
  const CollectiveError lost(0, CollectiveFailure::Failed, record(3, "all_reduce(sum)"),
                             "[gloo/transport/tcp/pair.cc:561] Connection closed by peer [127.0.0.1]:6883");
  auto waiter = rank(0, RankState::Raised, reduces(4), true);
  waiter.error_type = "CollectiveError";
  waiter.error = lost.what();
  waiter.peer_left = lost.peer_left();  // as the task runner sets it
  const auto run = diagnosed({waiter, rank(1, RankState::Finished, reduces(3))});
  EXPECT_EQ(run.status, RunStatus::Hang);
  EXPECT_EQ(run.blamed_rank, 1);
  EXPECT_TRUE(begins_with(run.diagnosis, "rank 1 never entered all_reduce(sum) #3 (float64 [4]) that rank 0 was waiting in; rank 1 "
            "finished its task after 3 collectives."));
  EXPECT_NE(run.diagnosis.find("(then rank 0's all_reduce(sum) #3 (float64 [4]) failed: the peer's connection closed"), std::string::npos)
      << run.diagnosis;
  // A peer that entered the collective and left it is no such case: the failure is the error.
  const auto entered = diagnosed({waiter, rank(1, RankState::Finished, reduces(4))});
  EXPECT_EQ(entered.status, RunStatus::Error);
}

// A collective that failed because its peer's connection closed says so in a typed flag, set
// where the backend's error becomes a CollectiveError, that travels in the rank's report.
TEST(PeerLeft, TheCommunicatorFlagsAFailureOnALostConnectionAndTheFlagTravelsInTheReport) {
  const CollectiveError lost(0, CollectiveFailure::Failed, record(3, "all_reduce(sum)"), "Connection reset by peer");
  EXPECT_TRUE(lost.peer_left());
  EXPECT_NE(std::string(lost.what()).find(kPeerLeftAdvice), std::string::npos) << lost.what();
  EXPECT_FALSE(CollectiveError(0, CollectiveFailure::Failed, record(3, "all_reduce(sum)"), "NCCL needs CUDA tensors").peer_left());
  // A timeout is never a peer that left, whatever its words.
  EXPECT_FALSE(CollectiveError(0, CollectiveFailure::Timeout, record(3, "all_reduce(sum)"), "peer never came").peer_left());

  RankOutcome waiter = rank(0, RankState::Raised, reduces(4), true);
  waiter.peer_left = true;
  EXPECT_TRUE(detail::outcome_from_json(detail::to_json(waiter)).peer_left);
  EXPECT_FALSE(detail::outcome_from_json(detail::to_json(rank(1, RankState::Finished, reduces(3)))).peer_left);
}

// The diagnosis decides from the flag, not from the error's words: a rank flagged as failing on
// a lost connection in a collective its peer never entered is the skipped collective's hang; the
// same words without the flag are an ordinary error.
TEST(PeerLeft, TheDiagnosisOfAWaiterWhosePeerLeftReadsTheFlag) {
  RankOutcome waiter = rank(0, RankState::Raised, reduces(4), true);
  waiter.error_type = "CollectiveError";
  waiter.error = "rank 0: all_reduce(sum) #4 failed: the backend gave up";
  waiter.peer_left = true;
  const auto hang = diagnosed({waiter, rank(1, RankState::Finished, reduces(3))});
  EXPECT_EQ(hang.status, RunStatus::Hang);
  EXPECT_EQ(hang.blamed_rank, 1);
  EXPECT_NE(hang.diagnosis.find("(then rank 0's all_reduce(sum) #3 (float64 [4]) failed: the peer's connection closed as it "
                                "left: rank 0: all_reduce(sum) #4 failed: the backend gave up)"),
            std::string::npos)
      << hang.diagnosis;

  waiter.peer_left = false;
  waiter.error = std::string("rank 0: all_reduce(sum) #4 failed: connection reset. ") + kPeerLeftAdvice;
  const auto error = diagnosed({waiter, rank(1, RankState::Finished, reduces(3))});
  EXPECT_EQ(error.status, RunStatus::Error);
  EXPECT_EQ(error.blamed_rank, 0);
}

TEST(Diagnosis, RanksListsReadNaturally) {
  EXPECT_EQ(detail::describe_ranks({2}), "rank 2");
  EXPECT_EQ(detail::describe_ranks({0, 1, 3}), "ranks 0, 1, 3");
}

// --- The blame module's rules (blame.h) ---------------------------------------------------------

TEST(BlameRules, TheTableNamesEveryRuleOnceAndItsNamesReadBack) {
  std::set<BlameRule> seen;
  std::set<std::string> names;
  for (const auto& info : blame_rules()) {
    EXPECT_TRUE(seen.insert(info.rule).second) << info.name;
    EXPECT_TRUE(names.insert(info.name).second) << info.name;
    EXPECT_EQ(std::string(to_string(info.rule)), info.name);
    EXPECT_EQ(blame_rule_from_string(info.name), info.rule);
    EXPECT_NE(std::string(info.when), "");
    EXPECT_NE(std::string(info.blamed), "");
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(BlameRule::AbandonedWait));  // every rule but None
  EXPECT_EQ(seen.count(BlameRule::None), 0u);
  EXPECT_EQ(std::string(to_string(BlameRule::None)), "none");
  EXPECT_THROW(blame_rule_from_string("the loudest rank"), std::invalid_argument);
}

TEST(BlameRules, EachDiagnosisSaysWhichRuleBlamed) {
  auto raiser = rank(1, RankState::Raised, reduces(1));
  raiser.error_type = "ValueError";
  raiser.error = "bad input";
  auto other = raiser;
  other.rank = 0;
  const auto first_raiser = diagnosed({rank(0, RankState::Finished, reduces(1)), raiser});
  EXPECT_EQ(first_raiser.status, RunStatus::Error);
  EXPECT_EQ(first_raiser.blame_rule, BlameRule::FirstRaiser);
  EXPECT_EQ(first_raiser.blamed_rank, 1);
  const auto every_rank = diagnosed({other, raiser});
  EXPECT_EQ(every_rank.blame_rule, BlameRule::EveryRankRaised);
  EXPECT_EQ(every_rank.blamed_rank, -1);
  const auto never_entered = diagnosed({rank(0, RankState::TimedOut, reduces(4), true), rank(1, RankState::Finished, reduces(3)),
                                        rank(2, RankState::Stuck, reduces(4), true)});
  EXPECT_EQ(never_entered.blame_rule, BlameRule::NeverEntered);
  EXPECT_EQ(never_entered.blamed_rank, 1);
  auto crashed = rank(2, RankState::Crashed, reduces(1));
  crashed.how_died = "killed by signal 6 (SIGABRT)";
  const auto crash = diagnosed({rank(0, RankState::Ended, reduces(2), true), rank(1, RankState::Ended, reduces(2), true), crashed});
  EXPECT_EQ(crash.blame_rule, BlameRule::CrashFirst);
  EXPECT_EQ(crash.blamed_rank, 2);
  const auto stall = diagnosed({rank(0, RankState::TimedOut, reduces(2), true), rank(1, RankState::TimedOut, reduces(2), true)});
  EXPECT_EQ(stall.blame_rule, BlameRule::BackendStalled);
  EXPECT_EQ(stall.blamed_rank, -1);
  const auto completed = diagnosed({rank(0, RankState::Finished, reduces(2)), rank(1, RankState::Finished, reduces(2))});
  EXPECT_EQ(completed.blame_rule, BlameRule::None);
  EXPECT_EQ(completed.diagnosis_once_told, "");
  // The rule travels with the report a peer runner's rank 0 sends.
  const auto read_back = detail::job_result_from_json(never_entered.to_json());
  EXPECT_EQ(read_back.blame_rule, BlameRule::NeverEntered);
  EXPECT_EQ(read_back.blamed_rank, 1);
}

// An open blame (an even split) keeps a second reading of the diagnosis: the same paragraph
// without the sentence that says why no side is blamed, and nothing else changed.
TEST(BlameRules, AnEvenSplitsDiagnosisOnceToldLeavesOutOnlyWhyNoSideIsBlamed) {
  std::vector<RankOutcome> ranks = {rank(0, RankState::TimedOut, script({{0, {"ar", "ar"}}}), true),
                                    rank(1, RankState::Finished, script({{0, {"ar"}}}))};
  const auto even = diagnosed(ranks);
  EXPECT_EQ(even.blame_rule, BlameRule::StepEvenSplit);
  const auto split = find_step_deviation(even.ranks);
  ASSERT_TRUE(split);
  std::string expected = even.diagnosis;
  const std::string sentence = " " + even_split_unblamed_text(*split);
  const auto at = expected.find(sentence);
  ASSERT_NE(at, std::string::npos) << even.diagnosis;
  expected.erase(at, sentence.size());
  EXPECT_EQ(even.diagnosis_once_told, expected);
  EXPECT_EQ(detail::job_result_from_json(even.to_json()).diagnosis_once_told, expected);
  // A crash after the split (a third rank died before any collective): the same, the crash named.
  ranks.push_back(rank(2, RankState::Crashed, {}));
  ranks.back().how_died = "killed by signal 9 (SIGKILL)";
  const auto crash = diagnosed(ranks);
  EXPECT_EQ(crash.blame_rule, BlameRule::CrashFirst);
  EXPECT_EQ(crash.blamed_rank, 2);
  std::string crash_expected = crash.diagnosis;
  ASSERT_NE(crash_expected.find(sentence), std::string::npos) << crash.diagnosis;
  crash_expected.erase(crash_expected.find(sentence), sentence.size());
  EXPECT_EQ(crash.diagnosis_once_told, crash_expected);
  // A runner's notes go in both readings.
  JobResult noted = even;
  detail::prefix_diagnosis(noted, "before: ");
  detail::add_diagnosis_line(noted, "after.");
  EXPECT_EQ(noted.diagnosis, "before: " + even.diagnosis + "\nafter.");
  EXPECT_EQ(noted.diagnosis_once_told, "before: " + expected + "\nafter.");
  // A blame the rules decided has no second reading.
  EXPECT_EQ(diagnosed({rank(0, RankState::TimedOut, reduces(4), true), rank(1, RankState::Finished, reduces(3)),
                       rank(2, RankState::Stuck, reduces(4), true)})
                .diagnosis_once_told,
            "");
}

TEST(BlameRules, ABaselineTellsAnEvenSplitApartOnlyWhenItShowsOneSide) {
  const std::vector<RankOutcome> ranks = {rank(0, RankState::TimedOut, script({{0, {"ar", "ar"}}}), true),
                                          rank(1, RankState::Finished, script({{0, {"ar"}}}))};
  const auto split = find_step_deviation(ranks);
  ASSERT_TRUE(split && split->blamed.empty());
  const auto one_reduce = script({{0, {"ar"}}});
  const auto told = tell_even_split(ranks, *split, one_reduce);
  ASSERT_TRUE(told);
  EXPECT_TRUE(told->fewer_is_right);
  EXPECT_EQ(told->blamed, std::vector<int>{0});
  EXPECT_EQ(told->spared, std::vector<int>{1});
  const auto two = tell_even_split(ranks, *split, script({{0, {"ar", "ar"}}}));
  ASSERT_TRUE(two);
  EXPECT_FALSE(two->fewer_is_right);
  EXPECT_EQ(two->blamed, std::vector<int>{1});
  // A baseline that is neither side's sequence (a gather) tells nothing.
  auto gather = one_reduce;
  gather[0].op = "all_gather";
  EXPECT_FALSE(tell_even_split(ranks, *split, gather));
}

TEST(BlameRules, TheHarnessEvidenceOfARaiseAndOfAnAbandonedWaitIsJudgedHere) {
  const std::vector<RankOutcome> ranks = {rank(0, RankState::Finished, reduces(1)), rank(1, RankState::Stuck, reduces(2), true)};
  const auto alone = find_raised_alone(ranks, {true, false});
  ASSERT_TRUE(alone);
  EXPECT_EQ(alone->blamed(), 0);
  EXPECT_EQ(alone->waiters, std::vector<int>{1});
  EXPECT_FALSE(find_raised_alone(ranks, {false, false}));
  using How = ScriptEnd::How;
  // The raise before the first timeout is the cause; the later one is not.
  const auto waited = find_abandoned_wait_blame({{0, How::WaitTimedOut, 10.0}, {1, How::Raised, 4.0}, {2, How::Raised, 12.0}});
  ASSERT_TRUE(waited);
  EXPECT_EQ(waited->blamed, 1);
  EXPECT_TRUE(waited->blamed_raised);
  EXPECT_EQ(waited->waiting, std::vector<int>{0});
  EXPECT_DOUBLE_EQ(waited->first_timeout, 10.0);
  const auto left = find_abandoned_wait_blame({{0, How::WaitTimedOut, 10.0}, {1, How::Finished, 0.0}});
  ASSERT_TRUE(left);
  EXPECT_EQ(left->blamed, 1);
  EXPECT_FALSE(left->blamed_raised);
  EXPECT_FALSE(find_abandoned_wait_blame({{0, How::WaitTimedOut, 10.0}, {1, How::WaitTimedOut, 11.0}}));
  auto past = rank(2, RankState::Raised, {});
  past.error_type = kRankMemoryExceeded;
  auto also = past;
  also.rank = 3;
  EXPECT_EQ(ranks_past_their_memory({rank(0, RankState::Stuck, {}), rank(1, RankState::Raised, {}), past, also}),
            (std::vector<int>{2, 3}));
  EXPECT_TRUE(ranks_past_their_memory(ranks).empty());
}

// Seen on torch 1.13 (torcheval MeanSquaredError, an empty rank's 0-d float16 state against its
// peer's int64 size): rank 0's all_gather #0 read rank 1's bytes as a size and its allocation of
// 541557860210573312 bytes failed, or rank 1 aborted first, whichever came first. The memory
// failure inside the mismatched collective is the mismatch's: rank 1 (the odd one) is blamed
// either way, so the outcome no longer moves with the race. A rank past its memory that the
// mismatch blames, or that failed outside the mismatched collective, is still named.
TEST(BlameRules, AnAllocationThatFailedInsideAMismatchedCollectiveIsTheMismatchs) {
  auto past = rank(0, RankState::Raised, {record(0, "all_gather", "int64", {1})});
  past.error_type = kRankMemoryExceeded;
  const auto odd = rank(1, RankState::Crashed, {record(0, "all_gather", "float32", {})}, true);
  const auto mismatch = find_collective_mismatch({past, odd});
  ASSERT_TRUE(mismatch);
  EXPECT_EQ(mismatch->blamed(), 1);
  EXPECT_TRUE(ranks_past_their_memory({past, odd}).empty());
  // Past its memory after the mismatched collective: its own.
  auto later = past;
  later.trace.push_back(record(1, "all_reduce(sum)"));
  EXPECT_EQ(ranks_past_their_memory({later, odd}), std::vector<int>{0});
  // Past its memory where every rank issued the same: its own.
  auto same = odd;
  same.trace = past.trace;
  EXPECT_EQ(ranks_past_their_memory({past, same}), std::vector<int>{0});
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
