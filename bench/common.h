// Shared helpers of the distmetrics benchmarks: the quick (CI) mode, process spawning, rank
// pools kept warm across benchmarks, and the paths the build gives us.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "distmetrics/runtime/rank_pool.h"

namespace distmetrics::bench {

// DISTMETRICS_BENCH_QUICK=1 (ci/bench.sh --quick): small sizes and one or two repetitions, to
// check that every benchmark works; its numbers mean nothing.
bool quick();

// Picks the full or the quick value.
template <class T>
T sized(T full, T quick_value) {
  return quick() ? quick_value : full;
}

// This executable, the distmetrics CLI, the scenario library, the Python interpreter.
std::string self_path();
std::string cli_path();
std::string scenarios_dir();
std::string python_path();

// A fresh folder under $TMPDIR, removed by remove_tree().
std::string make_temp_dir(const std::string& tag);
void remove_tree(const std::string& path);
void write_file(const std::string& path, const std::string& text);
std::string read_file(const std::string& path);

// Starts argv (stdout and stderr to /dev/null unless keep_output), returns its pid.
pid_t spawn(const std::vector<std::string>& argv, bool keep_output = false);
// Waits for every pid; throws naming the first that did not exit 0 or did not end by the deadline
// (those still running are killed, by pid).
void wait_all(const std::vector<pid_t>& pids, std::chrono::seconds deadline, const std::string& what);

// A warm rank pool per world size, shared by the benchmarks; shutdown_pools() ends them.
runtime::RankPool& pool(int world_size);
void shutdown_pools();

// Runs a task on the warm pool of `world_size` and returns rank 0's result; throws with the
// diagnosis unless every rank finished.
nlohmann::json run_task(int world_size, const std::string& task, const nlohmann::json& params,
                        std::chrono::milliseconds deadline = std::chrono::seconds(120));

double seconds_since(std::chrono::steady_clock::time_point start);

// The median: robust to the stalls a shared machine puts into some repetitions.
double median(std::vector<double> values);

// The trivial scenario (one update, one compute of MeanAbsoluteError, 8 samples) at one world size.
std::string trivial_scenario_toml(int world_size, int seed = 1);

}  // namespace distmetrics::bench
