#include "interpreter.h"

#include <cstdlib>
#include <mutex>
#include <optional>

#include "distmetrics/build_config.h"
#include "distmetrics/harness/tables.h"
#include "distmetrics/pyhost/source.h"
#include "distmetrics/runtime/embedded_python.h"
#include "distmetrics/runtime/phases.h"

namespace distmetrics::pyhost::detail {
namespace {

std::once_flag started;
std::string start_error;
py::module_* host = nullptr;

c10d::Store& store_or_throw() {
  auto& state = host_state();
  if (!state.store) throw std::runtime_error("distmetrics: no variant store (no torch.distributed group is being made)");
  return *state.store;
}

std::vector<std::uint8_t> bytes_of(const py::bytes& b) {
  const std::string s = b;
  return {s.begin(), s.end()};
}

py::bytes to_bytes(const std::vector<std::uint8_t>& v) {
  return py::bytes(reinterpret_cast<const char*>(v.data()), v.size());
}

}  // namespace

HostState& host_state() {
  static HostState state;
  return state;
}

}  // namespace distmetrics::pyhost::detail

// The embedded module: the variant's store for torch.distributed, the trace hooks, and the tables
// (`distmetrics tables --json` without starting the command: distmetrics/tables.py reads it here).
PYBIND11_EMBEDDED_MODULE(_distmetrics_host, m) {
  namespace d = distmetrics::pyhost::detail;
  using d::py::gil_scoped_release;
  m.def("tables_json", [] { return distmetrics::harness::tables_json().dump(); });
  m.def("store_set", [](const std::string& key, const pybind11::bytes& value) {
    auto bytes = d::bytes_of(value);
    gil_scoped_release release;
    d::store_or_throw().set(key, bytes);
  });
  m.def("store_get", [](const std::string& key) {
    std::vector<std::uint8_t> value;
    {
      gil_scoped_release release;
      value = d::store_or_throw().get(key);
    }
    return d::to_bytes(value);
  });
  m.def("store_add", [](const std::string& key, std::int64_t amount) {
    gil_scoped_release release;
    return d::store_or_throw().add(key, amount);
  });
  m.def("store_compare_set", [](const std::string& key, const pybind11::bytes& expected, const pybind11::bytes& desired) {
    auto e = d::bytes_of(expected), v = d::bytes_of(desired);
    std::vector<std::uint8_t> out;
    {
      gil_scoped_release release;
      out = d::store_or_throw().compareSet(key, e, v);
    }
    return d::to_bytes(out);
  });
  m.def("store_wait", [](const std::vector<std::string>& keys, std::int64_t timeout_ms) {
    gil_scoped_release release;
    if (timeout_ms < 0) d::store_or_throw().wait(keys);
    else d::store_or_throw().wait(keys, std::chrono::milliseconds(timeout_ms));
  });
  m.def("store_check", [](const std::vector<std::string>& keys) {
    gil_scoped_release release;
    return d::store_or_throw().check(keys);
  });
  m.def("store_delete", [](const std::string& key) {
    gil_scoped_release release;
    return d::store_or_throw().deleteKey(key);
  });
  m.def("store_num_keys", [] {
    gil_scoped_release release;
    return d::store_or_throw().getNumKeys();
  });
  m.def("tracing", [] { return d::host_state().comm != nullptr; });
  m.def("enter", [](const std::string& op, const std::string& dtype, const std::vector<std::int64_t>& shape) {
    auto& state = d::host_state();
    if (!state.comm) return std::int64_t{-1};
    state.open = state.comm->enter_external(op, dtype, shape);
    return static_cast<std::int64_t>(state.open->seq);
  });
  m.def("exit", [](std::int64_t seq, bool ok) {
    auto& state = d::host_state();
    if (!state.comm || !state.open || static_cast<std::int64_t>(state.open->seq) != seq) return;
    state.comm->exit_external(*state.open, ok);
    if (!ok) state.failed = state.open;
    state.open.reset();
  });
}

namespace distmetrics::pyhost::detail {

void ensure_interpreter() {
  std::call_once(started, [] {
    runtime::PhaseScope starting("interpreter");  // a rank that starts it in a variant pays it there
    try {
      // The interpreter may run already: the gloo backend of a pip-torch build starts it to make
      // torch's ProcessGroupGloo (runtime/embedded_python.h); then it is joined, GIL taken.
      const bool started_here = runtime::start_embedded_python();
      {
        std::optional<py::gil_scoped_acquire> gil;
        if (!started_here) gil.emplace();
        // The user's modules are found from the working directory, as `python3 -m` would; the
        // distmetrics package from DISTMETRICS_PYTHONPATH, an install, or this source tree.
        py::module_ sys = py::module_::import("sys");
        py::list path = sys.attr("path");
        path.insert(0, std::string(""));
        py::module_ os = py::module_::import("os");
        path.insert(0, os.attr("getcwd")());
        bool found = !py::module_::import("importlib.util").attr("find_spec")("distmetrics").is_none();
        if (const char* extra = std::getenv("DISTMETRICS_PYTHONPATH")) {
          path.insert(0, std::string(extra));
          found = true;
        }
        if (!found) {
          const bool in_tree = py::module_::import("os.path").attr("isdir")(std::string(DISTMETRICS_PYTHON_SOURCE_DIR) + "/distmetrics").cast<bool>();
          path.append(std::string(in_tree ? DISTMETRICS_PYTHON_SOURCE_DIR : DISTMETRICS_PYTHON_INSTALLED_DIR));
        }
        py::module_::import("torch");
        host = new py::module_(py::module_::import("distmetrics._host"));
        host->attr("install_tracing")();
      }
      if (started_here) PyEval_SaveThread();  // from here on, every call into Python takes the GIL
    } catch (const py::error_already_set& e) {
      start_error = e.what();
    } catch (const std::exception& e) {
      start_error = e.what();
    }
  });
  if (!start_error.empty())
    throw PythonSourceError("cannot start the embedded Python interpreter with torch and the distmetrics package: " +
                            start_error +
                            " (Debian: python3-torch; set DISTMETRICS_PYTHONPATH to the folder holding distmetrics/)");
}

py::module_& host_module() { return *host; }

std::pair<std::string, std::string> describe_python_error(py::error_already_set& e) {
  try {
    py::tuple described = host_module().attr("describe_raised")(e.type(), e.value(), e.trace());
    return {described[0].cast<std::string>(), described[1].cast<std::string>()};
  } catch (const std::exception&) {
    return {"PythonError", e.what()};
  }
}

std::optional<std::string> unsupported_reason(py::error_already_set& e) {
  return declared_reason(e, harness::kUnsupportedType);
}

std::optional<std::string> declared_reason(py::error_already_set& e, const std::string& type_name) {
  // The exception itself, or one it was raised from or while handling (a wrapper's SourceError):
  // a bounded walk, since a chain can be made to loop.
  py::object raised = e.value();
  for (int depth = 0; depth < 8 && raised && !raised.is_none(); ++depth) {
    if (py::type::handle_of(raised).attr("__name__").cast<std::string>() == type_name)
      return py::str(raised).cast<std::string>();
    py::object next = raised.attr("__cause__");
    raised = next.is_none() ? py::object(raised.attr("__context__")) : next;
  }
  return std::nullopt;
}

}  // namespace distmetrics::pyhost::detail
