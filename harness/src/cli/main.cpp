// The distmetrics executable. It is also its own rank worker: a process the rank pool starts
// serves the pool and exits before any command-line parsing.
#include <iostream>

#include "distmetrics/harness/cli.h"
#include "distmetrics/harness/rank_pool.h"

int main(int argc, char** argv) {
  if (const auto code = distmetrics::harness::run_worker_if_requested(argc, argv)) return *code;
  return distmetrics::harness::cli_main(argc, argv, std::cout, std::cerr);
}
