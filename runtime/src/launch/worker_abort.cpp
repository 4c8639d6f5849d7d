#include "worker_abort.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "distmetrics/runtime/errors.h"
#include "worker_args.h"

namespace distmetrics::runtime::detail {
namespace {

// The abort pipe: the signal's handler writes a byte to its write end (all a handler may safely
// do here), the watchdog reads the other.
int abort_pipe[2] = {-1, -1};

void on_abort_signal(int) {
  const int saved = errno;
  const char byte = 1;
  ssize_t ignored = ::write(abort_pipe[1], &byte, 1);
  (void)ignored;
  errno = saved;
}

}  // namespace

int arm_abort_signal() {
  if (::pipe2(abort_pipe, O_CLOEXEC | O_NONBLOCK) != 0) throw ConfigError("worker: pipe2 failed");
  handle_abort_signal();
  return abort_pipe[0];
}

void handle_abort_signal() {
  struct sigaction action {};
  action.sa_handler = on_abort_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  ::sigaction(kWorkerAbortSignal, &action, nullptr);
}

bool take_abort_signals() {
  char drained[64];
  bool came = false;
  while (::read(abort_pipe[0], drained, sizeof(drained)) > 0) came = true;
  return came;
}

void disarm_abort_signal() {
  ::signal(kWorkerAbortSignal, SIG_IGN);
  for (int& fd : abort_pipe) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
}

int shut_down_tcp_connections() {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return 0;
  int shut = 0;
  while (dirent* entry = ::readdir(dir)) {
    char* end = nullptr;
    const long number = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || number == ::dirfd(dir)) continue;
    const int fd = static_cast<int>(number);
    struct stat status {};
    if (::fstat(fd, &status) != 0 || !S_ISSOCK(status.st_mode)) continue;
    int domain = 0, type = 0, listening = 0;
    socklen_t size = sizeof(int);
    if (::getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &size) != 0 || (domain != AF_INET && domain != AF_INET6)) continue;
    size = sizeof(int);
    if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &size) != 0 || type != SOCK_STREAM) continue;
    size = sizeof(int);
    if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &size) != 0 || listening != 0) continue;
    if (::shutdown(fd, SHUT_RDWR) == 0) ++shut;
  }
  ::closedir(dir);
  return shut;
}

}  // namespace distmetrics::runtime::detail
