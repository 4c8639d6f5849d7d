#include "zygote.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <mutex>
#include <set>

#include "distmetrics/runtime/backends.h"
#include "distmetrics/runtime/rank_pool.h"
#include "worker_args.h"

namespace distmetrics::runtime {
namespace detail {
namespace {

constexpr std::size_t kMaxRequest = 64 * 1024;
constexpr int kReplyTimeoutMs = 10000;

std::mutex zygote_mutex;
pid_t zygote_pid = 0;
int zygote_fd = -1;  // our end of the request socket
ForkHooks fork_hooks;  // run around the zygote's forks (restart_worker_zygote)

void run(const std::function<void()>& hook) {
  if (hook) hook();
}

int thread_count() {
  DIR* dir = ::opendir("/proc/self/task");
  if (dir == nullptr) return -1;
  int n = 0;
  while (dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] != '.') ++n;
  }
  ::closedir(dir);
  return n;
}

// In the forked worker: the descriptors and signals an exec'd worker would get, then the worker.
[[noreturn]] void become_worker(std::vector<std::string> args, int output_fd) {
  ::setpgid(0, 0);  // leads its own process group, as a spawned worker (ending the group ends it all)
  const int null_fd = ::open("/dev/null", O_RDWR);
  ::dup2(null_fd, 0);
  ::dup2(output_fd >= 0 ? output_fd : null_fd, 1);
  ::dup2(output_fd >= 0 ? output_fd : null_fd, 2);
  // Nothing of the zygote's (its request socket) reaches the worker.
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  ::closefrom(3);
#else
  for (long fd = 3, last = ::sysconf(_SC_OPEN_MAX); fd < last; ++fd) ::close(static_cast<int>(fd));
#endif
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int sig : {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2, SIGALRM}) ::signal(sig, SIG_DFL);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const auto code = run_worker_if_requested(static_cast<int>(args.size()), argv.data());
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  ::_exit(code.value_or(kWorkerExitBadStart));
}

// The zygote's loop: one request (argv as NUL-separated strings, the output descriptor attached)
// in, the worker's pid out. The worker is forked from a short-lived child, so that once that
// child is reaped the worker is re-parented to the supervisor (our subreaper parent).
[[noreturn]] void serve(int fd) {
  std::vector<char> buffer(kMaxRequest);
  while (true) {
    msghdr message{};
    iovec io{buffer.data(), buffer.size()};
    message.msg_iov = &io;
    message.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    message.msg_control = control;
    message.msg_controllen = sizeof(control);
    const ssize_t n = ::recvmsg(fd, &message, MSG_CMSG_CLOEXEC);
    if (n <= 0) ::_exit(0);  // the supervisor is gone or done
    int output_fd = -1;
    if (cmsghdr* c = CMSG_FIRSTHDR(&message); c != nullptr && c->cmsg_type == SCM_RIGHTS) {
      std::memcpy(&output_fd, CMSG_DATA(c), sizeof(int));
    }
    std::vector<std::string> args;
    for (ssize_t at = 0; at < n;) {
      args.emplace_back(buffer.data() + at);
      at += static_cast<ssize_t>(args.back().size()) + 1;
    }
    int pid_pipe[2];
    pid_t worker = -1;
    if (::pipe2(pid_pipe, O_CLOEXEC) == 0) {
      // The hooks bracket the two forks as one: the middle child runs nothing but fork and exit.
      run(fork_hooks.before);
      const pid_t middle = ::fork();
      if (middle == 0) {
        const pid_t child = ::fork();
        if (child == 0) {
          run(fork_hooks.in_child);
          become_worker(args, output_fd);
        }
        ssize_t ignored = ::write(pid_pipe[1], &child, sizeof(child));
        (void)ignored;
        ::_exit(0);
      }
      run(fork_hooks.in_parent);
      ::close(pid_pipe[1]);
      if (middle > 0) {
        if (::read(pid_pipe[0], &worker, sizeof(worker)) != sizeof(worker)) worker = -1;
        ::waitpid(middle, nullptr, 0);  // from here on the worker is the supervisor's child
      }
      ::close(pid_pipe[0]);
    }
    if (output_fd >= 0) ::close(output_fd);
    if (::send(fd, &worker, sizeof(worker), MSG_NOSIGNAL) != sizeof(worker)) ::_exit(0);
  }
}

