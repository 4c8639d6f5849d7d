// The command proper, libdistmetrics_cli.so: the front (front.cpp, the `distmetrics`
// executable) loads it for every command line but `--help` and `--version` and calls
// distmetrics_cli_main(). It is also its own rank worker: a process the rank pool starts (the
// same executable) serves the pool and exits before any command-line parsing.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <string>

#include "distmetrics/app/cli.h"
#include "distmetrics/build_config.h"
#include "distmetrics/harness/data_files.h"
#include "distmetrics/plugin/conform.h"
#include "distmetrics/runtime/rank_pool.h"
#if DISTMETRICS_HAVE_PYHOST
#include "distmetrics/harness/scenario_python.h"
#include "python_support.h"
#endif

namespace {

// Leaves without running static destructors: LibTorch's deregister every operator (~0.1 s of
// CPU per process, at the end of every run and of every worker). Everything of ours is closed
// by then (pools, reports).
[[noreturn]] void leave(int code) {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  std::_Exit(code);
}

#if DISTMETRICS_HAVE_PYHOST
// The folder of this library: the Python module is built and installed beside it.
std::string this_library_folder() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&leave), &info) == 0 || info.dli_fname == nullptr) return "";
  const std::string path = info.dli_fname;
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

// Loads the Python module (python_support.h) and registers what it holds; "" or why not.
std::string load_python_module() {
  static std::mutex mutex;
  static bool loaded = false;
  std::lock_guard<std::mutex> lock(mutex);
  if (loaded) return "";
  const std::string path = this_library_folder() + distmetrics::app::kPythonSupportModule;
  void* module = ::dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);  // libpython's symbols serve Python's extension modules
  const char* why = module ? nullptr : ::dlerror();
  auto* register_all = module ? reinterpret_cast<void (*)()>(::dlsym(module, distmetrics::app::kPythonSupportEntry)) : nullptr;
  if (register_all == nullptr) {
    return "cannot load the Python metrics' support (" + path + "): " +
           (why ? why : std::string("no entry point ") + distmetrics::app::kPythonSupportEntry);
  }
  register_all();
  loaded = true;
  return "";
}
#endif

}  // namespace

#if DISTMETRICS_HAVE_PYHOST
std::string distmetrics::app::load_python_support() {
  const std::string why = load_python_module();
  // Workers forked from the zygote made at start would lack it: a new zygote, from this process
  // now (no thread runs yet while the command line is read); else none, so that workers are
  // exec'd and load it as they start (below).
  if (why.empty() && !distmetrics::runtime::restart_worker_zygote({})) distmetrics::runtime::stop_worker_zygote();
  return why;
}
#endif

extern "C" int distmetrics_cli_main(int argc, char** argv) {
  distmetrics::plugin::register_plugin_support();  // plugin metrics and the reference task on the ranks
#if DISTMETRICS_HAVE_PYHOST
  // Until the Python support is loaded a scenario that names Python is refused for want of
  // --allow-python, not of a build with Python (its hooks replace these, which nothing calls).
  distmetrics::harness::install_scenario_python(distmetrics::harness::ScenarioPython{});
  // A rank worker of `conform --python` (its supervisor set the sources it imports as it starts)
  // needs it before it serves; the rest load it when the command line asks for Python (cli_main).
  if (const char* sources = std::getenv("DISTMETRICS_PYTHON_PRELOAD"); sources && *sources) (void)load_python_module();
  distmetrics::app::set_python_support_loader(distmetrics::app::load_python_support);
#endif
  if (const auto code = distmetrics::runtime::run_worker_if_requested(argc, argv)) leave(*code);
  distmetrics::runtime::start_worker_zygote();  // workers fork from it instead of loading again
  const int code = distmetrics::app::cli_main(argc, argv, std::cout, std::cerr);
  distmetrics::runtime::stop_worker_zygote();
  distmetrics::harness::remove_generated_data_files();  // data.python's files (leave() runs no destructors)
  leave(code);
}
