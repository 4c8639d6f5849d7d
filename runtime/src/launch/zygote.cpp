#include "zygote.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <deque>
#include <iostream>
#include <mutex>
#include <optional>
#include <set>

#include "distmetrics/runtime/backends.h"
#include "distmetrics/runtime/rank_pool.h"
#include "worker_args.h"

namespace distmetrics::runtime {
namespace detail {
namespace {

constexpr std::size_t kMaxRequest = 64 * 1024;
constexpr int kReplyTimeoutMs = 10000;
// Spares the zygote keeps forked ahead: a restart of a pool of up to this many ranks (every local
// pool of the peer run) costs no fork on its path.
constexpr std::size_t kSpares = 4;
constexpr std::size_t kMaxRetired = 64;
constexpr int kQuietBeforeSpareMs = 20;
constexpr int kRetireTimeoutMs = 2000;  // a zygote answers at once, or after the spare it is forking
// The requests that retire a zygote and that list its spares (not a worker's argv: those carry
// the worker flags).
constexpr const char* kRetire = "--distmetrics-zygote-retire";
constexpr const char* kListSpares = "--distmetrics-zygote-spares";

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

// --- Inside the zygote ----------------------------------------------------------------------------

// A worker-to-be, forked ahead of its request (the zygote's fork, tens of milliseconds for a
// supervisor that imported torch, then leaves a restart's critical path): it waits on `fd` for
// its arguments. Re-parented to the supervisor like any worker.
struct Spare {
  pid_t pid = -1;
  int fd = -1;  // the zygote's end
};
std::deque<Spare> spares;
std::vector<pid_t> dead_spares;  // spares that died unused: the supervisor's zombies, reaped at retirement
bool spares_wanted = false;      // from the first request on: a program that forks none makes none

// One request: argv as NUL-separated strings, the output descriptor attached (-1: none).
struct Request {
  std::vector<std::string> args;
  int output_fd = -1;
};

// Receives one message of NUL-separated strings with an optional descriptor; nullopt at the end
// of the connection.
std::optional<Request> receive_request(int fd, std::vector<char>& buffer) {
  msghdr message{};
  iovec io{buffer.data(), buffer.size()};
  message.msg_iov = &io;
  message.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  message.msg_control = control;
  message.msg_controllen = sizeof(control);
  const ssize_t n = ::recvmsg(fd, &message, MSG_CMSG_CLOEXEC);
  if (n <= 0) return std::nullopt;
  Request request;
  if (cmsghdr* c = CMSG_FIRSTHDR(&message); c != nullptr && c->cmsg_type == SCM_RIGHTS) {
    std::memcpy(&request.output_fd, CMSG_DATA(c), sizeof(int));
  }
  for (ssize_t at = 0; at < n;) {
    request.args.emplace_back(buffer.data() + at);
    at += static_cast<ssize_t>(request.args.back().size()) + 1;
  }
  return request;
}

bool send_request(int fd, const std::string& packed, int output_fd) {
  msghdr message{};
  iovec io{const_cast<char*>(packed.data()), packed.size()};
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
  return ::sendmsg(fd, &message, MSG_NOSIGNAL) == static_cast<ssize_t>(packed.size());
}

std::string packed(const std::vector<std::string>& args) {
  std::string text;
  for (const auto& a : args) text.append(a.c_str(), a.size() + 1);
  return text;
}

// In a spare: nothing of the zygote's (its request socket, the other spares' sockets) is kept;
// waits for its arguments and becomes the worker, or leaves when the zygote goes.
[[noreturn]] void wait_as_spare(int own) {
  for (int fd = 3; fd < own; ++fd) ::close(fd);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  ::closefrom(own + 1);
#else
  for (long fd = own + 1, last = ::sysconf(_SC_OPEN_MAX); fd < last; ++fd) ::close(static_cast<int>(fd));
#endif
  std::vector<char> buffer(kMaxRequest);
  auto request = receive_request(own, buffer);
  if (!request) ::_exit(0);  // retired, or the zygote is gone
  ::close(own);
  become_worker(request->args, request->output_fd);
}

// Forks a process re-parented to the supervisor: through a short-lived middle child, so that once
// it exits the new process is the supervisor's (our subreaper parent). `in_new` runs in it.
// Returns its pid, or -1.
//
// The middle child is a vfork: it borrows this process's memory (no copy of the page tables)
// while this thread waits, forks the new process from it, hands its pid over the pipe and exits.
// A fork of the middle copied the zygote's page tables (hundreds of MB of Python heap and torch)
// a second time and tore them down again: a spare took a median of 116-141 ms of the zygote
// beside the running variants on a 2-core machine, 44-60 ms this way (docs/performance.md).
// What the middle's fork() does to the memory it shares with us (the atfork handlers, glibc's
// locks taken and released) is what our own fork() would do; it writes nothing else but its
// locals and the pipe, and never returns from here. Signals stay blocked while it runs on our
// memory (a handler there would run on it).
template <typename InNew>
pid_t fork_for_supervisor(InNew in_new) {
  int pid_pipe[2];
  pid_t born = -1;
  if (::pipe2(pid_pipe, O_CLOEXEC) != 0) return -1;
  sigset_t all, before;
  sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, &before);
  // The hooks bracket the two forks as one: the middle child runs nothing but fork and exit.
  run(fork_hooks.before);
  const pid_t middle = ::vfork();
  if (middle == 0) {
    const pid_t child = ::fork();
    if (child == 0) {
      ::sigprocmask(SIG_SETMASK, &before, nullptr);
      run(fork_hooks.in_child);
      in_new();
    }
    ssize_t ignored = ::write(pid_pipe[1], &child, sizeof(child));
    (void)ignored;
    ::_exit(0);
  }
  run(fork_hooks.in_parent);
  ::sigprocmask(SIG_SETMASK, &before, nullptr);
  ::close(pid_pipe[1]);
  if (middle > 0) {
    if (::read(pid_pipe[0], &born, sizeof(born)) != sizeof(born)) born = -1;
    ::waitpid(middle, nullptr, 0);  // from here on the new process is the supervisor's child
  }
  ::close(pid_pipe[0]);
  return born;
}

void make_spare() {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return;
  const int theirs = sv[1];
  const pid_t pid = fork_for_supervisor([theirs] { wait_as_spare(theirs); });
  ::close(sv[1]);
  if (pid <= 0) {
    ::close(sv[0]);
    return;
  }
  spares.push_back({pid, sv[0]});
}

// The worker for a request: a spare given its arguments, else a fork made now. Its pid, or -1.
pid_t start_worker(const Request& request) {
  const std::string text = packed(request.args);
  while (!spares.empty()) {
    const Spare spare = spares.front();
    spares.pop_front();
    const bool taken = send_request(spare.fd, text, request.output_fd);
    ::close(spare.fd);
    if (taken) return spare.pid;
    dead_spares.push_back(spare.pid);  // died unused (killed from outside)
  }
  const std::vector<std::string>& args = request.args;
  const int output_fd = request.output_fd;
  return fork_for_supervisor([&] { become_worker(args, output_fd); });
}

// The spares' pids (and those that died unused), as one answer.
void send_spare_pids(int fd) {
  std::vector<pid_t> pids = dead_spares;
  for (const auto& spare : spares) pids.push_back(spare.pid);
  pids.resize(std::min<std::size_t>(pids.size(), kMaxRetired));
  ssize_t ignored = ::send(fd, pids.data(), pids.size() * sizeof(pid_t), MSG_NOSIGNAL);
  (void)ignored;
}

// The supervisor retires this zygote: every spare is let go (they leave on their sockets' end)
// and their pids go back, so that the supervisor reaps them.
[[noreturn]] void retire(int fd) {
  send_spare_pids(fd);
  for (const auto& spare : spares) ::close(spare.fd);
  ::_exit(0);
}

// Whether a request comes within `ms`: a pool's start asks for its ranks one after another, each
// right after the last one's answer, and a spare is forked only once they have all been served.
bool request_within(int fd, int ms) {
  pollfd ready{fd, POLLIN, 0};
  return ::poll(&ready, 1, ms) != 0;
}

// The zygote's loop: one request (a worker's argv and output descriptor) in, the worker's pid
// out. Between requests it forks spares, one at a time, while none waits.
[[noreturn]] void serve(int fd) {
  std::vector<char> buffer(kMaxRequest);
  while (true) {
    if (spares_wanted && spares.size() < kSpares && !request_within(fd, kQuietBeforeSpareMs)) {
      make_spare();
      continue;
    }
    auto request = receive_request(fd, buffer);
    if (!request) ::_exit(0);  // the supervisor is gone or done
    if (request->args.size() == 1 && request->args.front() == kRetire) retire(fd);
    if (request->args.size() == 1 && request->args.front() == kListSpares) {
      send_spare_pids(fd);
      continue;
    }
    spares_wanted = true;
    const pid_t worker = start_worker(*request);
    if (request->output_fd >= 0) ::close(request->output_fd);
    if (::send(fd, &worker, sizeof(worker), MSG_NOSIGNAL) != sizeof(worker)) ::_exit(0);
  }
}

// --- In the supervisor -------------------------------------------------------------------------

// The zygote's answer to `what` (kRetire, kListSpares): pids. Bounded: a zygote that does not
// answer gives none.
std::vector<pid_t> ask_for_pids(const char* what) {
  if (!send_request(zygote_fd, packed({what}), -1)) return {};
  pollfd wait{zygote_fd, POLLIN, 0};
  if (::poll(&wait, 1, kRetireTimeoutMs) != 1) return {};
  pid_t pids[kMaxRetired];
  const ssize_t n = ::recv(zygote_fd, pids, sizeof(pids), 0);
  if (n <= 0) return {};
  return std::vector<pid_t>(pids, pids + n / static_cast<ssize_t>(sizeof(pid_t)));
}

// Asks the zygote to retire (its spares let go) and reaps the spares it names: they are this
// process's children. A zygote that does not answer leaves them (they end with it).
void reap_retired_spares() {
  for (pid_t pid : ask_for_pids(kRetire)) {
    if (pid <= 0) continue;
    ::kill(pid, SIGKILL);  // a spare waits on its socket: nothing of it is worth keeping
    ::waitpid(pid, nullptr, 0);
  }
}

void forget_zygote() {
  if (zygote_fd >= 0) reap_retired_spares();
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
  const std::string request = packed(argv);
  if (request.size() > kMaxRequest) return std::nullopt;
  pid_t worker = -1;
  pollfd wait{zygote_fd, POLLIN, 0};
  if (!send_request(zygote_fd, request, output_fd) || ::poll(&wait, 1, kReplyTimeoutMs) != 1 ||
      ::recv(zygote_fd, &worker, sizeof(worker), 0) != sizeof(worker) || worker <= 0) {
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

std::vector<pid_t> worker_zygote_spare_pids() {
  std::lock_guard<std::mutex> lock(zygote_mutex);
  return zygote_fd >= 0 ? ask_for_pids(kListSpares) : std::vector<pid_t>{};
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
