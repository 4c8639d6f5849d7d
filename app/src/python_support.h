// Python metrics in the CLI (built when pyhost/ is): their qualified names resolve in every
// process, `conform --python` presents a Python source as a plugin, and the rank workers of such
// a run import the source while they start; scenario files may call the Python they name
// (data.python, data.structured, reference.python) when the command line allows it.
//
// All of it is a module of its own, libdistmetrics_cli_python.so (python_support.cpp, linking
// pyhost and with it libpython, libtorch_python and LibTorch's CUDA side), loaded only by a
// command that asks for Python (--python, --allow-python) and by the rank workers of such a run
// (entry.cpp); every other command starts without any of it.
#pragma once

#include <string>

namespace distmetrics::app {

// In the module: registers all of the above (the module's C entry point calls it).
void register_python_support();
inline constexpr const char* kPythonSupportModule = "libdistmetrics_cli_python.so";
inline constexpr const char* kPythonSupportEntry = "distmetrics_register_python_support";

// In the command (entry.cpp): the module loaded and registered, once per process; "" when it
// is (or already was), else why not. Rank workers forked from now on have it (the worker zygote
// is restarted; where it cannot be, workers are exec'd and load it as they start).
std::string load_python_support();

}  // namespace distmetrics::app
