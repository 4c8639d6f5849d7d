// A rank worker telling its supervisor how it died (dying_report.h). The signal path is
// async-signal-safe: no allocation.
#include "dying_report.h"

#include <execinfo.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstring>

#include "wire.h"

namespace distmetrics::runtime::detail {

char task_context[kTaskContextBytes];
std::atomic<size_t> task_context_length{0};
std::atomic<int> worker_rank{-1};

namespace {

std::atomic<int> dying_report_fd{-1};

size_t append(char* out, size_t at, size_t cap, const char* text) {
  while (*text && at + 1 < cap) out[at++] = *text++;
  return at;
}

size_t append_int(char* out, size_t at, size_t cap, int value) {
  char digits[16];
  int n = 0;
  unsigned v = value < 0 ? static_cast<unsigned>(-value) : static_cast<unsigned>(value);
  do {
    digits[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v && n < 15);
  if (value < 0 && at + 1 < cap) out[at++] = '-';
  while (n > 0 && at + 1 < cap) out[at++] = digits[--n];
  return at;
}

// " (NAME)" where there is a name, then " in <what the rank was doing>" where it said: the tail
// both the dying message and the crash banner give (async-signal-safe, as append is).
size_t append_name_and_context(char* out, size_t at, size_t cap, const char* name) {
  if (name) {
    at = append(out, at, cap, " (");
    at = append(out, at, cap, name);
    at = append(out, at, cap, ")");
  }
  const size_t context = task_context_length.load();
  if (context > 0) {
    at = append(out, at, cap, " in ");
    for (size_t i = 0; i < context && at + 1 < cap; ++i) out[at++] = task_context[i];
  }
  return at;
}

// `signal`: the signal it died of, 0 for an exit (sent as its own field, for the diagnosis).
void report_dying(const char* how, int number, const char* name, int signal) {
  const int fd = dying_report_fd.exchange(-1);
  if (fd < 0) return;
  write_queued_progress(fd);  // the collectives it entered and left before it died, in order
  char line[360];
  size_t n = 0;
  n = append(line, n, sizeof(line), "{\"type\":\"dying\",\"how\":\"");
  n = append(line, n, sizeof(line), how);
  n = append_int(line, n, sizeof(line), number);
  n = append_name_and_context(line, n, sizeof(line), name);
  n = append(line, n, sizeof(line), "\"");
  if (signal != 0) {
    n = append(line, n, sizeof(line), ",\"signal\":");
    n = append_int(line, n, sizeof(line), signal);
  }
  n = append(line, n, sizeof(line), "}\n");
  ssize_t ignored = ::send(fd, line, n, MSG_NOSIGNAL);
  (void)ignored;
}

// On the rank's stderr (its log tail): what it was doing and where it died, as frames with
// their (mangled) symbols; the supervisor demangles them for the report.
void write_crash_banner(int sig) {
  char line[360];
  size_t n = 0;
  n = append(line, n, sizeof(line), "distmetrics: rank ");
  n = append_int(line, n, sizeof(line), worker_rank.load());
  n = append(line, n, sizeof(line), " killed by signal ");
  n = append_int(line, n, sizeof(line), sig);
  n = append_name_and_context(line, n, sizeof(line), signal_name(sig));
  n = append(line, n, sizeof(line), "; backtrace:\n");
  ssize_t ignored = ::write(2, line, n);
  void* frames[24];
  const int depth = ::backtrace(frames, 24);
  // Frame 0 is this function, 1 the handler, 2 the signal trampoline.
  if (depth > 2) ::backtrace_symbols_fd(frames + 2, depth - 2, 2);
  (void)ignored;
}

void on_fatal_signal(int sig) {
  write_crash_banner(sig);  // first: the supervisor reads the log tail once it hears we are dying
  report_dying("killed by signal ", sig, signal_name(sig), sig);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void on_process_exit(int status, void*) { report_dying("exit status ", status, nullptr, 0); }

}  // namespace

void arm_dying_report(int fd) {
  static const bool registered = [] {
    on_exit(&on_process_exit, nullptr);
    return true;
  }();
  (void)registered;
  dying_report_fd = fd;
  void* warm[1];
  ::backtrace(warm, 1);  // loads the unwinder now: the first call may allocate, a handler must not
  struct sigaction action {};
  action.sa_handler = &on_fatal_signal;
  sigemptyset(&action.sa_mask);
  for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) sigaction(sig, &action, nullptr);
}

void disarm_dying_report() { dying_report_fd = -1; }

}  // namespace distmetrics::runtime::detail
