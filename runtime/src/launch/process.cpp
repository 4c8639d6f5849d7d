#include "process.h"

#include <dirent.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "distmetrics/runtime/errors.h"

extern char** environ;

namespace distmetrics::runtime::detail {

const char* signal_name(int signal) {
  switch (signal) {
    case SIGABRT: return "SIGABRT";
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGHUP: return "SIGHUP";
    case SIGPIPE: return "SIGPIPE";
    case SIGQUIT: return "SIGQUIT";
    case SIGTRAP: return "SIGTRAP";
    case SIGSYS: return "SIGSYS";
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    case SIGALRM: return "SIGALRM";
    case SIGXCPU: return "SIGXCPU";
    case SIGSTOP: return "SIGSTOP";
    case SIGTSTP: return "SIGTSTP";
    case SIGTTIN: return "SIGTTIN";
    case SIGTTOU: return "SIGTTOU";
    default: return nullptr;
  }
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = signal_name(sig);
    std::string text = "killed by signal " + std::to_string(sig) + " (" + (name ? name : strsignal(sig)) + ")";
    if (WCOREDUMP(status)) text += ", core dumped";
    return text;
  }
  return "wait status " + std::to_string(status);
}

namespace {
// The child's argv and environment (this process's, with spec.extra_env added or replacing) as
// exec wants them; the pointers stay valid as long as this lives.
struct ExecVectors {
  explicit ExecVectors(const SpawnSpec& spec) : args(spec.argv) {
    for (char** e = environ; e && *e; ++e) {
      std::string entry(*e);
      const std::string key = entry.substr(0, entry.find('='));
      if (spec.extra_env.count(key) == 0) env.push_back(std::move(entry));
    }
    for (const auto& [key, value] : spec.extra_env) env.push_back(key + "=" + value);
    for (auto& s : env) envp.push_back(s.data());
    envp.push_back(nullptr);
    for (auto& s : args) argv.push_back(s.data());
    argv.push_back(nullptr);
  }
  std::vector<std::string> args, env;
  std::vector<char*> argv, envp;
};
}  // namespace

pid_t spawn_process(const SpawnSpec& spec) {
  if (spec.argv.empty()) throw ConfigError("spawn: no program given");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  if (spec.output_fd >= 0) {
    posix_spawn_file_actions_adddup2(&actions, spec.output_fd, 1);
    posix_spawn_file_actions_adddup2(&actions, spec.output_fd, 2);
  }
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  // Descriptors opened without CLOEXEC by libraries (store sockets, other pools' pipes) must
  // not leak into workers: a leaked copy of a socket hides the EOF that tells a peer we died.
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
#endif

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  sigset_t defaults;  // a supervisor that ignores SIGPIPE or SIGTERM must not pass that on
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2, SIGALRM})
    sigaddset(&defaults, sig);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  if (spec.own_process_group) {
    // Whatever the child forks stays in its group, so that ending the group ends them all.
    posix_spawnattr_setpgroup(&attr, 0);
    flags |= POSIX_SPAWN_SETPGROUP;
  }
  posix_spawnattr_setflags(&attr, flags);

  ExecVectors exec(spec);
  char** argv = exec.argv.data();
  char** envp = exec.envp.data();

  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &actions, &attr, argv, envp);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    throw ConfigError("could not start " + spec.argv[0] + ": " + std::strerror(rc));
  }
  return pid;
}

