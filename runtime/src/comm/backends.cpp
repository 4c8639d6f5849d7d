// Which backends exist and can run here, and building a communicator by backend name.
#include <ATen/detail/CUDAHooksInterface.h>

#include "backend_factory.h"
#include "distmetrics/build_config.h"
#include "distmetrics/runtime/backends.h"
#include "distmetrics/runtime/errors.h"

namespace distmetrics::runtime {

std::vector<std::string> compiled_backends() {
  std::vector<std::string> out;
  if (DISTMETRICS_HAVE_GLOO) out.push_back("gloo");
  if (DISTMETRICS_HAVE_MPI) out.push_back("mpi");
  if (DISTMETRICS_HAVE_NCCL) out.push_back("nccl");
  return out;
}

int visible_gpu_count() {
  try {
    return static_cast<int>(at::detail::getCUDAHooks().getNumGPUs());
  } catch (const std::exception&) {
    return 0;  // a CUDA build on a machine without a driver
  }
}

std::optional<std::string> backend_unavailable_reason(const std::string& backend, const std::string& comm_device,
                                                      int world_size) {
  if (comm_device != "cpu" && comm_device != "cuda") {
    return backend + ": unknown comm device '" + comm_device + "' (expected cpu or cuda)";
  }
  const int gpus = visible_gpu_count();
  if (backend == "gloo") {
    if (!DISTMETRICS_HAVE_GLOO) return std::string("gloo: this build has no Gloo (install libgloo-dev and reconfigure)");
    if (comm_device == "cuda") {
      if (!DISTMETRICS_TORCH_HAS_CUDA) return std::string("gloo on cuda: this LibTorch has no CUDA");
      if (gpus < 1) return std::string("gloo on cuda: needs a GPU, found 0");
    }
    return std::nullopt;
  }
  if (backend == "nccl") {
    if (!DISTMETRICS_HAVE_NCCL) return std::string("nccl: this build has no NCCL (it needs a CUDA LibTorch)");
    if (gpus < world_size) {
      return "nccl: needs " + std::to_string(world_size) + " GPUs (one per rank), found " + std::to_string(gpus);
    }
    return std::nullopt;
  }
  if (backend == "mpi") {
    if (!DISTMETRICS_HAVE_MPI) return std::string("mpi: this build has no Open MPI (install libopenmpi-dev openmpi-bin and reconfigure)");
    if (comm_device == "cuda") return std::string("mpi: collectives run on the CPU only (comm device cuda)");
    return std::nullopt;
  }
  return "unknown backend '" + backend + "' (known: gloo, mpi, nccl)";
}

namespace detail {

at::Device comm_device_of(const CommSpec& spec) {
  if (spec.backend == "nccl") return at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(spec.local_rank));
  if (spec.comm_device == "cuda") {
    const int gpus = visible_gpu_count();  // Gloo ranks may share a GPU
    return at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(gpus > 0 ? spec.local_rank % gpus : 0));
  }
  return at::Device(at::kCPU);
}

std::unique_ptr<Communicator> make_communicator(const CommSpec& spec, const c10::intrusive_ptr<c10d::Store>& store,
                                                const Deadline& deadline) {
  if (auto reason = backend_unavailable_reason(spec.backend, spec.comm_device, spec.world_size)) {
    throw ConfigError(*reason);
  }
  if (spec.backend == "gloo") return make_gloo_communicator(spec, store, deadline);
  if (spec.backend == "nccl") return make_nccl_communicator(spec, store, deadline);
  return make_mpi_communicator(spec, deadline);
}

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
std::string broadcast_text(const std::string&, int, const Deadline&) { throw ConfigError("mpi: this build has no Open MPI"); }
}  // namespace mpi_runtime
#endif

}  // namespace detail
}  // namespace distmetrics::runtime
