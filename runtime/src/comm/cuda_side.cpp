// LibTorch's CUDA side (backends.h: load_cuda_side, visible_gpu_count). Against a CUDA LibTorch
// distmetrics links only libtorch_cpu (cmake/DistmetricsDependencies.cmake: DISTMETRICS_TORCH_LINK);
// libtorch_cuda (its kernels, cuBLAS, cuDNN, NCCL, ...: ~0.15 s of CPU and ~150 MB per process)
// is loaded here, into a process about to use a GPU. Its static initialisers register its kernels
// and torch's CUDA hooks, after which LibTorch works on CUDA tensors as in a program linked with it.
#include <ATen/detail/CUDAHooksInterface.h>

#include <dlfcn.h>
#include <link.h>

#include <cstring>

#include <mutex>
#include <optional>
#include <string>

#include "distmetrics/build_config.h"
#include "distmetrics/runtime/backends.h"

// The absolute path of the CUDA LibTorch's libtorch_cuda (set by the build on this file); empty
// where LibTorch is linked whole or has no CUDA.
#ifndef DISTMETRICS_TORCH_CUDA_LIBRARY
#define DISTMETRICS_TORCH_CUDA_LIBRARY ""
#endif

namespace distmetrics::runtime {
namespace {

constexpr const char* kTorchCuda = DISTMETRICS_TORCH_CUDA_LIBRARY;

// libtorch_cuda is in this process: loaded here, linked by the program (the test programs link
// the whole LibTorch), or brought by Python's `import torch` (libtorch_python needs it). Read from
// the list of loaded objects, which asking the loader (RTLD_NOLOAD) would not leave untouched.
bool cuda_side_in_process() {
  if (!DISTMETRICS_TORCH_HAS_CUDA) return false;
  if (*kTorchCuda == '\0') return true;  // linked whole: no CPU-only half to be in
  const auto is_torch_cuda = [](dl_phdr_info* info, std::size_t, void*) -> int {
    const char* name = info->dlpi_name;
    const char* base = name != nullptr ? std::strrchr(name, '/') : nullptr;
    return base != nullptr && std::strcmp(base, "/libtorch_cuda.so") == 0;
  };
  return ::dl_iterate_phdr(is_torch_cuda, nullptr) != 0;
}

// How many GPUs the NVIDIA driver shows this process (CUDA_VISIBLE_DEVICES applied by the
// driver), asked without LibTorch: no driver library, no GPU. As cudaGetDeviceCount, which
// torch's count calls, it initialises the driver in this process.
int driver_gpu_count() {
  static const int count = [] {
    void* driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);  // kept: the driver stays initialised
    if (driver == nullptr) return 0;
    using Init = int (*)(unsigned int);
    using IntOut = int (*)(int*);
    const auto init = reinterpret_cast<Init>(::dlsym(driver, "cuInit"));
    const auto device_count = reinterpret_cast<IntOut>(::dlsym(driver, "cuDeviceGetCount"));
    const auto driver_version = reinterpret_cast<IntOut>(::dlsym(driver, "cuDriverGetVersion"));
    int n = 0;
    if (init == nullptr || device_count == nullptr || init(0) != 0 || device_count(&n) != 0) return 0;
    // A driver older than the CUDA runtime LibTorch was built with (its major version) runs none
    // of its kernels: torch counts no GPU there, and neither do we. libcudart is libtorch_cpu's.
    const auto runtime_version = reinterpret_cast<IntOut>(::dlsym(RTLD_DEFAULT, "cudaRuntimeGetVersion"));
    int driver_v = 0, runtime_v = 0;
    if (driver_version != nullptr && runtime_version != nullptr && driver_version(&driver_v) == 0 &&
        runtime_version(&runtime_v) == 0 && driver_v / 1000 < runtime_v / 1000)
      return 0;
    return n;
  }();
  return count;
}

}  // namespace

std::optional<std::string> load_cuda_side() {
  if (!DISTMETRICS_TORCH_HAS_CUDA) return std::string("LibTorch " DISTMETRICS_TORCH_VERSION " has no CUDA");
  static std::mutex mutex;
  static bool tried = false;
  static std::optional<std::string> failure;
  std::lock_guard<std::mutex> lock(mutex);
  if (tried) return failure;
  tried = true;
  if (*kTorchCuda != '\0' && ::dlopen(kTorchCuda, RTLD_LAZY | RTLD_GLOBAL) == nullptr) {
    const char* why = ::dlerror();
    failure = std::string("cannot load LibTorch's CUDA side (") + kTorchCuda + "): " + (why ? why : "unknown error");
    return failure;
  }
  // torch settles which CUDA hooks a process has on the first question and keeps them: asked
  // before libtorch_cuda was there, they stay the CPU-only ones, which refuse to say anything.
  try {
    (void)at::detail::getCUDAHooks().versionCUDART();
  } catch (const std::exception&) {
    failure = std::string("LibTorch's CUDA side came too late in this process: LibTorch had been asked about CUDA "
                          "before it was loaded, and keeps that CPU-only answer (load_cuda_side() must come first)");
  }
  return failure;
}

int visible_gpu_count() {
  if (!DISTMETRICS_TORCH_HAS_CUDA) return 0;
  if (!cuda_side_in_process()) return driver_gpu_count();
  try {
    return static_cast<int>(at::detail::getCUDAHooks().getNumGPUs());
  } catch (const std::exception&) {
    return 0;  // a CUDA build on a machine without a driver
  }
}

}  // namespace distmetrics::runtime
