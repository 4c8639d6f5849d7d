// A library with 512 KiB of initial-exec (static) thread-local storage, as a rank that loads the
// CUDA torch 2.x wheel and numpy has some 330 KiB: glibc takes it from every new thread's stack.
#include <cstddef>

// External linkage, so the compiler keeps the block whole.
__attribute__((tls_model("initial-exec"))) thread_local char static_tls_block[512 * 1024];

std::size_t static_tls_block_touch(std::size_t i) {
  static_tls_block[i % sizeof static_tls_block] = 1;
  return sizeof static_tls_block;
}
