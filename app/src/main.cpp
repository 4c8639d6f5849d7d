// The distmetrics executable. It is also its own rank worker: a process the rank pool starts
// serves the pool and exits before any command-line parsing.
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "distmetrics/app/cli.h"
#include "distmetrics/build_config.h"
#include "distmetrics/harness/data_files.h"
#include "distmetrics/plugin/conform.h"
#include "distmetrics/runtime/rank_pool.h"
#if DISTMETRICS_HAVE_PYHOST
#include "python_support.h"
#endif

// Leaves without running static destructors: LibTorch's deregister every operator (~0.1 s of
// CPU per process, at the end of every run and of every worker). Everything of ours is closed
// by then (pools, reports).
[[noreturn]] void leave(int code) {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  std::_Exit(code);
}

int main(int argc, char** argv) {
  distmetrics::plugin::register_plugin_support();  // plugin metrics and the reference task on the ranks
#if DISTMETRICS_HAVE_PYHOST
  distmetrics::app::register_python_support();     // `conform --python`, and Python metrics on the ranks
#endif
  if (const auto code = distmetrics::runtime::run_worker_if_requested(argc, argv)) leave(*code);
  distmetrics::runtime::start_worker_zygote();  // workers fork from it instead of loading again
  const int code = distmetrics::app::cli_main(argc, argv, std::cout, std::cerr);
  distmetrics::runtime::stop_worker_zygote();
  distmetrics::harness::remove_generated_data_files();  // data.python's files (leave() runs no destructors)
  leave(code);
}
