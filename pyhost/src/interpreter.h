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
#include <vector>

#include "distmetrics/harness/observation.h"
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

// The agreed way for a factory or an adapter to say "this parameter combination (or input) is
// not something this metric can take": an exception whose type is named `Unsupported`
// (distmetrics.Unsupported, or any class of that name). Its message, when the error being
// handled is one, or was raised from or while handling one; nullopt otherwise.
// (harness::kUnsupportedType)
std::optional<std::string> unsupported_reason(py::error_already_set& e);
// The message of an exception (or one in its chain) whose class is named `type_name`: how a
// registration tells the host something by the exception's name (Unsupported, NotApplicable).
std::optional<std::string> declared_reason(py::error_already_set& e, const std::string& type_name);

// Sources register their metrics by name in one process-wide Python registry, so two sources
// that register the same name (torchmetrics' and Ignite's MeanAbsoluteError, conformed in one
// run) would build whichever was imported last. remember_registrations() keeps, right after a
// source's import, what the registry then held for each of its names; use_registration_of()
// puts a source's own back before one of its metrics is built. GIL held.
void remember_registrations(const std::string& spec, const std::vector<std::string>& names);
void use_registration_of(const std::string& spec, const std::string& name);

struct HostState {
  runtime::Communicator* comm = nullptr;        // tracing target (null: Python collectives untraced)
  c10::intrusive_ptr<c10d::Store> store;        // the current variant's store (held: its address stays unique)
  int groups_on_store = 0;                      // groups begun on `store` so far (the prefix of the next)
  bool group_made = false;                      // the variant's group is made on `store`: later metrics join it
  std::optional<runtime::CollectiveRecord> open;     // the traced collective Python is inside
  std::optional<runtime::CollectiveRecord> failed;   // the last traced collective that raised
};
HostState& host_state();

}  // namespace distmetrics::pyhost::detail
