// This process's embedded CPython, started the one way every part that needs it starts it:
// runtime's gloo backend on a LibTorch without gloo headers (it makes torch's ProcessGroupGloo
// through torch's Python binding) and pyhost (Python metrics), whichever comes first.
// Header-only: include it only where Python.h and pybind11 are on the include path
// (distmetrics_dep_python).
#pragma once

#include <pybind11/embed.h>

#include <stdexcept>

namespace distmetrics::runtime {

// Starts CPython unless it runs already, never to be finalised (torch's Python state does not
// survive a restart). With DISTMETRICS_EMBEDDED_PYTHON (a pip-torch build: the venv's python) it
// starts as that program would, so that the venv's site-packages, the wheel's torch, come
// first, never another torch on the machine. Signal handlers stay the program's. Returns true when
// it started it: the caller then holds the GIL and must release it (PyEval_SaveThread) when done;
// false: take the GIL (pybind11::gil_scoped_acquire) for every call.
inline bool start_embedded_python() {
  if (Py_IsInitialized()) return false;
#ifdef DISTMETRICS_EMBEDDED_PYTHON
  PyConfig config;
  PyConfig_InitPythonConfig(&config);
  config.parse_argv = 0;
  config.install_signal_handlers = 0;
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

}  // namespace distmetrics::runtime
