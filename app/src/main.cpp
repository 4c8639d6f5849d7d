// The distmetrics executable. It is also its own rank worker: a process the rank pool starts
// serves the pool and exits before any command-line parsing.
#include <iostream>

#include "distmetrics/app/cli.h"
#include "distmetrics/plugin/conform.h"
#include "distmetrics/runtime/rank_pool.h"

int main(int argc, char** argv) {
  distmetrics::plugin::register_plugin_support();  // plugin metrics and the reference task on the ranks
  if (const auto code = distmetrics::runtime::run_worker_if_requested(argc, argv)) return *code;
  return distmetrics::app::cli_main(argc, argv, std::cout, std::cerr);
}
