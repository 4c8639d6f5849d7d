// Which backends exist and can run here, and building a communicator by backend name.
#include <atomic>
#include <initializer_list>
#include <mutex>

#include "backend_factory.h"
#include "distmetrics/build_config.h"
#include "distmetrics/runtime/backends.h"
#include "distmetrics/runtime/errors.h"
#include "distmetrics/runtime/launchers.h"
#include "distmetrics/runtime/task.h"
#include "modules.h"
#if DISTMETRICS_GLOO_THROUGH_PYTHON
#include "gloo_through_python.h"
#endif

namespace distmetrics::runtime {
namespace {

// The launcher table's names for a backend's entries (launchers.h).
std::string pool_launch_of(LauncherId id) { return launcher(id).pool->name; }
std::vector<std::string> names_of(std::initializer_list<LauncherId> ids) {
  std::vector<std::string> names;
  for (const LauncherId id : ids) names.push_back(launcher(id).name);
  return names;
}

std::optional<Unavailable> gloo_unavailable(const std::string& comm_device, int) {
  if (!DISTMETRICS_HAVE_GLOO) {
    // LibTorch 2.x: only gloo headers shipped with that LibTorch match its gloo (the pip wheel has none).
    if (DISTMETRICS_TORCH_VERSION[0] != '1')
      return Unavailable("gloo: this build has no Gloo: LibTorch " DISTMETRICS_TORCH_VERSION " ships no gloo headers",
                         " (docs/gpu.md)");
    return Unavailable("gloo: this build has no Gloo", " (install libgloo-dev and reconfigure)");
  }
  // Through torch's Python binding, torch.distributed is imported when a group is made, or when
  // a supervisor or a peer rank loads it for the processes it forks (load_for_forked_workers), not
  // here: asking costs nothing, so that `list` of a gloo scenario loads no Python (the configure
  // checked that this venv's torch.distributed has gloo; a venv broken since fails the pool's start).
  if (comm_device == "cuda") {
    if (!DISTMETRICS_TORCH_HAS_CUDA) return Unavailable("gloo on cuda: this LibTorch has no CUDA");
    if (visible_gpu_count() < 1) return Unavailable("gloo on cuda: needs a GPU, found 0");
  }
  return std::nullopt;
}

std::optional<Unavailable> mpi_unavailable(const std::string& comm_device, int) {
  if (!DISTMETRICS_HAVE_MPI)
    return Unavailable("mpi: this build has no Open MPI", " (install libopenmpi-dev openmpi-bin and reconfigure)");
  if (comm_device == "cuda") return Unavailable("mpi: collectives run on the CPU only", " (comm device cuda)");
  return std::nullopt;
}

#if DISTMETRICS_GLOO_THROUGH_PYTHON
std::atomic<int> groups_made_through_python{0};
std::atomic<int> warm_ups_run{0};

// The gloo backend's pool warm-up (the table below): the worker made this job's communicator
// first, which imported torch.distributed and made a group; the barrier shows the group works.
// Registered here, not in the module: a worker looks the task up before the module is loaded.
const bool warm_up_registered = [] {
  TaskRegistry::instance().add(detail::kGlooThroughPythonWarmUpTask, [](TaskContext& ctx) {
    ctx.comm.barrier();
    ++warm_ups_run;
    return nlohmann::json::object();
  });
  return true;
}();

std::optional<ForkHooks> gloo_load_for_forked_workers() {
  try {
    return detail::gloo_through_python().load_for_forked_workers();
  } catch (const std::exception&) {
    return std::nullopt;  // the workers load it themselves, and their warm-up says why it fails
  }
}
#endif

std::optional<Unavailable> nccl_unavailable(const std::string&, int world_size) {
  if (!DISTMETRICS_HAVE_NCCL) return Unavailable("nccl: this build has no NCCL", " (it needs a CUDA LibTorch)");
  const int gpus = visible_gpu_count();
  if (gpus < world_size)
    return Unavailable("nccl: needs " + std::to_string(world_size) + " GPUs", " (one per rank), found " + std::to_string(gpus));
  return std::nullopt;
}

// MPI duplicates MPI_COMM_WORLD instead of using the job's store.
std::unique_ptr<Communicator> make_mpi(const detail::CommSpec& spec, const c10::intrusive_ptr<c10d::Store>&,
                                       const Deadline& deadline) {
  return detail::make_mpi_communicator(spec, deadline);
}

}  // namespace

const std::vector<Backend>& backends() {
  static const std::vector<Backend> table = [] {
    Backend gloo;
    gloo.name = "gloo";
    gloo.description = "c10d ProcessGroupGloo: collectives on the CPU, or on CUDA tensors";
    gloo.compiled = DISTMETRICS_HAVE_GLOO != 0;
    gloo.comm_devices = {"cpu", "cuda"};
    gloo.pool_launch = pool_launch_of(LauncherId::Local);
    gloo.peer_launchers = names_of({LauncherId::Mpi, LauncherId::Env});
    gloo.default_variant = true;
    gloo.peer_isolation = TaskIsolation::ForkedChild;
    gloo.hangs_end_in_place = true;  // its pairs are TCP connections
    gloo.unavailable = gloo_unavailable;
    gloo.make = detail::make_gloo_communicator;
#if DISTMETRICS_GLOO_THROUGH_PYTHON
    // Workers forked after the supervisor imported torch.distributed start with it; the warm-up
    // makes each worker's first group (and imports it where a worker was not forked so).
    gloo.load_for_forked_workers = gloo_load_for_forked_workers;
    gloo.pool_warm_up_task = detail::kGlooThroughPythonWarmUpTask;
#endif

    Backend mpi;
    mpi.name = "mpi";
    mpi.description = "Open MPI directly (a duplicate of MPI_COMM_WORLD): CPU collectives; ranks started by mpirun";
    mpi.compiled = DISTMETRICS_HAVE_MPI != 0;
    mpi.comm_devices = {"cpu"};
    mpi.pool_launch = pool_launch_of(LauncherId::Mpi);
    mpi.peer_launchers = names_of({LauncherId::Mpi});
    mpi.default_variant = true;
    mpi.peer_isolation = TaskIsolation::MpiAgent;
    mpi.uses_store = false;
    mpi.unavailable = mpi_unavailable;
    mpi.make = make_mpi;

    Backend nccl;
    nccl.name = "nccl";
    nccl.description = "c10d ProcessGroupNCCL: collectives on cuda:local_rank, one GPU per rank";
    nccl.compiled = DISTMETRICS_HAVE_NCCL != 0;
    nccl.comm_devices = {"cuda"};
    nccl.gpu_per_rank = true;
    nccl.pool_launch = pool_launch_of(LauncherId::Local);
    nccl.peer_launchers = names_of({LauncherId::Mpi, LauncherId::Env});
    nccl.peer_isolation = TaskIsolation::InRank;
    nccl.unavailable = nccl_unavailable;
    nccl.make = detail::make_nccl_communicator;
    return std::vector<Backend>{gloo, mpi, nccl};
  }();
  return table;
}

const Backend* find_backend(const std::string& name) {
  for (const auto& b : backends())
    if (b.name == name) return &b;
  return nullptr;
}

std::vector<std::string> backend_names() {
  std::vector<std::string> out;
  for (const auto& b : backends()) out.push_back(b.name);
  return out;
}

std::vector<std::string> default_backend_names() {
  std::vector<std::string> out;
  for (const auto& b : backends())
    if (b.default_variant) out.push_back(b.name);
  return out;
}

std::string pool_launch_for(const std::string& backend) {
  const Backend* b = find_backend(backend);
  return b ? b->pool_launch : direct_pool_launch().name;
}

TaskIsolation peer_task_isolation(const std::string& backend, const std::string& comm_device) {
  const Backend* b = find_backend(backend);
  if (b == nullptr || comm_device == "cuda") return TaskIsolation::InRank;
  return b->peer_isolation;
}

std::vector<std::string> compiled_backends() {
  std::vector<std::string> out;
  for (const auto& b : backends())
    if (b.compiled) out.push_back(b.name);
  return out;
}

std::optional<Unavailable> backend_unavailable(const std::string& backend, const std::string& comm_device,
                                               int world_size) {
  if (comm_device != "cpu" && comm_device != "cuda")
    return Unavailable(backend + ": unknown comm device '" + comm_device + "'", " (expected cpu or cuda)");
  const Backend* b = find_backend(backend);
  if (b == nullptr) {
    std::string known;
    for (const auto& name : backend_names()) known += (known.empty() ? "" : ", ") + name;
    return Unavailable("unknown backend '" + backend + "'", " (known: " + known + ")");
  }
  return b->unavailable(comm_device, world_size);
}

int rank_gpu_index(const std::string& backend, int local_rank, int visible_gpus) {
  const Backend* b = find_backend(backend);
  if ((b != nullptr && b->gpu_per_rank) || visible_gpus <= 0) return local_rank;
  return local_rank % visible_gpus;
}

namespace detail {

at::Device comm_device_of(const CommSpec& spec) {
  const Backend* backend = find_backend(spec.backend);
  if ((backend != nullptr && backend->gpu_per_rank) || spec.comm_device == "cuda") {
    // Asked only here: counting GPUs initialises CUDA, which a CPU variant never needs.
    const int visible = backend != nullptr && backend->gpu_per_rank ? 0 : visible_gpu_count();
    return at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(rank_gpu_index(spec.backend, spec.local_rank, visible)));
  }
  return at::Device(at::kCPU);
}

std::unique_ptr<Communicator> make_communicator(const CommSpec& spec, const c10::intrusive_ptr<c10d::Store>& store,
                                                const Deadline& deadline) {
  if (auto why = backend_unavailable(spec.backend, spec.comm_device, spec.world_size)) {
    throw ConfigError(why->text);
  }
  const Backend* backend = find_backend(spec.backend);
  if (spec.comm_device == "cuda" || backend->gpu_per_rank) {
    if (auto why = load_cuda_side()) throw ConfigError(spec.backend + " on cuda: " + *why);
  }
  return backend->make(spec, store, deadline);
}

#if DISTMETRICS_GLOO_THROUGH_PYTHON
namespace {
std::mutex gloo_module_mutex;
const GlooThroughPython* gloo_module = nullptr;  // set once loaded (kept by forked children)
}  // namespace

const GlooThroughPython& gloo_through_python() {
  using Entry = const GlooThroughPython* (*)();
  std::lock_guard<std::mutex> lock(gloo_module_mutex);
  if (gloo_module == nullptr)
    gloo_module = reinterpret_cast<Entry>(runtime_module_entry(kGlooThroughPythonModule, kGlooThroughPythonEntry))();
  return *gloo_module;
}

std::unique_ptr<Communicator> make_gloo_communicator(const CommSpec& spec, const c10::intrusive_ptr<c10d::Store>& store,
                                                     const Deadline& deadline) {
  return gloo_through_python().make(spec, store, deadline);
}

int gloo_groups_made_through_python() { return groups_made_through_python.load(); }
int gloo_warm_ups_run() { return warm_ups_run.load(); }
void count_gloo_group_made_through_python() { ++groups_made_through_python; }

long embedded_python_started_by_pid() {
  std::lock_guard<std::mutex> lock(gloo_module_mutex);
  return gloo_module != nullptr ? gloo_module->embedded_python_started_by() : 0;
}
#endif

#if DISTMETRICS_HAVE_NCCL
// The nccl backend is a module of its own (nccl.cpp: libtorch_cuda and NCCL), loaded by the first
// nccl communicator of a process.
std::unique_ptr<Communicator> make_nccl_communicator(const CommSpec& spec, const c10::intrusive_ptr<c10d::Store>& store,
                                                     const Deadline& deadline) {
  using Entry = CommunicatorFactory (*)();
  static const CommunicatorFactory make =
      reinterpret_cast<Entry>(runtime_module_entry("libdistmetrics_nccl.so", "distmetrics_nccl_communicator"))();
  return make(spec, store, deadline);
}
#endif

#if !DISTMETRICS_HAVE_GLOO
std::unique_ptr<Communicator> make_gloo_communicator(const CommSpec&, const c10::intrusive_ptr<c10d::Store>&,
                                                     const Deadline&) {
  throw ConfigError("gloo: this build has no Gloo");
}
#endif

#if !DISTMETRICS_HAVE_NCCL
std::unique_ptr<Communicator> make_nccl_communicator(const CommSpec&, const c10::intrusive_ptr<c10d::Store>&,
                                                     const Deadline&) {
  throw ConfigError("nccl: this build has no NCCL");
}
#endif

#if !DISTMETRICS_HAVE_MPI
std::unique_ptr<Communicator> make_mpi_communicator(const CommSpec&, const Deadline&) {
  throw ConfigError("mpi: this build has no Open MPI");
}
namespace mpi_runtime {
bool compiled() { return false; }
void ensure_initialized() { throw ConfigError("mpi: this build has no Open MPI"); }
bool initialized() { return false; }
int world_rank() { return 0; }
int world_size() { return 1; }
void finalize() {}
void abort_job(int) {}
void keep_shared_memory_in_session_dir() {}
void keep_one_node_off_the_network() {}
std::string broadcast_text(const std::string&, int, const Deadline&) { throw ConfigError("mpi: this build has no Open MPI"); }
int ranks_on_this_node() { return 1; }
}  // namespace mpi_runtime
#endif

}  // namespace detail
}  // namespace distmetrics::runtime
