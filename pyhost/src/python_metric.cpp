#include "distmetrics/pyhost/python_metric.h"

#include <torch/csrc/autograd/python_variable.h>
#include <torch/version.h>

#include "distmetrics/build_config.h"

// The variant's C++ Gloo group is handed to torch.distributed as its default group, so that a
// Python metric's variant makes one group, not two (a second rendezvous and its teardown were
// half of every rank's time in the peer run: docs/performance.md). torch 1.13: as torch's own
// ProcessGroupGloo (its default group is one). From 2.0 on the default group is a
// c10d::ProcessGroup wrapping a c10d::Backend: the group goes as the Backend it is (Backend.hpp
// needs no gloo header, so this holds on the pip wheel too) and _host.begin_group wraps it the way
// init_process_group wraps the one it makes. Either way Python falls back to a group of its own
// where the handed group is not what it expects.
#if DISTMETRICS_HAVE_GLOO && TORCH_VERSION_MAJOR < 2
#define DISTMETRICS_PYHOST_SHARES_GLOO_GROUP 1
#define DISTMETRICS_PYHOST_SHARES_AS_BACKEND 0
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO  // the c10d Gloo header is empty without it
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#elif DISTMETRICS_HAVE_GLOO
#define DISTMETRICS_PYHOST_SHARES_GLOO_GROUP 1
#define DISTMETRICS_PYHOST_SHARES_AS_BACKEND 1
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/utils/pybind.h>  // torch's holder declaration: c10::intrusive_ptr
#else
#define DISTMETRICS_PYHOST_SHARES_GLOO_GROUP 0
#define DISTMETRICS_PYHOST_SHARES_AS_BACKEND 0
#endif

#include "distmetrics/runtime/gloo_loop_hurry.h"
#include "distmetrics/runtime/errors.h"
#include "distmetrics/runtime/phases.h"
#include "distmetrics/metrics/errors.h"
#include "interpreter.h"

namespace distmetrics::pyhost {

using detail::py::gil_scoped_acquire;
namespace py = detail::py;

// Hidden, as pybind11's own types are.
struct __attribute__((visibility("hidden"))) PythonMetric::Impl {
  py::object metric;  // distmetrics._host.HostedMetric
};

#if DISTMETRICS_PYHOST_SHARES_GLOO_GROUP && !DISTMETRICS_PYHOST_SHARES_AS_BACKEND
namespace {

// A pybind11 holder laid out as the one torch 1.13 registers its process groups with (a single
// c10::intrusive_ptr; out-of-tree c10d backends do the same), so that the variant's C++ Gloo group
// reaches torch.distributed as torch's own ProcessGroupGloo, holding a reference of its own.
template <typename T>
class GroupHolder {
 public:
  GroupHolder() = default;
  explicit GroupHolder(T* raw) : group_(c10::intrusive_ptr<T>::unsafe_steal_from_new(raw)) {}
  explicit GroupHolder(c10::intrusive_ptr<T> group) : group_(std::move(group)) {}
  T* get() const noexcept { return group_.get(); }

 private:
  c10::intrusive_ptr<T> group_;
};

}  // namespace
}  // namespace distmetrics::pyhost

PYBIND11_DECLARE_HOLDER_TYPE(T, distmetrics::pyhost::GroupHolder<T>, true);

