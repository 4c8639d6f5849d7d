#include "peer_teardown.h"

#include <signal.h>

#include <atomic>

namespace distmetrics::runtime::detail {

namespace {

std::atomic<bool> installed{false};
std::atomic<bool> held{false};
std::atomic<int> recorded{0};
struct sigaction previous {};

// Async-signal-safe: atomics, sigaction and raise only.
void on_teardown(int sig) {
  if (held.load()) {
    recorded.store(sig);
    return;
  }
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  ::sigemptyset(&fallback.sa_mask);
  ::sigaction(sig, &fallback, nullptr);
  ::raise(sig);  // delivered as the handler returns: the default action, as if never caught
}

}  // namespace

void install_teardown_handler() {
  if (installed.load()) return;
  struct sigaction current {};
  if (::sigaction(SIGTERM, nullptr, &current) != 0 || current.sa_handler != SIG_DFL) return;
  struct sigaction action {};
  action.sa_handler = on_teardown;
  ::sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  previous = current;
  if (::sigaction(SIGTERM, &action, nullptr) == 0) installed.store(true);
}

void hold_teardown(bool hold) {
  held.store(hold);
  if (!hold && recorded.load() != 0) ::raise(recorded.load());  // handled as not held: the default action
}

int teardown_signal() { return recorded.load(); }

void restore_teardown_handler() {
  if (!installed.exchange(false)) return;
  held.store(false);
  ::sigaction(SIGTERM, &previous, nullptr);
  if (recorded.load() != 0) ::raise(recorded.load());
}

}  // namespace distmetrics::runtime::detail
