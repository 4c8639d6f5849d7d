// The distmetrics executable. It is also its own rank worker: a process the rank pool starts
// serves the pool and exits before any command-line parsing.
#include <iostream>

#include "distmetrics/harness/cli.h"
#include "distmetrics/harness/rank_pool.h"
#include "distmetrics/plugin/conform.h"

int main(int argc, char** argv) {
  distmetrics::plugin::register_plugin_support();  // `conform`, and plugin metrics on the ranks
  if (const auto code = distmetrics::harness::run_worker_if_requested(argc, argv)) return *code;
  return distmetrics::harness::cli_main(argc, argv, std::cout, std::cerr);
}
