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


// A fork keeps no thread pool: the child computes on one thread. Where ATen runs on OpenMP,
// setting OpenMP's count is enough; at::set_num_threads would also build caffe2's pthreadpool
// afresh in the child, whose new worker spins for ~5 ms of CPU before it sleeps (perf), which
// every job's reference paid while the ranks wanted the same two cores.
void compute_on_one_thread() {
  if (at::get_num_threads() == 1) return;
  using SetThreads = void (*)(int);
  if (auto* omp_set_num_threads = reinterpret_cast<SetThreads>(::dlsym(RTLD_DEFAULT, "omp_set_num_threads"))) {
    omp_set_num_threads(1);
    if (at::get_num_threads() == 1) return;  // ATen's backend is OpenMP
  }
  at::set_num_threads(1);
}

// Reads what is there without blocking; false at end of file.
bool drain(int fd, std::string& into) {
  char buffer[65536];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n > 0) {
      into.append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0;  // EAGAIN: open, nothing more now; 0: end of file
  }
}

// The answer is one line: whatever the child's own children do with the pipe afterwards, a whole
// line is a whole answer.
[[noreturn]] void child_main(const std::function<nlohmann::json(ChildHold&)>& fn, int out_fd, int release_fd) {
  ::setpgid(0, 0);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM}) ::signal(sig, SIG_DFL);
  nlohmann::json answer;
  ChildHold hold;
  try {
    compute_on_one_thread();
    answer = {{"value", fn(hold)}};
  } catch (const std::exception& e) {
    answer = {{"error", current_exception_type_name() + ": " + error_message(e)}};
  } catch (...) {
    answer = {{"error", "an exception that is not a std::exception"}};
  }
  detail::write_all(out_fd, answer.dump() + "\n");
  ::close(out_fd);
  if (release_fd >= 0) {
    // Kept: until released (the parent closes its end), or the parent is gone.
    char byte = 0;
    while (::read(release_fd, &byte, 1) < 0 && errno == EINTR) {
    }
    hold.reset();
  }
  ::_exit(0);  // no static destructors or atexit handlers of the parent
}

}  // namespace

ChildCall::ChildCall(const std::function<nlohmann::json()>& fn) {
  start([fn](ChildHold&) { return fn(); }, /*kept=*/false);
}

ChildCall::ChildCall(KeepUntilReleased, const std::function<nlohmann::json(ChildHold& hold)>& fn) {
  start(fn, /*kept=*/true);
}

void ChildCall::start(const std::function<nlohmann::json(ChildHold& hold)>& fn, bool kept) {
  int out[2] = {-1, -1};
  int release[2] = {-1, -1};
  if (::pipe2(out, O_CLOEXEC) != 0 || (kept && ::pipe2(release, O_CLOEXEC) != 0)) {
    for (int fd : {out[0], out[1]}) if (fd >= 0) ::close(fd);
    failed_start_.ended = ChildCallResult::Ended::Threw;
    failed_start_.error = std::string("cannot make a pipe: ") + std::strerror(errno);
    return;
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(out[0]);
    if (kept) ::close(release[1]);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlives the process that waits for it
    if (::getppid() != parent) ::_exit(1);
    child_main(fn, out[1], release[0]);
  }
  ::close(out[1]);
  if (kept) ::close(release[0]);
  if (pid < 0) {
    ::close(out[0]);
    if (kept) ::close(release[1]);
    failed_start_.ended = ChildCallResult::Ended::Threw;
    failed_start_.error = std::string("cannot fork: ") + std::strerror(errno);
    return;
  }
  ::setpgid(pid, pid);  // also here: no window in which the group does not exist yet
  ::fcntl(out[0], F_SETFL, O_NONBLOCK);
  pid_ = pid;
  group_ = pid;
  started_pid_ = pid;
  out_fd_ = out[0];
  kept_ = kept;
  release_fd_ = kept ? release[1] : -1;
}

ChildCall::~ChildCall() { end_group(); }

// Ends the child, if still there, and whatever it forked (its process group); reaps them, bounded.
void ChildCall::end_group() {
  if (out_fd_ >= 0) ::close(out_fd_);
  out_fd_ = -1;
  if (release_fd_ >= 0) ::close(release_fd_);
  release_fd_ = -1;
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

void ChildCall::release(std::chrono::milliseconds grace) {
  if (release_fd_ >= 0) ::close(release_fd_);
  release_fd_ = -1;
  // A healthy child leaves on its own once released.
  if (pid_ > 0 && grace > std::chrono::milliseconds(0)) {
    if (detail::reap_child(pid_, Deadline::after(grace))) pid_ = -1;
  }
  end_group();
}

ChildCallResult ChildCall::wait(const Deadline& deadline, const std::function<bool()>& stop) {
  if (group_ < 0) return failed_start_;
  std::string sent;
  std::optional<int> status;
  int stop_signal = 0;
  bool open = true;
  const auto answered = [&] { return sent.find('\n') != std::string::npos; };
  while (!answered()) {
    pollfd watch{out_fd_, POLLIN, 0};
    ::poll(&watch, 1, static_cast<int>(std::min<std::chrono::milliseconds>(deadline.remaining(), std::chrono::milliseconds(20)).count()));
    open = drain(out_fd_, sent);
    if (answered()) break;
    if (pid_ > 0) {
      int raw = 0;
      const pid_t done = ::waitpid(pid_, &raw, WNOHANG | WUNTRACED);
      if (done == pid_ && WIFSTOPPED(raw)) {
        stop_signal = WSTOPSIG(raw);
      } else if (done == pid_) {
        status = raw;
        pid_ = -1;  // reaped: end_group() ends only what it forked
        drain(out_fd_, sent);
        break;
      }
    }
    if (!open) {  // closed without a whole answer: the child is dying; reap it, bounded
      status = detail::reap_child(pid_, Deadline::after(std::max<std::chrono::milliseconds>(deadline.remaining(), std::chrono::seconds(1))));
      if (status) pid_ = -1;
      break;
    }
    if (deadline.expired() || (stop && stop())) break;
  }
  if (kept_) {
    ::close(out_fd_);
    out_fd_ = -1;
  } else {
    end_group();
  }
  ChildCallResult result;
  nlohmann::json answer = nlohmann::json::parse(sent.substr(0, sent.find('\n')), nullptr, false);
  if (answer.is_object() && answer.contains("value")) {
    result.value = std::move(answer["value"]);
  } else if (answer.is_object() && answer.contains("error")) {
    result.ended = ChildCallResult::Ended::Threw;
    result.error = answer["error"].get<std::string>();
  } else if (status) {
    result.ended = ChildCallResult::Ended::Died;
    result.how_died = detail::describe_wait_status(*status);
    result.wait_status = status;
  } else if (!open) {
    result.ended = ChildCallResult::Ended::Died;
    result.how_died = "gone without an answer";
  } else {
    result.ended = ChildCallResult::Ended::TimedOut;
    result.stop_signal = stop_signal;
    if (stop_signal != 0) {
      const char* name = detail::signal_name(stop_signal);
      result.how_died = "stopped by " + (name ? std::string(name) : "signal " + std::to_string(stop_signal));
    }
  }
  return result;
}

ChildCallResult call_in_child(const std::function<nlohmann::json()>& fn, const Deadline& deadline) {
  return ChildCall(fn).wait(deadline);
}

}  // namespace distmetrics::runtime