void forget_zygote() {
  if (zygote_fd >= 0) ::close(zygote_fd);
  zygote_fd = -1;
  // Ended, not waited out to EOF: a child this process forked since (ChildCall's) holds a copy
  // of the request socket, so the zygote may never see its end. It holds nothing to finish.
  if (zygote_pid > 0) {
    ::kill(zygote_pid, SIGKILL);
    ::waitpid(zygote_pid, nullptr, 0);
  }
  zygote_pid = 0;
}

}  // namespace

std::optional<pid_t> spawn_from_zygote(const std::vector<std::string>& argv, int output_fd) {
  std::lock_guard<std::mutex> lock(zygote_mutex);
  if (zygote_fd < 0) return std::nullopt;
  std::string request;
  for (const auto& a : argv) request.append(a.c_str(), a.size() + 1);
  if (request.size() > kMaxRequest) return std::nullopt;
  msghdr message{};
  iovec io{request.data(), request.size()};
  message.msg_iov = &io;
  message.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  if (output_fd >= 0) {
    message.msg_control = control;
    message.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&message);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &output_fd, sizeof(int));
  }
  pid_t worker = -1;
  pollfd wait{zygote_fd, POLLIN, 0};
  if (::sendmsg(zygote_fd, &message, MSG_NOSIGNAL) != static_cast<ssize_t>(request.size()) ||
      ::poll(&wait, 1, kReplyTimeoutMs) != 1 || ::recv(zygote_fd, &worker, sizeof(worker), 0) != sizeof(worker) ||
      worker <= 0) {
    forget_zygote();  // a zygote that failed once is not trusted again: exec from now on
    return std::nullopt;
  }
  return worker;
}

}  // namespace detail

namespace detail {
namespace {

// Forks a zygote from this process (zygote_mutex held, no zygote running). False when it cannot.
bool fork_zygote(const ForkHooks& hooks) {
  if (thread_count() != 1) return false;  // fork is only safe before any thread starts
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return false;
  // Workers are forked by the zygote's children; when those exit the workers become ours.
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    ::close(sv[0]);
    ::close(sv[1]);
    return false;
  }
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  const pid_t parent = ::getpid();
  run(hooks.before);
  const pid_t pid = ::fork();
  if (pid == 0) {
    run(hooks.in_child);
    fork_hooks = hooks;
    ::close(sv[0]);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlives the supervisor
    if (::getppid() != parent) ::_exit(0);
    serve(sv[1]);
  }
  run(hooks.in_parent);
  ::close(sv[1]);
  if (pid < 0) {
    ::close(sv[0]);
    return false;
  }
  zygote_pid = pid;
  zygote_fd = sv[0];
  return true;
}

}  // namespace
}  // namespace detail

namespace detail {

pid_t worker_zygote_pid() {
  std::lock_guard<std::mutex> lock(zygote_mutex);
  return zygote_fd >= 0 ? zygote_pid : 0;
}

bool load_into_worker_zygote(const std::string& backend) {
  static std::mutex once;
  static std::set<std::string> loaded;
  std::lock_guard<std::mutex> lock(once);
  if (loaded.count(backend)) return true;
  const Backend* b = find_backend(backend);
  if (b == nullptr || b->load_for_forked_workers == nullptr) return false;
  {
    std::lock_guard<std::mutex> zygote(zygote_mutex);
    if (zygote_fd < 0 || thread_count() != 1) return false;  // no zygote here, or too late to restart it
  }
  const auto hooks = b->load_for_forked_workers();
  if (!hooks || !restart_worker_zygote(*hooks)) return false;
  loaded.insert(backend);
  return true;
}

}  // namespace detail

void start_worker_zygote() {
  std::lock_guard<std::mutex> lock(detail::zygote_mutex);
  if (detail::zygote_fd >= 0) return;
  detail::fork_zygote({});
}

bool restart_worker_zygote(ForkHooks hooks) {
  std::lock_guard<std::mutex> lock(detail::zygote_mutex);
  if (detail::thread_count() != 1) return false;  // keep the old one: a new one cannot be made
  detail::forget_zygote();
  return detail::fork_zygote(hooks);
}

void stop_worker_zygote() {
  std::lock_guard<std::mutex> lock(detail::zygote_mutex);
  detail::forget_zygote();
}

}  // namespace distmetrics::runtime
