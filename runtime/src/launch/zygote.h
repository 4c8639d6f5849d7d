// The worker zygote (see start_worker_zygote() in rank_pool.h): a copy of the supervisor's
// process taken before any thread started, which forks rank workers on request. A forked worker
// starts in milliseconds; an exec'd one loads the binary and LibTorch's ~300 shared libraries
// again (about 0.4 s of CPU each, most of a small run's start-up).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace distmetrics::runtime::detail {

// Starts a worker from the zygote: argv as the worker would get it (argv[0] is ignored: the
// worker is this binary), stdout and stderr to output_fd (-1: /dev/null). The worker is our
// child (we are its subreaper) and leads its own process group. nullopt when there is no zygote or it failed (then the caller
// execs the worker as before).
std::optional<pid_t> spawn_from_zygote(const std::vector<std::string>& argv, int output_fd);

// Loads `backend`'s Backend::load_for_forked_workers into this process and restarts the zygote
// from it, once per process and backend, where this program forks its workers from a zygote
// (start_worker_zygote) and no thread runs yet (restart_worker_zygote). Afterwards workers forked
// from it start with that load; otherwise nothing changes (they load it in the warm-up).
// Returns whether the zygote now has it.
bool load_into_worker_zygote(const std::string& backend);

// The zygote's pid (a child of this process, which outlives every pool), or 0 when none runs.
pid_t worker_zygote_pid();
// The zygote's spares: workers forked ahead of their requests, waiting for them (children of this
// process, as every worker; they end with the zygote).
std::vector<pid_t> worker_zygote_spare_pids();

}  // namespace distmetrics::runtime::detail
