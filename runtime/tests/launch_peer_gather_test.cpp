// When rank 0 of a peer launch stops waiting and what it says of the ranks that sent nothing
// (peer_gather.h), on fixed inputs: what each rank said (an outcome, its connection closing, its
// heartbeats) and when, never a clock. And the launcher's SIGTERM held by the rank that reports
// (peer_teardown.h), in forked children.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../src/blame/diagnosis.h"
#include "../src/launch/peer_gather.h"
#include "../src/launch/peer_teardown.h"

namespace distmetrics::runtime::detail {
namespace {

using namespace std::chrono_literals;

RankHearing reported() {
  RankHearing h;
  h.reported = true;
  return h;
}
RankHearing gone() {
  RankHearing h;
  h.gone = true;
  return h;
}
RankHearing heard(std::chrono::milliseconds ago) {
  RankHearing h;
  h.silent_for = ago;
  return h;
}
RankHearing never_heard() { return RankHearing{}; }

const GatherMargins margins = gather_margins(500ms);  // the multi-host tests' report grace

TEST(PeerGather, MarginsFollowTheReportGrace) {
  EXPECT_EQ(gather_margins(500ms).silence, 2000ms);
  EXPECT_EQ(gather_margins(500ms).late, 2000ms);
  EXPECT_EQ(gather_margins(5000ms).silence, 2000ms);
  EXPECT_EQ(gather_margins(5000ms).late, 5000ms);  // the CLI's grace: as patient with a late rank
}

TEST(PeerGather, EveryOutcomeInEndsTheWaitBeforeTheDeadline) {
  const auto d = decide_gather({reported(), reported(), reported()}, -2500ms, margins);
  EXPECT_TRUE(d.done);
  EXPECT_FALSE(d.loss);
  EXPECT_EQ(d.ranks, (std::vector<Heard>{Heard::Reported, Heard::Reported, Heard::Reported}));
}

TEST(PeerGather, BeforeTheDeadlineAMissingRankIsWaitedForHeardOrNot) {
  EXPECT_FALSE(decide_gather({reported(), heard(50ms), reported()}, -10ms, margins).done);
  EXPECT_FALSE(decide_gather({reported(), reported(), heard(9000ms)}, -10ms, margins).done);
  EXPECT_FALSE(decide_gather({reported(), never_heard()}, -1ms, margins).done);
}

// A host killed: rank 2's own connection closed before it reported. The verdict is known at once,
// before the deadline and before rank 1 (still inside its collective) reports.
TEST(PeerGather, ARankGoneWithoutItsOutcomeDecidesAtOnce) {
  const auto d = decide_gather({reported(), heard(80ms), gone()}, -5000ms, margins);
  EXPECT_TRUE(d.done);
  EXPECT_TRUE(d.loss);
  EXPECT_EQ(d.ranks, (std::vector<Heard>{Heard::Reported, Heard::Late, Heard::Gone}));
  EXPECT_FALSE(d.late_margin_over);
}

TEST(PeerGather, ARankGoneAfterItReportedIsNoLoss) {
  RankHearing left = reported();
  left.gone = true;
  const auto d = decide_gather({reported(), left, heard(10ms)}, -100ms, margins);
  EXPECT_FALSE(d.done);
  EXPECT_FALSE(d.loss);
  EXPECT_EQ(d.ranks[1], Heard::Reported);
}

// The partition of issue 36 on a loaded machine: h3 (rank 2) cut off 3.2 s before the report
// deadline, h2's healthy rank 1 still beating but its outcome not in yet. Rank 0 waits for rank 1
// (late, not "sent nothing"); once it reports, only rank 2 is behind the cut.
TEST(PeerGather, AHealthyRankThatReportsLateIsWaitedForAndOnlyTheCutOffRankIsSilent) {
  auto at_deadline = decide_gather({reported(), heard(150ms), heard(3200ms)}, 0ms, margins);
  EXPECT_FALSE(at_deadline.done);
  EXPECT_EQ(at_deadline.ranks, (std::vector<Heard>{Heard::Reported, Heard::Late, Heard::Silent}));
  auto later = decide_gather({reported(), heard(90ms), heard(4400ms)}, 1200ms, margins);
  EXPECT_FALSE(later.done);
  auto in = decide_gather({reported(), reported(), heard(4500ms)}, 1300ms, margins);
  EXPECT_TRUE(in.done);
  EXPECT_FALSE(in.late_margin_over);
  EXPECT_EQ(in.ranks, (std::vector<Heard>{Heard::Reported, Heard::Reported, Heard::Silent}));
}

TEST(PeerGather, ARankCutJustBeforeTheDeadlineIsWaitedForUntilItsSilenceIsPastTheMargin) {
  // Cut 300 ms before the report deadline: still within the silence margin, so not yet silent.
  EXPECT_FALSE(decide_gather({reported(), reported(), heard(300ms)}, 0ms, margins).done);
  EXPECT_FALSE(decide_gather({reported(), reported(), heard(2000ms)}, 1700ms, margins).done);  // at the margin: heard
  const auto d = decide_gather({reported(), reported(), heard(2001ms)}, 1701ms, margins);
  EXPECT_TRUE(d.done);
  EXPECT_EQ(d.ranks[2], Heard::Silent);
}

TEST(PeerGather, ARankStillHeardButSilentInItsOutcomeIsGivenUpAtTheLateMargin) {
  EXPECT_FALSE(decide_gather({reported(), heard(100ms)}, 1999ms, margins).done);
  const auto d = decide_gather({reported(), heard(100ms)}, 2000ms, margins);
  EXPECT_TRUE(d.done);
  EXPECT_TRUE(d.late_margin_over);
  EXPECT_EQ(d.ranks[1], Heard::Late);
}

TEST(PeerGather, OnOneHostARankWithoutAnOutcomeAtTheDeadlineIsSilent) {
  // No heartbeats on one host: nothing tells a late rank from a stopped one, as before them.
  const auto d = decide_gather({reported(), never_heard(), reported()}, 0ms, margins);
  EXPECT_TRUE(d.done);
  EXPECT_EQ(d.ranks[1], Heard::Silent);
}

// mpirun may send SIGTERM within 20 ms of losing a host, before the lost rank's connection closes:
// rank 0 waits up to the settle margin for the loss, then decides with what it has.
TEST(PeerGather, TheLaunchersTeardownEndsTheWaitOnceItHasSettled) {
  Teardown just_now;
  just_now.requested = true;
  EXPECT_FALSE(decide_gather({reported(), heard(20ms), heard(20ms)}, -4000ms, margins, just_now).done);
  Teardown later = just_now;
  later.since = 499ms;
  EXPECT_FALSE(decide_gather({reported(), heard(20ms), heard(20ms)}, -4000ms, margins, later).done);
  later.since = 500ms;
  const auto d = decide_gather({reported(), heard(20ms), heard(20ms)}, -4000ms, margins, later);
  EXPECT_TRUE(d.done);
  EXPECT_FALSE(d.loss);
  EXPECT_FALSE(d.late_margin_over);
  // The host whose loss made the launcher end the job: a crash, decided as soon as it shows.
  const auto lost = decide_gather({reported(), heard(20ms), gone()}, -4000ms, margins, just_now);
  EXPECT_TRUE(lost.done);
  EXPECT_TRUE(lost.loss);
  EXPECT_EQ(margins.teardown_settle, 500ms);
}

// The words and the blame that follow the decision, on the partition's outcomes: ranks 0 and 1
// timed out inside all_reduce #5 (rank 1's outcome came late), rank 2 sent nothing: its progress
// says it was inside #5 too, so the collectives alone blame nobody.
JobResult partition_run(const RankOutcome& rank1) {
  CollectiveRecord waited{5, "all_reduce(sum)", "float64", {256}};
  std::vector<CollectiveRecord> trace;
  for (std::uint64_t i = 0; i <= 5; ++i) trace.push_back(CollectiveRecord{i, "all_reduce(sum)", "float64", {256}});
  JobResult run;
  for (int r = 0; r < 3; ++r) {
    RankOutcome o = r == 1 ? rank1 : RankOutcome{};
    o.rank = r;
    if (r != 1) o.state = r == 0 ? RankState::TimedOut : RankState::Stuck;
    if (o.trace.empty()) {
      o.trace = trace;
      o.blocked_in = waited;
    }
    run.ranks.push_back(o);
  }
  diagnose(run, {}, 3000ms);
  return run;
}

TEST(PeerGather, APartitionBlamesTheRankBehindTheCutAndOnlyIt) {
  RankOutcome rank1;
  rank1.state = RankState::TimedOut;
  JobResult run = partition_run(rank1);
  ASSERT_EQ(run.status, RunStatus::Hang);
  EXPECT_EQ(run.blamed_rank, -1);  // every rank inside the same collective
  const std::vector<RankHearing> hearing{reported(), reported(), heard(3412ms)};
  const auto d = decide_gather(hearing, 1300ms, margins);
  ASSERT_TRUE(d.done);
  blame_the_silent(run, d, hearing, 500ms);
  say_who_was_late(run, d, hearing, 500ms);
  EXPECT_EQ(run.blamed_rank, 2);
  EXPECT_EQ(run.diagnosis.substr(0, run.diagnosis.find('\n')),
            "rank 2 sent nothing by the deadline plus 500 ms while the other ranks reported (not heard for 3412 ms; a "
            "rank not heard for 2000 ms is taken as cut off): it is cut off (a network partition, its host down) or "
            "stopped. What the others saw follows from it:");
  EXPECT_NE(run.diagnosis.find("every rank entered all_reduce(sum) #5"), std::string::npos) << run.diagnosis;
}

TEST(PeerGather, ARankLateBeyondTheMarginIsSaidButNotBlamedAsCutOff) {
  RankOutcome rank1;
  rank1.state = RankState::Stuck;  // no outcome: its progress only
  JobResult run = partition_run(rank1);
  const std::vector<RankHearing> hearing{reported(), heard(120ms), heard(5500ms)};
  const auto d = decide_gather(hearing, 2000ms, margins);
  ASSERT_TRUE(d.done);
  ASSERT_TRUE(d.late_margin_over);
  blame_the_silent(run, d, hearing, 500ms);
  say_who_was_late(run, d, hearing, 500ms);
  EXPECT_EQ(run.blamed_rank, 2);  // rank 1 was heard: not behind the cut
  EXPECT_NE(run.diagnosis.find("rank 1 was still heard (rank 1 120 ms before) but sent no outcome by the deadline plus "
                               "500 ms and 2000 ms more"),
            std::string::npos)
      << run.diagnosis;
}

TEST(PeerGather, TwoSilentRanksAreBothNamedAndNeitherAloneIsBlamed) {
  RankOutcome rank1;
  rank1.state = RankState::Stuck;
  JobResult run = partition_run(rank1);
  const std::vector<RankHearing> hearing{reported(), heard(2600ms), never_heard()};
  const auto d = decide_gather(hearing, 0ms, margins);
  ASSERT_TRUE(d.done);
  blame_the_silent(run, d, hearing, 500ms);
  EXPECT_EQ(run.blamed_rank, -1);
  EXPECT_EQ(run.diagnosis.rfind("ranks 1, 2 sent nothing by the deadline plus 500 ms while the other ranks reported (rank "
                                "1 not heard for 2600 ms, rank 2 never heard; ",
                                0),
            0u)
      << run.diagnosis;
}

TEST(PeerGather, ACrashIsNotBlamedOnTheSilent) {
  RankOutcome rank1;
  rank1.state = RankState::Crashed;
  rank1.how_died = "its process is gone: its connection to the rendezvous store closed (host h2)";
  JobResult run = partition_run(rank1);
  ASSERT_EQ(run.status, RunStatus::Crash);
  const std::vector<RankHearing> hearing{reported(), gone(), heard(30ms)};
  const auto d = decide_gather(hearing, -3000ms, margins);
  blame_the_silent(run, d, hearing, 500ms);
  EXPECT_EQ(run.blamed_rank, 1);
  EXPECT_EQ(run.diagnosis.rfind("rank 1 crashed", 0), 0u) << run.diagnosis;
}

// ---- The launcher's SIGTERM, held by the rank that reports ----

// Runs `body` in a forked child; its wait status and what it wrote to the pipe.
std::pair<int, std::string> in_child(const std::function<void(int fd)>& body) {
  int pipe_fds[2];
  EXPECT_EQ(::pipe(pipe_fds), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipe_fds[0]);
    body(pipe_fds[1]);
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  std::string said;
  char buffer[256];
  for (ssize_t n; (n = ::read(pipe_fds[0], buffer, sizeof(buffer))) > 0;) said.append(buffer, static_cast<size_t>(n));
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return {status, said};
}

void say(int fd, const std::string& text) { EXPECT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size())); }

