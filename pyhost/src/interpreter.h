// The embedded interpreter of this process (started once, never finalised: torch's Python
// state does not survive a restart) and what the embedded module `_distmetrics_host` sees: the
// communicator whose trace Python collectives enter, and the store the variant's
// torch.distributed group meets on.
#pragma once

#include <pybind11/embed.h>
#include <pybind11/stl.h>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <optional>
#include <string>

#include "distmetrics/runtime/comm.h"

namespace distmetrics::pyhost::detail {

namespace py = pybind11;

// Starts CPython (once), imports torch and distmetrics._host, installs the collective tracing,
// then releases the GIL: every call into Python takes it with py::gil_scoped_acquire.
// Throws PythonSourceError when the interpreter or the package cannot be set up.
void ensure_interpreter();

// distmetrics._host (call with the GIL held).
py::module_& host_module();

// "TypeName", "TypeName: message\nPython traceback (last frames): ..." of the error being handled.
std::pair<std::string, std::string> describe_python_error(py::error_already_set& e);

struct HostState {
  runtime::Communicator* comm = nullptr;        // tracing target (null: Python collectives untraced)
  c10::intrusive_ptr<c10d::Store> store;        // the current variant's store (held: its address stays unique)
  int groups_on_store = 0;                      // groups made on `store` so far (the prefix of the next)
  std::optional<runtime::CollectiveRecord> open;     // the traced collective Python is inside
  std::optional<runtime::CollectiveRecord> failed;   // the last traced collective that raised
};
HostState& host_state();

}  // namespace distmetrics::pyhost::detail
