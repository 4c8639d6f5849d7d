// This process's embedded CPython, started the one way every part that needs it starts it:
// runtime's gloo backend on a LibTorch without gloo headers (it makes torch's ProcessGroupGloo
// through torch's Python binding) and pyhost (Python metrics), whichever comes first.
// Header-only: include it only where Python.h and pybind11 are on the include path
// (distmetrics_dep_python).
#pragma once

#include <pybind11/embed.h>

#include <unistd.h>

#include <cstdlib>
#include <stdexcept>

#include "distmetrics/runtime/rank_pool.h"
#include "distmetrics/runtime/thread_pools.h"

namespace distmetrics::runtime {

// Starts CPython unless it runs already, never to be finalised (torch's Python state does not
// survive a restart). With DISTMETRICS_EMBEDDED_PYTHON (a pip-torch build: the venv's python) it
// starts as that program would, so that the venv's site-packages, the wheel's torch, come
// first, never another torch on the machine. Signal handlers stay the program's. Returns true when
// it started it: the caller then holds the GIL and must release it (PyEval_SaveThread) when done;
// false: take the GIL (pybind11::gil_scoped_acquire) for every call.
// The process that started this process's interpreter: this one, or the one it was forked from
// (a rank worker forked from a zygote restarted after the interpreter started); 0 before any.
inline long& embedded_python_started_by() {
  static long pid = 0;
  return pid;
}

inline bool start_embedded_python() {
  if (Py_IsInitialized()) return false;
  embedded_python_started_by() = static_cast<long>(::getpid());
  // Before the first import: numpy's OpenBLAS starts its threads as it loads, and a thread keeps
  // the worker zygote from being restarted with the sources imported (thread_pools.h).
  hold_thread_pools_at_one();
#ifdef DISTMETRICS_EMBEDDED_PYTHON
  PyConfig config;
  PyConfig_InitPythonConfig(&config);
  config.parse_argv = 0;
  config.install_signal_handlers = 0;
  // The program's C stdio stays as it is: Python's own setup of stdin's buffering drops what the
  // program had read ahead from a pipe (`serve` lost every request after the first).
  config.configure_c_stdio = 0;
  const PyStatus status = PyConfig_SetBytesString(&config, &config.program_name, DISTMETRICS_EMBEDDED_PYTHON);
  if (PyStatus_Exception(status)) {
    PyConfig_Clear(&config);
    throw std::runtime_error("cannot set the embedded Python's program to " DISTMETRICS_EMBEDDED_PYTHON);
  }
  pybind11::initialize_interpreter(&config, 0, nullptr, /*add_program_dir_to_path=*/true);
#else
  pybind11::initialize_interpreter(/*init_signal_handlers=*/false);
#endif
  return true;
}

// The hooks that keep this process's interpreter sound across the zygote's forks
// (restart_worker_zygote), Python's own rule for fork as os.fork follows it: the forking thread
// holds the GIL and calls PyOS_BeforeFork, then PyOS_AfterFork_Parent or _Child; the child then
// lets the GIL go, as this process's threads do between calls into Python.
inline ForkHooks python_fork_hooks() {
  static PyGILState_STATE held;
  ForkHooks hooks;
  hooks.before = [] {
    held = PyGILState_Ensure();
    PyOS_BeforeFork();
  };
  hooks.in_parent = [] {
    PyOS_AfterFork_Parent();
    PyGILState_Release(held);
  };
  hooks.in_child = [] {
    PyOS_AfterFork_Child();
    PyGILState_Release(held);
  };
  return hooks;
}

}  // namespace distmetrics::runtime
