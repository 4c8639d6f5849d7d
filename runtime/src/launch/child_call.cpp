#include "distmetrics/runtime/child_call.h"

#include <ATen/Parallel.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <thread>

#include "distmetrics/runtime/text.h"
#include "process.h"

namespace distmetrics::runtime {

namespace {

void write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

[[noreturn]] void child_main(const std::function<nlohmann::json()>& fn, int out_fd) {
  ::setpgid(0, 0);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM}) ::signal(sig, SIG_DFL);
  nlohmann::json answer;
  try {
    at::set_num_threads(1);  // a fork keeps no thread pool: the child computes on one thread
    answer = {{"value", fn()}};
  } catch (const std::exception& e) {
    answer = {{"error", current_exception_type_name() + ": " + error_message(e)}};
  } catch (...) {
    answer = {{"error", "an exception that is not a std::exception"}};
  }
  write_all(out_fd, answer.dump());
  ::_exit(0);  // no static destructors or atexit handlers of the parent
}

}  // namespace

ChildCallResult call_in_child(const std::function<nlohmann::json()>& fn, const Deadline& deadline) {
  ChildCallResult result;
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    result.ended = ChildCallResult::Ended::Threw;
    result.error = std::string("cannot make a pipe: ") + std::strerror(errno);
    return result;
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(out[0]);
    child_main(fn, out[1]);
  }
  ::close(out[1]);
  if (pid < 0) {
    ::close(out[0]);
    result.ended = ChildCallResult::Ended::Threw;
    result.error = std::string("cannot fork: ") + std::strerror(errno);
    return result;
  }
  ::setpgid(pid, pid);
  ::fcntl(out[0], F_SETFL, O_NONBLOCK);
  std::string sent;
  std::optional<int> status;
  while (!status) {
    pollfd watch{out[0], POLLIN, 0};
    ::poll(&watch, 1, static_cast<int>(std::min<std::chrono::milliseconds>(deadline.remaining(), std::chrono::milliseconds(50)).count()));
    char buffer[65536];
    const ssize_t n = ::read(out[0], buffer, sizeof(buffer));
    if (n > 0) {
      sent.append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) {  // the child answered (or died): reap it, bounded
      status = detail::reap_child(pid, Deadline::after(std::chrono::seconds(5)));
      break;
    }
    if (deadline.expired()) break;
  }
  ::close(out[0]);
  ::kill(-pid, SIGKILL);  // the child if still there, and whatever it forked
  if (!status) status = detail::reap_child(pid, Deadline::after(std::chrono::seconds(5)));
  // The group's other processes that became ours (as a subreaper): reap them, bounded.
  const Deadline reaped = Deadline::after(std::chrono::seconds(1));
  while (!reaped.expired()) {
    const pid_t done = ::waitpid(-pid, nullptr, WNOHANG);
    if (done < 0 && errno != EINTR) break;  // ECHILD: none left
    if (done == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  nlohmann::json answer = nlohmann::json::parse(sent, nullptr, false);
  if (answer.is_object() && answer.contains("value")) {
    result.value = std::move(answer["value"]);
  } else if (answer.is_object() && answer.contains("error")) {
    result.ended = ChildCallResult::Ended::Threw;
    result.error = answer["error"].get<std::string>();
  } else if (deadline.expired() && (!status || (WIFSIGNALED(*status) && WTERMSIG(*status) == SIGKILL))) {
    result.ended = ChildCallResult::Ended::TimedOut;
  } else {
    result.ended = ChildCallResult::Ended::Died;
    result.how_died = status ? detail::describe_wait_status(*status) : "gone without an answer";
  }
  return result;
}

}  // namespace distmetrics::runtime