TEST(PeerTeardown, AHeldSigtermIsRecordedAndEndsTheProcessWhenReleased) {
  const auto [status, said] = in_child([](int fd) {
    install_teardown_handler();
    hold_teardown(true);
    ::kill(::getpid(), SIGTERM);
    say(fd, "alive " + std::to_string(teardown_signal()) + ";");
    hold_teardown(false);  // the report is written: the signal takes effect now
    say(fd, "not ended;");
  });
  EXPECT_EQ(said, "alive " + std::to_string(SIGTERM) + ";");
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
}

TEST(PeerTeardown, ASigtermNotHeldEndsTheProcessAtOnce) {
  const auto [status, said] = in_child([](int fd) {
    install_teardown_handler();
    ::kill(::getpid(), SIGTERM);
    say(fd, "not ended;");
  });
  EXPECT_EQ(said, "");
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
}

TEST(PeerTeardown, ACallersOwnSigtermActionIsLeftAlone) {
  const auto [status, said] = in_child([](int fd) {
    ::signal(SIGTERM, SIG_IGN);
    install_teardown_handler();
    hold_teardown(true);
    ::kill(::getpid(), SIGTERM);
    say(fd, "ignored " + std::to_string(teardown_signal()) + ";");
    hold_teardown(false);
    restore_teardown_handler();
    say(fd, "still here;");
  });
  EXPECT_EQ(said, "ignored 0;still here;");
  ASSERT_TRUE(WIFEXITED(status));
}

TEST(PeerTeardown, RestoringPutsBackTheDefaultAction) {
  const auto [status, said] = in_child([](int fd) {
    install_teardown_handler();
    restore_teardown_handler();
    struct sigaction now {};
    ::sigaction(SIGTERM, nullptr, &now);
    say(fd, now.sa_handler == SIG_DFL ? "default;" : "other;");
  });
  EXPECT_EQ(said, "default;");
  EXPECT_TRUE(WIFEXITED(status));
}

}  // namespace
}  // namespace distmetrics::runtime::detail
