// The Python a scenario file names (data.python, data.structured, reference.python) through the embedded
// interpreter: installs the harness's hooks (harness/scenario_python.h). Whether scenario files
// may use them is still the command line's decision (--allow-python).
#pragma once

namespace distmetrics::pyhost {

// Idempotent; the interpreter starts on the first call of a hook, not here.
void install_scenario_python_hooks();

}  // namespace distmetrics::pyhost
