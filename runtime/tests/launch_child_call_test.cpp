// call_in_child: a function's value from a child process, or how the child ended, by a deadline;
// nothing of it left afterwards (what it forked included).
#include <gtest/gtest.h>

#include <signal.h>
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

// A call that is never waited for (the ranks crashed, the variant is judged without it) is ended
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

}  // namespace
}  // namespace distmetrics::runtime