namespace distmetrics::pyhost {
#endif  // DISTMETRICS_PYHOST_SHARES_GLOO_GROUP && !DISTMETRICS_PYHOST_SHARES_AS_BACKEND
namespace {

// The variant's own Gloo group as torch.distributed sees it: a ProcessGroupGloo (torch 1.13), or
// on torch 2.x the c10d::Backend it is, as the most derived type torch registered (pybind11
// looks the dynamic type up): ProcessGroupGloo where torch's binding made it, Backend for
// gloo.cpp's subclass. None for other backends, and where it cannot be handed over: Python then
// makes a group of its own.
py::object shared_gloo_group([[maybe_unused]] const runtime::Communicator& comm) {
#if !DISTMETRICS_PYHOST_SHARES_GLOO_GROUP
  return py::none();
#else
  if (comm.backend() != "gloo") return py::none();
  auto erased = comm.process_group();
#if DISTMETRICS_PYHOST_SHARES_AS_BACKEND
  auto* backend = dynamic_cast<c10d::Backend*>(erased.get());
  if (backend == nullptr) return py::none();
  py::module_::import("torch.distributed");  // registers torch's c10d types with pybind11
  // torch registers its backends with a holder of a single c10::intrusive_ptr: pybind11 copies
  // this one into the Python object, which then holds a reference of its own. Should torch's types
  // not be registered with this pybind11 (no Python object, or an error): a group of Python's own.
  try {
    py::object group = py::cast(c10::intrusive_ptr<c10d::Backend>::reclaim_copy(backend));
    if (group) return group;
  } catch (const py::cast_error&) {
  } catch (py::error_already_set&) {
  }
  PyErr_Clear();
  return py::none();
#else
  auto* gloo = dynamic_cast<c10d::ProcessGroupGloo*>(erased.get());
  if (gloo == nullptr) return py::none();
  py::module_::import("torch.distributed");  // registers torch's c10d types with pybind11
  return py::cast(GroupHolder<c10d::ProcessGroupGloo>(c10::intrusive_ptr<c10d::ProcessGroupGloo>::reclaim_copy(gloo)));
#endif
#endif
}

py::object wrap(const at::Tensor& t) {
  if (!t.defined()) return py::none();
  return py::reinterpret_steal<py::object>(THPVariable_Wrap(t));
}

// What distmetrics._host.normalize made of a value: a float, a CPU tensor, a dict, a list, or
// ("uncomparable", type, text) for a leaf no comparison understands.
metrics::Value to_value(const py::handle& v) {
  if (py::isinstance<py::float_>(v)) return metrics::Value(v.cast<double>());
  if (v.is_none()) return metrics::Value();
  if (THPVariable_Check(v.ptr())) return metrics::Value(THPVariable_Unpack(v.ptr()));
  if (py::isinstance<py::dict>(v)) {
    metrics::Value::Entries entries;
    for (auto item : v.cast<py::dict>()) entries.emplace_back(item.first.cast<std::string>(), to_value(item.second));
    return metrics::Value::named(std::move(entries));
  }
  if (py::isinstance<py::list>(v)) {
    std::vector<metrics::Value> items;
    for (auto item : v.cast<py::list>()) items.push_back(to_value(item));
    return metrics::Value::list(std::move(items));
  }
  if (py::isinstance<py::tuple>(v)) {
    const auto leaf = v.cast<py::tuple>();
    if (leaf.size() == 3 && leaf[0].cast<std::string>() == "uncomparable")
      return metrics::Value::uncomparable(leaf[1].cast<std::string>(), leaf[2].cast<std::string>());
  }
  throw std::runtime_error("a Python metric's value must be a number, a tensor, or a dict or list of these");
}

// Turns the Python error being handled into the C++ error the harness reads: a CollectiveError
// when it came out of a traced collective (so the rank is "blocked in" it), else a ForeignError
// with Python's type name.
[[noreturn]] void rethrow(py::error_already_set& e, const runtime::Communicator* comm, const std::string& where) {
  // "Not something this metric takes" (harness::kUnsupportedType): its message alone is the reason
  // the variant is skipped.
  if (auto reason = detail::unsupported_reason(e)) {
    detail::host_state().failed.reset();
    throw metrics::ForeignError(harness::kUnsupportedType, where + ": " + *reason);
  }
  // A step that does not apply to this metric by its declared convention (not fed an empty batch).
  if (auto reason = detail::declared_reason(e, harness::kNotApplicableType)) {
    detail::host_state().failed.reset();
    throw metrics::ForeignError(harness::kNotApplicableType, *reason);
  }
  auto [type, text] = detail::describe_python_error(e);
  auto& state = detail::host_state();
  auto failed = std::move(state.failed);
  state.failed.reset();
  if (failed && comm) {
    const bool timeout = text.find("imed out") != std::string::npos || text.find("imeout") != std::string::npos;
    throw runtime::CollectiveError(comm->rank(), timeout ? runtime::CollectiveFailure::Timeout : runtime::CollectiveFailure::Failed,
                                   *failed, "torch.distributed raised in the Python metric's " + where + ": " + text);
  }
  throw metrics::ForeignError(type, text);
}

}  // namespace

PythonMetric::PythonMetric(std::string name, const nlohmann::json& params, std::string source)
    : name_(std::move(name)), params_(params), source_(std::move(source)), impl_(std::make_unique<Impl>()) {
  detail::ensure_interpreter();
  gil_scoped_acquire gil;
  try {
    if (!source_.empty()) detail::use_registration_of(source_, name_);
    impl_->metric = detail::host_module().attr("HostedMetric")(name_, params_.dump(), "cpu");
  } catch (py::error_already_set& e) {
    rethrow(e, nullptr, "factory");
  }
}

PythonMetric::~PythonMetric() {
  gil_scoped_acquire gil;
  auto& state = detail::host_state();
  if (comm_ && state.comm == comm_) {
    state.comm = nullptr;  // the communicator goes with the variant
    runtime::GlooLoopHurry hurry;  // its pairs close here
    try {
      detail::host_module().attr("end_shared_group")();  // torch.distributed lets go of the variant's C++ group now
    } catch (py::error_already_set&) {
      // a group that cannot be destroyed is replaced by the next variant's begin_group
    }
  }
  impl_.reset();
}

void PythonMetric::reset() {
  gil_scoped_acquire gil;
  try {
    impl_->metric.attr("reset")();
  } catch (py::error_already_set& e) {
    rethrow(e, comm_, "reset()");
  }
}

void PythonMetric::update(const metrics::Batch& batch) {
  gil_scoped_acquire gil;
  try {
    impl_->metric.attr("update")(wrap(batch.input), wrap(batch.target), wrap(batch.weight), batch.structured_file);
  } catch (py::error_already_set& e) {
    rethrow(e, comm_, "update()");
  }
}

metrics::Value PythonMetric::compute() {
  gil_scoped_acquire gil;
  detail::host_state().failed.reset();
  try {
    return to_value(impl_->metric.attr("compute")(comm_ == nullptr));
  } catch (py::error_already_set& e) {
    rethrow(e, comm_, "compute()");
  }
}

std::string PythonMetric::state_digest() const {
  gil_scoped_acquire gil;
  try {
    return impl_->metric.attr("digest")().cast<std::string>();
  } catch (py::error_already_set&) {
    return {};  // a state that cannot be read: no digest (the report says so)
  }
}

std::optional<std::string> PythonMetric::save_state() const {
  gil_scoped_acquire gil;
  try {
    py::object saved = impl_->metric.attr("save_state")();
    if (saved.is_none()) return std::nullopt;
    return saved.cast<std::string>();
  } catch (py::error_already_set& e) {
    rethrow(e, comm_, "state_dict()");
  }
}

void PythonMetric::load_state(const std::string& saved) {
  gil_scoped_acquire gil;
  try {
    impl_->metric.attr("load_state")(py::bytes(saved));
  } catch (py::error_already_set& e) {
    rethrow(e, comm_, "load_state_dict()");
  }
}

bool PythonMetric::can_merge_state() const {
  gil_scoped_acquire gil;
  try {
    return impl_->metric.attr("can_merge")().cast<bool>();
  } catch (py::error_already_set&) {
    return false;
  }
}

void PythonMetric::merge_state(const std::vector<std::string>& others_saved) {
  gil_scoped_acquire gil;
  try {
    py::list saved;
    for (const auto& bytes : others_saved) saved.append(py::bytes(bytes));
    impl_->metric.attr("merge_saved")(saved);
  } catch (py::error_already_set& e) {
    rethrow(e, comm_, "merge_state()");
  }
}

void PythonMetric::to(c10::Device device) {
  device_ = device;
  gil_scoped_acquire gil;
  try {
    impl_->metric.attr("adapter").attr("to")(py::module_::import("torch").attr("device")(device.str()));
  } catch (py::error_already_set& e) {
    rethrow(e, comm_, "to()");
  }
}

void PythonMetric::set_communicator(runtime::Communicator* comm) {
  comm_ = comm;
  gil_scoped_acquire gil;
  auto& state = detail::host_state();
  state.comm = comm;
  state.open.reset();
  state.failed.reset();
  if (!comm) return;
  auto erased = comm->rendezvous_store();
  if (!erased) {
    throw std::runtime_error("rank " + std::to_string(comm->rank()) + ": a Python metric needs a torch.distributed group, and the " +
                             comm->backend() + " backend has no c10d store to make one on");
  }
  auto* raw_store = dynamic_cast<c10d::Store*>(erased.get());
  if (!raw_store) throw std::runtime_error("the communicator's rendezvous store is not a c10d::Store");
  auto store = c10::intrusive_ptr<c10d::Store>::reclaim_copy(raw_store);
  if (store.get() != state.store.get()) {
    state.store = store;
    state.groups_on_store = 0;
    state.group_made = false;
  }
  runtime::PhaseScope grouping("group");  // torch.distributed's group for the variant
  // Groups are made (and a library's own made and destroyed: Ignite's idist.sync()) in here.
  runtime::GlooLoopHurry hurry;
  try {
    // One group per variant. Another metric of the variant on this communicator (state_roundtrip's
    // restored instance, made before the first compute) joins the group the first one made:
    // making it anew destroyed that group on this rank while a slower peer could still be
    // connecting to it (gloo's connect returns on a rank once its own side of each pair is up),
    // and that peer failed with "Gloo connectFullMesh failed ... Connection closed by peer" while
    // this rank, its second group never formed, computed with no group at all (docs/peers.md).
    if (!state.group_made) {
      const std::string prefix = "python/" + std::to_string(state.groups_on_store++) + "/";
      detail::host_module().attr("begin_group")(comm->backend(), comm->rank(), comm->world_size(),
                                                static_cast<std::int64_t>(comm->op_timeout().count()), prefix,
                                                shared_gloo_group(*comm));
      state.group_made = true;
    }
    impl_->metric.attr("setup")();
  } catch (py::error_already_set& e) {
    auto [type, text] = detail::describe_python_error(e);
    throw std::runtime_error("rank " + std::to_string(comm->rank()) + ": making the torch.distributed " + comm->backend() +
                             " group for the Python metric failed: " + type + ": " + text);
  }
}

}  // namespace distmetrics::pyhost
