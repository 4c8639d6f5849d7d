// The gloo backend through torch's Python binding (gloo_through_python.cpp; docs/gpu.md): only a
// build with DISTMETRICS_GLOO_THROUGH_PYTHON compiles it.
#pragma once

#include <optional>
#include <string>

#include "distmetrics/runtime/rank_pool.h"

namespace distmetrics::runtime::detail {

// Why torch's Python package cannot give gloo in this process (nullopt: it can). The first call
// starts the embedded interpreter and imports torch.distributed (seconds); later ones are free.
std::optional<std::string> gloo_through_python_unavailable();

// The gloo backend's Backend::load_for_forked_workers on this route: torch.distributed imported
// into this process (gloo_through_python_unavailable), and the hooks that keep the interpreter
// sound across fork; nullopt when it cannot be imported.
std::optional<ForkHooks> gloo_through_python_load_for_forked_workers();

// The process that started this process's embedded interpreter (embedded_python.h): in a worker
// forked from a zygote that had it, the supervisor's pid; 0 when none runs yet.
long embedded_python_started_by_pid();

// The task the gloo backend's descriptor names as its pool warm-up (Backend::pool_warm_up_task):
// its communicator has imported torch.distributed and made this process's first group.
inline constexpr const char* kGlooThroughPythonWarmUpTask = "runtime/gloo-warm-up";

// How many groups this process has made through torch's binding, and how many times it has run
// the warm-up task (what the pool tests read to see that a first job's group was not the first).
int gloo_groups_made_through_python();
int gloo_warm_ups_run();

}  // namespace distmetrics::runtime::detail
