// distmetrics_bench: the benchmarks (Google Benchmark). Like the CLI it is also its own rank
// worker, and the child of the C++ spawn-per-test baseline. ci/bench.sh runs it and prints the
// ratios; docs/performance.md says what each one means.
#include <benchmark/benchmark.h>

#include <cstring>
#include <iostream>
#include <string>

#include "common.h"
#include "distmetrics/runtime/rank_pool.h"

namespace distmetrics::bench {
int spawn_child_main(int rank, int world_size, const std::string& path);
}

int main(int argc, char** argv) {
  if (argc == 5 && std::strcmp(argv[1], "--bench-spawn-child") == 0) {
    return distmetrics::bench::spawn_child_main(std::stoi(argv[2]), std::stoi(argv[3]), argv[4]);
  }
  if (const auto code = distmetrics::runtime::run_worker_if_requested(argc, argv)) return *code;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  distmetrics::bench::shutdown_pools();  // ends every rank worker before the statics go
  return 0;
}
