// call_in_child: a function's value from a child process, or how the child ended, by a deadline;
// nothing of it left afterwards (what it forked included).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <stdexcept>
#include <thread>

#include "distmetrics/runtime/child_call.h"

namespace distmetrics::runtime {
namespace {

using namespace std::chrono_literals;
using Ended = ChildCallResult::Ended;

bool gone(pid_t pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

TEST(ChildCall, ReturnsTheValue) {
  const auto r = call_in_child([] { return nlohmann::json({{"pid", ::getpid()}, {"sum", 6}}); }, Deadline::after(30s));
  ASSERT_EQ(r.ended, Ended::Returned) << r.error << r.how_died;
  EXPECT_EQ(r.value["sum"], 6);
  EXPECT_NE(r.value["pid"].get<long>(), static_cast<long>(::getpid()));
  EXPECT_TRUE(gone(r.value["pid"].get<pid_t>()));
}

TEST(ChildCall, SaysWhatTheFunctionThrew) {
  const auto r = call_in_child([]() -> nlohmann::json { throw std::invalid_argument("no samples"); }, Deadline::after(30s));
  ASSERT_EQ(r.ended, Ended::Threw);
  EXPECT_EQ(r.error, "std::invalid_argument: no samples");
}

TEST(ChildCall, SaysHowTheChildDied) {
  const auto r = call_in_child([]() -> nlohmann::json { ::raise(SIGSEGV); return nullptr; }, Deadline::after(30s));
  ASSERT_EQ(r.ended, Ended::Died);
  EXPECT_EQ(r.how_died, "killed by signal 11 (SIGSEGV)");
  const auto e = call_in_child([]() -> nlohmann::json { std::exit(3); }, Deadline::after(30s));
  ASSERT_EQ(e.ended, Ended::Died);
  EXPECT_EQ(e.how_died, "exit status 3");
}

// Past the deadline the child is ended with what it forked, and the call returns within a bound
// (a hang bound, not a speed check).
TEST(ChildCall, EndsAChildPastTheDeadlineWithWhatItForked) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const auto started = std::chrono::steady_clock::now();
  const auto r = call_in_child(
      [&]() -> nlohmann::json {
        const pid_t forked = ::fork();
        if (forked == 0) {
          ::sleep(600);
          ::_exit(0);
        }
        (void)!::write(pipe_fds[1], &forked, sizeof(forked));
        while (true) std::this_thread::sleep_for(1s);
      },
      Deadline::after(500ms));
  EXPECT_EQ(r.ended, Ended::TimedOut);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 10s);
  pid_t forked = 0;
  ASSERT_EQ(::read(pipe_fds[0], &forked, sizeof(forked)), static_cast<ssize_t>(sizeof(forked)));
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
  // Killed; reaped by us if we are its subreaper, else by init: give init a moment.
  for (int i = 0; i < 100 && !gone(forked); ++i) std::this_thread::sleep_for(20ms);
  EXPECT_TRUE(gone(forked)) << "the process the child forked (" << forked << ") is still there";
}

// Started first and collected later: the child computes while the caller does other work (the
// engine runs the ranks meanwhile), and the value is the function's.
TEST(ChildCall, ComputesWhileTheCallerWorks) {
  ChildCall call([] { return nlohmann::json{{"sum", 40 + 2}}; });
  std::this_thread::sleep_for(50ms);  // the caller's own work
  const auto r = call.wait(Deadline::after(10s));
  ASSERT_EQ(r.ended, Ended::Returned) << r.error << r.how_died;
  EXPECT_EQ(r.value.at("sum").get<int>(), 42);
}

// A call that is never waited for (the ranks crashed, the job is judged without it) is ended
// with what it forked when it is destroyed.
TEST(ChildCall, DestroyedUnwaitedEndsTheChildAndWhatItForked) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  pid_t child = -1;
  {
    ChildCall call([&]() -> nlohmann::json {
      const pid_t forked = ::fork();
      if (forked == 0) {
        ::sleep(600);
        ::_exit(0);
      }
      const pid_t both[2] = {::getpid(), forked};
      (void)!::write(pipe_fds[1], both, sizeof(both));
      while (true) std::this_thread::sleep_for(1s);
    });
    pid_t both[2] = {0, 0};
    ASSERT_EQ(::read(pipe_fds[0], both, sizeof(both)), static_cast<ssize_t>(sizeof(both)));
    child = both[0];
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    pipe_fds[0] = both[1];  // the grandchild, checked below
  }
  EXPECT_TRUE(gone(child)) << "the child (" << child << ") is still there";
  const pid_t forked = pipe_fds[0];
  for (int i = 0; i < 100 && !gone(forked); ++i) std::this_thread::sleep_for(20ms);
  EXPECT_TRUE(gone(forked)) << "the process the child forked (" << forked << ") is still there";
}