namespace {

// What the child of spawn_process_on_own_loopback tells its parent through a close-on-exec pipe
// before it execs (nothing when all went well: the pipe just closes).
struct ChildReport {
  enum Kind : int { NoNamespace = 1, HalfMadeNamespace = 2, ExecFailed = 3 } kind;
  int error;      // errno
  int step;       // index into kChildSteps
};
constexpr const char* kChildSteps[] = {"unshare(CLONE_NEWNET)", "unshare(CLONE_NEWUSER | CLONE_NEWNET)",
                                       "writing its user and group maps", "bringing its loopback interface up",
                                       "exec"};

// Between fork and exec, so async-signal-safe calls only.
bool write_all(int fd, const char* text, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, text, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    text += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

bool write_proc_file(const char* path, const std::string& text) {
  const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = write_all(fd, text.data(), text.size());
  ::close(fd);
  return ok;
}

void report_to_parent(int fd, ChildReport::Kind kind, int error, int step) {
  const ChildReport report{kind, error, step};
  write_all(fd, reinterpret_cast<const char*>(&report), sizeof(report));
}

// In the child: a network namespace with only loopback, up. 0 when done; else -1 with *step set
// and errno, the child still in its parent's namespace (*half_made false) or in a new one it
// could not set up (*half_made true).
int enter_own_loopback(const std::string& uid_map, const std::string& gid_map, int* step, bool* half_made) {
  *half_made = false;
  *step = 0;
  if (::unshare(CLONE_NEWNET) != 0) {
    *step = 1;
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0) return -1;
    *half_made = true;
    *step = 2;
    if (!write_proc_file("/proc/self/setgroups", "deny") || !write_proc_file("/proc/self/uid_map", uid_map) ||
        !write_proc_file("/proc/self/gid_map", gid_map))
      return -1;
  }
  *half_made = true;
  *step = 3;
  const int sock = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (sock < 0) return -1;
  ifreq request{};
  std::memcpy(request.ifr_name, "lo", 3);
  int rc = ::ioctl(sock, SIOCGIFFLAGS, &request);
  if (rc == 0) {
    request.ifr_flags = static_cast<short>(request.ifr_flags | IFF_UP);
    rc = ::ioctl(sock, SIOCSIFFLAGS, &request);
  }
  const int error = errno;
  ::close(sock);
  errno = error;
  return rc;
}

// Closes every descriptor from 3 on but `keep`.
void close_descriptors_but(int keep, int limit) {
#ifdef SYS_close_range
  if (::syscall(SYS_close_range, 3u, static_cast<unsigned>(keep - 1), 0u) == 0 &&
      ::syscall(SYS_close_range, static_cast<unsigned>(keep + 1), ~0u, 0u) == 0)
    return;
#endif
  for (int fd = 3; fd < limit; ++fd)
    if (fd != keep) ::close(fd);
}

// fork + exec with what spawn_process's posix_spawn attributes do, the child first entering a
// network namespace of its own when `own_loopback`. Returns the pid, with the child's report
// when it sent one.
pid_t fork_exec(const SpawnSpec& spec, char** argv, char** envp, std::optional<ChildReport>& report) {
  const std::string uid_map = std::to_string(::geteuid()) + " " + std::to_string(::geteuid()) + " 1\n";
  const std::string gid_map = std::to_string(::getegid()) + " " + std::to_string(::getegid()) + " 1\n";
  rlimit files{};
  const int limit = ::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < 65536 ? static_cast<int>(files.rlim_cur) : 65536;
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw ConfigError(std::string("could not start ") + argv[0] + ": pipe: " + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int error = errno;
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    throw ConfigError(std::string("could not start ") + argv[0] + ": fork: " + std::strerror(error));
  }
  if (pid == 0) {
    const int out = pipe_fds[1];
    sigset_t none;
    sigemptyset(&none);
    for (int sig : {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2, SIGALRM}) ::signal(sig, SIG_DFL);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (spec.own_process_group) ::setpgid(0, 0);
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0 && null_fd != 0) {
      ::dup2(null_fd, 0);
      ::close(null_fd);
    }
    if (spec.output_fd >= 0) {
      ::dup2(spec.output_fd, 1);
      ::dup2(spec.output_fd, 2);
    }
    close_descriptors_but(out, limit);
    int step = 0;
    bool half_made = false;
    if (enter_own_loopback(uid_map, gid_map, &step, &half_made) != 0) {
      report_to_parent(out, half_made ? ChildReport::HalfMadeNamespace : ChildReport::NoNamespace, errno, step);
      if (half_made) ::_exit(127);
    }
    ::execve(argv[0], argv, envp);
    report_to_parent(out, ChildReport::ExecFailed, errno, 4);
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  // The child writes at most two reports, then execs (closing the pipe) or exits: it takes
  // a few system calls, but a deadline bounds the wait all the same.
  ChildReport received{};
  std::size_t got = 0;
  const Deadline deadline = Deadline::after(std::chrono::seconds(10));
  while (!deadline.expired()) {
    pollfd ready{pipe_fds[0], POLLIN, 0};
    if (::poll(&ready, 1, 100) <= 0) continue;
    const ssize_t n = ::read(pipe_fds[0], reinterpret_cast<char*>(&received) + got, sizeof(received) - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // exec'd, or exited
    got += static_cast<std::size_t>(n);
    if (got == sizeof(received)) {
      if (!report || report->kind == ChildReport::NoNamespace) report = received;
      got = 0;
    }
  }
  ::close(pipe_fds[0]);
  return pid;
}

}  // namespace

pid_t spawn_process_on_own_loopback(const SpawnSpec& spec, std::string& refused) {
  if (spec.argv.empty()) throw ConfigError("spawn: no program given");
  ExecVectors exec(spec);
  char** argv = exec.argv.data();
  char** envp = exec.envp.data();

  std::optional<ChildReport> report;
  const pid_t pid = fork_exec(spec, argv, envp, report);
  refused.clear();
  if (!report) return pid;
  const std::string why = std::string(kChildSteps[report->step]) + ": " + std::strerror(report->error);
  if (report->kind == ChildReport::NoNamespace) {
    refused = why;
    return pid;
  }
  int status = 0;
  ::waitpid(pid, &status, 0);  // it exits right after its report
  if (report->kind == ChildReport::ExecFailed) throw ConfigError("could not start " + spec.argv[0] + ": " + std::strerror(report->error));
  // A namespace it could not set up: this process's network it is.
  refused = why;
  return spawn_process(spec);
}


namespace {

// Parses "[job,rank]<stream>:" at `pos`; returns the rank and moves `pos` past the tag.
std::optional<int> parse_tag(const std::string& text, size_t& pos) {
  size_t i = pos;
  auto digits = [&]() {
    const size_t start = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    return i > start;
  };
  if (i >= text.size() || text[i] != '[') return std::nullopt;
  ++i;
  if (!digits() || i >= text.size() || text[i] != ',') return std::nullopt;
  const size_t rank_start = ++i;
  if (!digits()) return std::nullopt;
  const int rank = std::stoi(text.substr(rank_start, i - rank_start));
  if (text.compare(i, 2, "]<") != 0) return std::nullopt;
  const size_t close = text.find(">:", i + 2);
  if (close == std::string::npos || close - i > 12) return std::nullopt;
  pos = close + 2;
  return rank;
}

}  // namespace

std::string mpirun_rank_output(const std::string& tagged, int rank, bool with_launcher_lines) {
  std::string mine, launcher;
  int current = -1;  // -1: mpirun's own text (a line that starts without a tag)
  size_t pos = 0;
  while (pos < tagged.size()) {
    if (tagged[pos] == '[') {
      size_t after = pos;
      if (auto tag_rank = parse_tag(tagged, after)) {
        current = *tag_rank;
        pos = after;
        continue;
      }
    }
    // Up to the next tag or the end of the line.
    size_t end = pos;
    while (end < tagged.size() && tagged[end] != '\n') {
      size_t probe = end;
      if (tagged[end] == '[' && end > pos && parse_tag(tagged, probe)) break;
      ++end;
    }
    const bool newline = end < tagged.size() && tagged[end] == '\n';
    std::string piece = tagged.substr(pos, end - pos) + (newline ? "\n" : "");
    if (current == rank) mine += piece;
    else if (current == -1 && !piece.empty() && piece != "\n") launcher += "mpirun: " + piece;
    pos = end + (newline ? 1 : 0);
    if (newline) current = -1;
  }
  if (with_launcher_lines) mine += launcher;
  return mine;
}

std::string current_executable() {
  std::vector<char> buffer(4096);
  const ssize_t n = readlink("/proc/self/exe", buffer.data(), buffer.size() - 1);
  if (n <= 0) throw ConfigError(std::string("cannot resolve /proc/self/exe: ") + std::strerror(errno));
  return std::string(buffer.data(), static_cast<size_t>(n));
}

OutputCapture::OutputCapture(const std::string& name) {
  fd_ = memfd_create(name.c_str(), MFD_CLOEXEC);
  if (fd_ < 0) throw ConfigError(std::string("memfd_create: ") + std::strerror(errno));
  fcntl(fd_, F_SETFL, fcntl(fd_, F_GETFL) | O_APPEND);
}

OutputCapture::~OutputCapture() {
  if (fd_ >= 0) ::close(fd_);
}

void OutputCapture::clear() {
  if (ftruncate(fd_, 0) != 0) { /* nothing useful to do: the tail just holds more */ }
}

std::string OutputCapture::tail(size_t max_bytes) const {
  struct stat st {};
  if (fstat(fd_, &st) != 0 || st.st_size <= 0) return "";
  const off_t size = st.st_size;
  const off_t start = size > static_cast<off_t>(max_bytes) ? size - static_cast<off_t>(max_bytes) : 0;
  std::string text(static_cast<size_t>(size - start), '\0');
  const ssize_t n = pread(fd_, text.data(), text.size(), start);
  if (n <= 0) return "";
  text.resize(static_cast<size_t>(n));
  if (start > 0) {
    const auto newline = text.find('\n');
    if (newline != std::string::npos) text.erase(0, newline + 1);
  }
  return text;
}

void write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

}  // namespace distmetrics::runtime::detail
