// The gloo backend through torch's Python binding (docs/gpu.md): built where LibTorch ships no
// gloo headers (DISTMETRICS_GLOO_THROUGH_PYTHON). Its Python part, gloo_through_python.cpp, is a
// module of its own, libdistmetrics_gloo_python.so (modules.cmake): it links libpython and
// libtorch_python, and libtorch_python links LibTorch's CUDA side, which a process that makes no
// gloo group never loads. The runtime loads it with the process's first gloo group, or when a
// supervisor or a peer rank loads what its forked workers need (backends.cpp).
#pragma once

#include <optional>
#include <string>

#include "distmetrics/runtime/backends.h"
#include "distmetrics/runtime/rank_pool.h"

namespace distmetrics::runtime::detail {

// What the module gives the runtime: its C entry point kGlooThroughPythonEntry returns it.
struct GlooThroughPython {
  CommunicatorFactory make;  // the gloo backend's communicator
  // torch.distributed imported into this process (the first call: seconds), and the hooks that
  // keep the interpreter sound across fork; nullopt when it cannot be imported.
  std::optional<ForkHooks> (*load_for_forked_workers)();
  long (*embedded_python_started_by)();  // runtime/embedded_python.h, as the module sees it
};
inline constexpr const char* kGlooThroughPythonModule = "libdistmetrics_gloo_python.so";
inline constexpr const char* kGlooThroughPythonEntry = "distmetrics_gloo_through_python";

// The module, loaded on the first call (ConfigError when it cannot be: the file and why).
const GlooThroughPython& gloo_through_python();

// The task the gloo backend's descriptor names as its pool warm-up (Backend::pool_warm_up_task):
// its communicator has imported torch.distributed and made this process's first group.
inline constexpr const char* kGlooThroughPythonWarmUpTask = "runtime/gloo-warm-up";

// How many groups this process has made through torch's binding (the module counts each), and
// how many times it has run the warm-up task: what the pool tests read to see that a first job's
// group was not the first.
int gloo_groups_made_through_python();
int gloo_warm_ups_run();
void count_gloo_group_made_through_python();

// The process that started this process's embedded interpreter (embedded_python.h): in a worker
// forked from a zygote that had it, the supervisor's pid; 0 when none runs yet, or the module is
// not loaded here.
long embedded_python_started_by_pid();

}  // namespace distmetrics::runtime::detail
