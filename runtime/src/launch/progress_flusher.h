// The rank worker's progress flusher thread, as a test sees it from inside a task.
#pragma once

#include <cstddef>

namespace distmetrics::runtime::detail {

struct ProgressFlusher {
  bool running = false;            // the thread started (without it every message is sent at once)
  std::size_t stack_bytes = 0;     // the stack size it was started with
  std::size_t static_tls_bytes = 0;  // the loaded objects' static TLS, which glibc takes from it
};

// In a rank worker while a task runs; outside one, `running` is false.
ProgressFlusher progress_flusher();

}  // namespace distmetrics::runtime::detail
