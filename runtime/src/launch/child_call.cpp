#include "distmetrics/runtime/child_call.h"

#include <ATen/Parallel.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
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

// A fork keeps no thread pool: the child computes on one thread. Where ATen runs on OpenMP,
// setting OpenMP's count is enough; at::set_num_threads would also build caffe2's pthreadpool
// afresh in the child, whose new worker spins for ~5 ms of CPU before it sleeps (perf), which
// every variant's reference paid while the ranks wanted the same two cores.
void compute_on_one_thread() {
  if (at::get_num_threads() == 1) return;
  using SetThreads = void (*)(int);
  if (auto* omp_set_num_threads = reinterpret_cast<SetThreads>(::dlsym(RTLD_DEFAULT, "omp_set_num_threads"))) {
    omp_set_num_threads(1);
    if (at::get_num_threads() == 1) return;  // ATen's backend is OpenMP
  }
  at::set_num_threads(1);
}

[[noreturn]] void child_main(const std::function<nlohmann::json()>& fn, int out_fd) {
  ::setpgid(0, 0);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM}) ::signal(sig, SIG_DFL);
  nlohmann::json answer;
  try {
    compute_on_one_thread();
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

ChildCall::ChildCall(const std::function<nlohmann::json()>& fn) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    failed_start_.ended = ChildCallResult::Ended::Threw;
    failed_start_.error = std::string("cannot make a pipe: ") + std::strerror(errno);
    return;
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(out[0]);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlives the process that waits for it
    if (::getppid() != parent) ::_exit(1);
    child_main(fn, out[1]);
  }
  ::close(out[1]);
  if (pid < 0) {
    ::close(out[0]);
    failed_start_.ended = ChildCallResult::Ended::Threw;
    failed_start_.error = std::string("cannot fork: ") + std::strerror(errno);
    return;
  }
  ::setpgid(pid, pid);
  ::fcntl(out[0], F_SETFL, O_NONBLOCK);
  pid_ = pid;
  group_ = pid;
  out_fd_ = out[0];
}

ChildCall::~ChildCall() { end_group(); }

// Ends the child, if still there, and whatever it forked (its process group); reaps them, bounded.
void ChildCall::end_group() {
  if (out_fd_ >= 0) ::close(out_fd_);
  out_fd_ = -1;
  if (group_ < 0) return;
  ::kill(-group_, SIGKILL);
  if (pid_ >= 0) detail::reap_child(pid_, Deadline::after(std::chrono::seconds(5)));
  pid_ = -1;
  // The group's other processes that became ours (as a subreaper): reap them, bounded.
  const Deadline reaped = Deadline::after(std::chrono::seconds(1));
  while (!reaped.expired()) {
    const pid_t done = ::waitpid(-group_, nullptr, WNOHANG);
    if (done < 0 && errno != EINTR) break;  // ECHILD: none left
    if (done == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  group_ = -1;
}

ChildCallResult ChildCall::wait(const Deadline& deadline) {
  if (group_ < 0) return failed_start_;
  const pid_t pid = pid_;
  std::string sent;
  std::optional<int> status;
  while (!status) {
    pollfd watch{out_fd_, POLLIN, 0};
    ::poll(&watch, 1, static_cast<int>(std::min<std::chrono::milliseconds>(deadline.remaining(), std::chrono::milliseconds(50)).count()));
    char buffer[65536];
    const ssize_t n = ::read(out_fd_, buffer, sizeof(buffer));
    if (n > 0) {
      sent.append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) {  // the child answered (or died): reap it, bounded
      status = detail::reap_child(pid, Deadline::after(std::chrono::seconds(5)));
      if (status) pid_ = -1;  // reaped: end_group() ends only what it forked
      break;
    }
    if (deadline.expired()) break;
  }
  end_group();
  ChildCallResult result;
  nlohmann::json answer = nlohmann::json::parse(sent, nullptr, false);
  if (answer.is_object() && answer.contains("value")) {
    result.value = std::move(answer["value"]);
  } else if (answer.is_object() && answer.contains("error")) {
    result.ended = ChildCallResult::Ended::Threw;
    result.error = answer["error"].get<std::string>();
  } else if (deadline.expired() && !status) {
    result.ended = ChildCallResult::Ended::TimedOut;
  } else {
    result.ended = ChildCallResult::Ended::Died;
    result.how_died = status ? detail::describe_wait_status(*status) : "gone without an answer";
  }
  return result;
}

ChildCallResult call_in_child(const std::function<nlohmann::json()>& fn, const Deadline& deadline) {
  return ChildCall(fn).wait(deadline);
}

}  // namespace distmetrics::runtime
