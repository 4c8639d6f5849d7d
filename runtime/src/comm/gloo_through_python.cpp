// The gloo backend on a LibTorch that ships no gloo headers (the pip wheel; docs/gpu.md).
//
// ProcessGroupGloo.hpp includes gloo's headers, and the only gloo that matches the one inside
// libtorch_cpu is that one: Debian's libgloo-dev is another. So this unit never names a gloo
// type. It asks torch itself for the group, through torch's own Python binding
// (torch._C._distributed_c10d.ProcessGroupGloo, in an embedded interpreter), hands it the
// job's C++ store through torch's own pybind11 registration of c10d::Store, and keeps the
// group as the c10d::Backend it is (Backend.hpp needs no gloo header). It is compiled against the
// wheel's pybind11 (the one libtorch_python registered its types with) and linked with the
// wheel's libtorch_python, so both sides agree on every type; should they not, the cast fails with
// pybind11's error, which is reported as this rank's connect failure.
//
// What torch's Python API does not reach, and is therefore off here: the transport kept per
// process and the hurried loop of gloo.cpp (docs/performance.md). Every group makes its own
// device, as torch.distributed does.
//
// This unit is a module of its own (libdistmetrics_gloo_python.so, modules.cmake), loaded by the
// runtime with the process's first gloo group (gloo_through_python() in backends.cpp): it links
// libpython and libtorch_python, and libtorch_python links LibTorch's CUDA side, none of which a
// command that makes no gloo group (list, validate, metrics) should load.
#include <pybind11/embed.h>
#include <torch/csrc/utils/pybind.h>  // torch's holder declaration: c10::intrusive_ptr

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>

#include "distmetrics/runtime/embedded_python.h"
#include "gloo_collectives.h"
#include "gloo_through_python.h"

namespace distmetrics::runtime::detail {
namespace {

namespace py = pybind11;

// The interpreter, started here unless pyhost (or an earlier group) did; the GIL left free.
void ensure_embedded_python() {
  static std::once_flag started;
  std::call_once(started, [] {
    if (start_embedded_python()) PyEval_SaveThread();
  });
}

// A group made for this spec on `store`; throws what torch's binding raised, as text.
c10::intrusive_ptr<c10d::Backend> gloo_group_from_torch(const CommSpec& spec, const c10::intrusive_ptr<c10d::Store>& store) {
  static std::mutex one_at_a_time;  // groups of one process are made one after another
  std::lock_guard<std::mutex> lock(one_at_a_time);
  py::gil_scoped_acquire gil;
  try {
    py::module_::import("torch.distributed");  // registers torch's c10d types with pybind11
    py::object gloo = py::module_::import("torch._C._distributed_c10d").attr("ProcessGroupGloo");
    // The same devices gloo.cpp binds: the spec's address, else GLOO_SOCKET_IFNAME, else the
    // address of this host's name.
    py::object device;
    const char* interface = std::getenv("GLOO_SOCKET_IFNAME");
    if (!spec.gloo_address.empty()) device = gloo.attr("create_device")(py::arg("hostname") = spec.gloo_address);
    else if (interface && *interface) device = gloo.attr("create_device")(py::arg("interface") = std::string(interface));
    else device = gloo.attr("create_device")();
    py::object options = gloo.attr("_Options")();
    py::list devices;
    devices.append(device);
    options.attr("_devices") = devices;
    options.attr("_threads") = 2;
    const auto timeout = spec.op_timeout + kGlooTimeoutMargin;
    options.attr("_timeout") = py::module_::import("datetime").attr("timedelta")(
        py::arg("milliseconds") = static_cast<double>(timeout.count()));
    py::object group;
    {
      py::object py_store = py::cast(store);  // torch's own Store type, holding a reference
      // The rendezvous runs in here (the store's timeout bounds each wait); the binding releases
      // the GIL while it does.
      group = gloo(py_store, spec.rank, spec.world_size, options);
    }
    auto* backend = group.cast<c10d::Backend*>();
    // A reference of our own: the Python object goes at the end of this scope.
    return c10::intrusive_ptr<c10d::Backend>::unsafe_reclaim_from_nonowning(backend);
  } catch (py::error_already_set& e) {
    throw std::runtime_error(e.what());  // converted while the GIL is held
  }
}

// Imports torch.distributed once per process; why not, or nullopt.
std::optional<std::string> torch_distributed_unavailable() {
  static std::once_flag checked;
  static std::optional<std::string> reason;
  std::call_once(checked, [] {
    try {
      ensure_embedded_python();
      py::gil_scoped_acquire gil;
      try {
        if (!py::module_::import("torch.distributed").attr("is_gloo_available")().cast<bool>())
          reason = "gloo: the torch Python package of this build has no gloo";
      } catch (py::error_already_set& e) {
        reason = std::string("gloo: the embedded interpreter cannot import torch.distributed: ") + e.what();
      }
    } catch (const std::exception& e) {
      reason = std::string("gloo: cannot start the embedded Python interpreter: ") + short_what(e);
    }
  });
  return reason;
}

// Backend::load_for_forked_workers of the gloo backend on this route.
std::optional<ForkHooks> load_for_forked_workers() {
  if (torch_distributed_unavailable()) return std::nullopt;
  return python_fork_hooks();
}

long started_by() { return embedded_python_started_by(); }

std::unique_ptr<Communicator> make_group(const CommSpec& spec, const c10::intrusive_ptr<c10d::Store>& store,
                                         const Deadline& deadline) {
  // The rendezvous (every rank connects to every other through the store) must finish by the
  // deadline; the store's own timeout bounds each of its waits.
  store->setTimeout(std::max(deadline.remaining(), std::chrono::milliseconds(1)));
  c10::intrusive_ptr<c10d::Backend> group;
  try {
    ensure_embedded_python();
    group = gloo_group_from_torch(spec, store);
  } catch (const std::exception& e) {
    throw std::runtime_error("gloo: rank " + std::to_string(spec.rank) + " could not connect to its " +
                             std::to_string(spec.world_size - 1) + " peers (torch's ProcessGroupGloo, made through its "
                             "Python binding): " + short_what(e));
  }
  count_gloo_group_made_through_python();
  return std::make_unique<GlooCollectives<c10d::Backend>>(spec, comm_device_of(spec), std::move(group), store);
}

const GlooThroughPython entry{make_group, load_for_forked_workers, started_by};

}  // namespace
}  // namespace distmetrics::runtime::detail

// What the runtime asks of this module (gloo_through_python.h).
extern "C" const distmetrics::runtime::detail::GlooThroughPython* distmetrics_gloo_through_python() {
  return &distmetrics::runtime::detail::entry;
}