// A kept call (a peer rank's task): the child answers, then keeps what it holds (its
// communicator) and stays until released; released, it drops its hold and leaves on its own.
TEST(ChildCall, AKeptChildHoldsUntilReleasedThenLeavesOnItsOwn) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_NONBLOCK), 0);
  struct SaysWhenDropped {
    explicit SaysWhenDropped(int to) : fd(to) {}
    ~SaysWhenDropped() { (void)!::write(fd, "dropped", 7); }
    int fd;
  };
  ChildCall call(KeepUntilReleased{}, [&](ChildHold& hold) {
    hold = std::make_shared<SaysWhenDropped>(pipe_fds[1]);
    return nlohmann::json{{"pid", ::getpid()}};
  });
  const auto r = call.wait(Deadline::after(10s));
  ASSERT_EQ(r.ended, Ended::Returned) << r.error << r.how_died;
  const pid_t child = r.value.at("pid").get<pid_t>();
  EXPECT_EQ(child, call.pid());
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(gone(child)) << "a kept child left before it was released";
  char said[16] = {0};
  EXPECT_EQ(::read(pipe_fds[0], said, sizeof(said)), -1) << "the hold was dropped before the release";
  call.release(5s);
  EXPECT_TRUE(gone(child));
  ASSERT_EQ(::read(pipe_fds[0], said, sizeof(said)), 7);
  EXPECT_EQ(std::string(said, 7), "dropped");
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
}

// A child that stops itself is still there at the deadline: TimedOut with the signal. A kept one
// stays (stopped) until released; another is ended at once.
TEST(ChildCall, AChildThatStopsItselfIsSaidStopped) {
  ChildCall kept(KeepUntilReleased{}, [](ChildHold&) -> nlohmann::json {
    ::raise(SIGSTOP);
    return nullptr;
  });
  const auto r = kept.wait(Deadline::after(500ms));
  EXPECT_EQ(r.ended, Ended::TimedOut);
  EXPECT_EQ(r.stop_signal, SIGSTOP);
  EXPECT_EQ(r.how_died, "stopped by SIGSTOP");
  EXPECT_FALSE(gone(kept.pid()));
  kept.release(0ms);
  EXPECT_TRUE(gone(kept.pid()));

  ChildCall plain([]() -> nlohmann::json {
    ::raise(SIGSTOP);
    return nullptr;
  });
  const auto p = plain.wait(Deadline::after(500ms));
  EXPECT_EQ(p.ended, Ended::TimedOut);
  EXPECT_EQ(p.stop_signal, SIGSTOP);
  EXPECT_TRUE(gone(plain.pid()));
}

TEST(ChildCall, AKeptChildThatExitsGivesItsWaitStatus) {
  ChildCall call(KeepUntilReleased{}, [](ChildHold&) -> nlohmann::json { ::_exit(3); });
  const auto r = call.wait(Deadline::after(10s));
  ASSERT_EQ(r.ended, Ended::Died);
  EXPECT_EQ(r.how_died, "exit status 3");
  ASSERT_TRUE(r.wait_status.has_value());
  EXPECT_TRUE(WIFEXITED(*r.wait_status));
  EXPECT_EQ(WEXITSTATUS(*r.wait_status), 3);
  EXPECT_TRUE(gone(call.pid()));
  call.release(0ms);
}

}  // namespace
}  // namespace distmetrics::runtime
