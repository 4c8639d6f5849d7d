// Python metrics in the CLI (built when pyhost/ is): their qualified names resolve in every
// process, `conform --python` presents a Python source as a plugin, and the rank workers of such
// a run import the source while they start; scenario files may call the Python they name
// (data.python, data.structured, reference.python) when the command line allows it.
#pragma once

namespace distmetrics::app {

// Call first in main(), before the process may serve as a rank worker.
void register_python_support();

}  // namespace distmetrics::app
