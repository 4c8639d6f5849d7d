// LibTorch's CUDA side, loaded on demand (backends.h: visible_gpu_count, load_cuda_side; the nccl
// module). This program links the runtime and nothing more of LibTorch than the runtime does (its
// CPU side, on a CUDA LibTorch), as the distmetrics command does; each case runs in a fresh child
// process, since what a process has loaded, and what LibTorch has settled, lasts as long as it.
#include <gtest/gtest.h>

#include <ATen/detail/CUDAHooksInterface.h>

#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "../src/comm/modules.h"
#include "distmetrics/build_config.h"
#include "distmetrics/runtime/backends.h"
#include "distmetrics/runtime/errors.h"

namespace {

using distmetrics::runtime::load_cuda_side;
using distmetrics::runtime::visible_gpu_count;

// Whether this process has mapped a shared object whose file name is `name` (/proc/self/maps).
bool mapped(const std::string& name) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.size() > name.size() && line.compare(line.size() - name.size() - 1, std::string::npos, "/" + name) == 0) return true;
  return false;
}

// Runs `body` in a forked child (single-threaded here: the test main starts none) and returns
// what it reported: "" when every check held, else what did not.
std::string in_fresh_process(const std::function<std::string()>& body) {
  int out[2];
  if (::pipe(out) != 0) return "pipe failed";
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(out[0]);
    std::string text;
    try {
      text = body();
    } catch (const std::exception& e) {
      text = std::string("threw: ") + e.what();
    }
    (void)!::write(out[1], text.data(), text.size());
    ::_exit(0);
  }
  ::close(out[1]);
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = ::read(out[0], buffer, sizeof buffer)) > 0;) text.append(buffer, static_cast<std::size_t>(n));
  ::close(out[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) text += " (the child died: status " + std::to_string(status) + ")";
  return text;
}

bool split_build() { return std::string(DISTMETRICS_TEST_TORCH_CUDA_LIBRARY).size() > 0; }

TEST(CudaSide, CountingGpusLoadsNothingAndLoadingItGivesLibTorchItsCudaHooks) {
  if (!split_build())
    GTEST_SKIP() << "this LibTorch (" DISTMETRICS_TORCH_VERSION ") has no CUDA side of its own to load: CPU-only, or linked whole";
  EXPECT_EQ(in_fresh_process([] {
              std::ostringstream problems;
              if (mapped("libtorch_cuda.so")) problems << "libtorch_cuda was mapped at start; ";
              const int counted = visible_gpu_count();  // the NVIDIA driver's answer: nothing of LibTorch's loaded
              for (const char* library : {"libtorch_cuda.so", "libnccl.so.2", "libcudnn.so.9"})
                if (mapped(library)) problems << library << " was mapped by counting GPUs; ";
              if (auto why = load_cuda_side()) problems << "load_cuda_side: " << *why << "; ";
              if (!mapped("libtorch_cuda.so")) problems << "libtorch_cuda is not mapped after load_cuda_side; ";
              // The hooks are libtorch_cuda's now: the CPU-only ones refuse to name a CUDA runtime.
              if (at::detail::getCUDAHooks().versionCUDART() <= 0) problems << "no CUDA runtime version; ";
              // LibTorch's count, now that it can give one, is the driver's.
              if (visible_gpu_count() != counted)
                problems << "LibTorch counts " << visible_gpu_count() << " GPUs, the driver " << counted << "; ";
              if (load_cuda_side()) problems << "a second load_cuda_side failed; ";
              return problems.str();
            }),
            "");
}

TEST(CudaSide, LoadedAfterLibTorchWasAskedAboutCudaItSaysWhyItCannotHelp) {
  if (!split_build()) GTEST_SKIP() << "this LibTorch has no CUDA side of its own to load";
  EXPECT_EQ(in_fresh_process([] {
              (void)at::detail::getCUDAHooks().hasCUDA();  // LibTorch settles on its CPU-only hooks here
              const auto why = load_cuda_side();
              if (!why) return std::string("load_cuda_side said nothing");
              if (why->find("came too late") == std::string::npos) return "unexpected reason: " + *why;
              return std::string();
            }),
            "");
}

TEST(CudaSide, ACpuOnlyLibTorchHasNoneAndCountsNoGpu) {
  if (DISTMETRICS_TORCH_HAS_CUDA) GTEST_SKIP() << "LibTorch " DISTMETRICS_TORCH_VERSION " has CUDA";
  EXPECT_EQ(visible_gpu_count(), 0);
  const auto why = load_cuda_side();
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(*why, "LibTorch " DISTMETRICS_TORCH_VERSION " has no CUDA");
}

// The nccl backend is a module the runtime loads with a process's first nccl communicator: it
// gives the backend's factory and brings LibTorch's CUDA side and NCCL with it.
TEST(CudaSide, TheNcclModuleGivesTheBackendItsFactory) {
  if (!DISTMETRICS_HAVE_NCCL) GTEST_SKIP() << "this build has no NCCL";
  EXPECT_EQ(in_fresh_process([] {
              std::ostringstream problems;
              if (split_build() && mapped("libnccl.so.2")) problems << "libnccl was mapped at start; ";
              void* factory = distmetrics::runtime::detail::runtime_module_entry("libdistmetrics_nccl.so",
                                                                                 "distmetrics_nccl_communicator");
              if (reinterpret_cast<distmetrics::runtime::CommunicatorFactory (*)()>(factory)() == nullptr)
                problems << "no factory; ";
              for (const char* library : {"libdistmetrics_nccl.so", "libtorch_cuda.so", "libnccl.so.2"})
                if (!mapped(library)) problems << library << " is not mapped after the module was loaded; ";
              return problems.str();
            }),
            "");
}

TEST(CudaSide, AModuleThatIsNotThereIsNamedWithTheReason) {
  try {
    distmetrics::runtime::detail::runtime_module_entry("libdistmetrics_no_such_module.so", "entry");
    FAIL() << "no exception";
  } catch (const distmetrics::runtime::ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cannot load "), std::string::npos) << what;
    EXPECT_NE(what.find("/libdistmetrics_no_such_module.so: "), std::string::npos) << what;
    EXPECT_NE(what.find("No such file or directory"), std::string::npos) << what;
  }
}

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
