// The communication backends: ONE table (backends.cpp), one entry per backend, with everything
// the layers above ask of a backend: its name, whether it is built and why it cannot run here,
// the factory of its communicator, how its ranks are launched, the devices it needs. Names,
// validation, suggestions, skip reasons and docs listings come from the table; adding a backend
// is one entry there plus its communicator (docs/design.md, "Extension points").
#pragma once

#include <c10/util/intrusive_ptr.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "distmetrics/runtime/comm.h"
#include "distmetrics/runtime/deadline.h"
#include "distmetrics/runtime/rank_pool.h"
#include "distmetrics/runtime/text.h"

namespace c10d {
class Store;
}

namespace distmetrics::runtime {

namespace detail {
struct CommSpec;  // backend_factory.h: what one rank's communicator is built from
}

// Builds one rank's communicator; `store` is fresh for it (backends that need none ignore it).
using CommunicatorFactory = std::unique_ptr<Communicator> (*)(const detail::CommSpec& spec,
                                                              const c10::intrusive_ptr<c10d::Store>& store,
                                                              const Deadline& deadline);

// How a rank started by a peer launcher (mpirun, env) runs a backend's tasks so that a task that
// crashes, exits or loops cannot take its rank along (docs/runtime.md, "Peer launchers").
enum class TaskIsolation {
  ForkedChild,  // a child process of the rank, forked per job (its own process group)
  MpiAgent,     // the rank's MPI agent, forked before MPI_Init (MPI cannot be used in a child forked after it)
  InRank,       // the rank itself (CUDA does not survive a fork): a crash ends the job through the launcher
};

struct Backend {
  std::string name;                          // "gloo": what scenarios and --backend say
  std::string description;                   // one line, for docs and listings
  bool compiled = false;                     // built into this binary
  std::vector<std::string> comm_devices;     // where its collectives can run: "cpu", "cuda"
  bool gpu_per_rank = false;                 // each rank needs a GPU of its own (NCCL refuses duplicates)
  std::string pool_launch;                   // how a local rank pool starts ranks for it: a PoolLaunch name (launchers.h)
  std::vector<std::string> peer_launchers;   // the peer launchers it runs under (launchers.h names)
  bool default_variant = false;              // expanded when a scenario names no backends
  TaskIsolation peer_isolation = TaskIsolation::InRank;  // its CPU tasks under a peer launcher
  bool uses_store = true;                    // its communicator is built over the job's store (mpi's is not)
  // A hung CPU job's collectives fail at once where a rank's TCP connections are shut down (its
  // process groups' pairs), so a local pool ends the hang in its workers (kWorkerAbortSignal) and
  // keeps them for the next job, instead of forking new ones: gloo. MPI's and NCCL's cannot.
  bool hangs_end_in_place = false;
  // A task (TaskRegistry name) a local rank pool runs on this backend once per (re)start, before
  // its first job on it, under the start's deadline: what the backend loads once per process
  // (gloo through torch's Python binding imports torch.distributed, seconds) is then the start's
  // cost, not a job's. Empty: the backend needs none.
  std::string pool_warm_up_task;
  // What a local pool's supervisor loads into itself before its first workers are forked, so
  // that the zygote restarted from it (restart_worker_zygote) gives every worker that load for
  // free (gloo through torch's Python binding: torch.distributed imported, ~4 s of CPU per worker
  // otherwise). Returns the hooks that keep what it loaded sound across fork, or nullopt when it
  // could not load it (the workers then load it themselves, in pool_warm_up_task). Null: nothing.
  std::optional<ForkHooks> (*load_for_forked_workers)() = nullptr;
  // Why `world_size` ranks cannot run it on this machine with collectives on `comm_device`
  // (not built, no GPUs, ...), or nullopt.
  std::optional<Unavailable> (*unavailable)(const std::string& comm_device, int world_size) = nullptr;
  CommunicatorFactory make = nullptr;
};

// Every backend, built here or not, in a fixed order ("gloo", "mpi", "nccl").
const std::vector<Backend>& backends();
const Backend* find_backend(const std::string& name);
std::vector<std::string> backend_names();
// The backends a scenario that names none expands to.
std::vector<std::string> default_backend_names();

// How a local rank pool starts ranks for `backend` (PoolOptions::launch): its pool_launch, the
// mpi launcher's for a backend whose ranks only mpirun can start; direct_pool_launch() for an
// unknown name.
std::string pool_launch_for(const std::string& backend);

// How a peer rank runs `backend`'s tasks with collectives on `comm_device`: the backend's
// peer_isolation, except that CUDA tasks always run in the rank (CUDA does not survive a fork);
// InRank for an unknown name.
TaskIsolation peer_task_isolation(const std::string& backend, const std::string& comm_device);

// The backends compiled into this build, in table order: a subset of backend_names().
std::vector<std::string> compiled_backends();

// nullopt when `world_size` ranks on this machine can run `backend` with collectives on
// `comm_device` ("cpu" or "cuda"); otherwise why not: its text one line, e.g.
//   "nccl: this build has no NCCL (LibTorch without CUDA)", "nccl: needs 2 GPUs (one per rank), found 0",
//   "mpi: this build has no Open MPI", "mpi: collectives run on the CPU only (comm device cuda)",
// and its gist what the views group it by ("nccl: needs 2 GPUs").
std::optional<Unavailable> backend_unavailable(const std::string& backend, const std::string& comm_device,
                                               int world_size);

// The number of CUDA devices this process sees (0 in a CPU build). It loads nothing of
// LibTorch's: until LibTorch's CUDA side is in the process (load_cuda_side) it asks the NVIDIA
// driver (no driver library: 0), then LibTorch. Either way the driver is initialised in this
// process, as by cudaGetDeviceCount.
int visible_gpu_count();

// The GPU a rank with `local_rank` uses on a node where `visible_gpus` GPUs are visible: its own,
// cuda:local_rank, on a backend that needs one GPU per rank (nccl refuses two ranks on one GPU);
// otherwise cuda:(local_rank mod visible_gpus): gloo ranks may share a GPU, so one GPU runs every
// gloo placement at any world size, and ranks spread over the GPUs where there are several.
int rank_gpu_index(const std::string& backend, int local_rank, int visible_gpus);

// Loads LibTorch's CUDA side into this process (once): a build against a CUDA LibTorch links only
// its CPU side, so that commands and variants that use no GPU never load libtorch_cuda and what
// it loads (cuBLAS, cuDNN, NCCL: ~0.15 s and ~150 MB a process). Call it before this process's
// first CUDA work, and before anything asks LibTorch about CUDA (torch keeps its first answer):
// the communicator of a variant whose collectives run on a GPU, the rank that puts tensors on
// one. nullopt when loaded (or the program links it); else why not, e.g. "LibTorch 1.13.0 has no CUDA".
std::optional<std::string> load_cuda_side();

}  // namespace distmetrics::runtime
