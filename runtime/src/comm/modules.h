// The runtime's modules: shared objects beside libdistmetrics_runtime.so that a backend loads when
// it is first used (runtime/src/comm/modules.cmake), so that a process that never uses that backend
// never loads what it links: the nccl backend (libtorch_cuda, NCCL) and gloo through torch's
// Python binding (libpython, libtorch_python and, through them, LibTorch's CUDA side).
#pragma once

namespace distmetrics::runtime::detail {

// The module `file` (loaded once per process, RTLD_GLOBAL: what it loads, libpython among them,
// serves the extension modules Python imports later) and its C entry point `entry`. Throws
// ConfigError naming the file and why it could not be loaded.
void* runtime_module_entry(const char* file, const char* entry);

}  // namespace distmetrics::runtime::detail
