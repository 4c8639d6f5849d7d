// Which communication backends this build has, and whether one can run here: the reasons
// become `skip` outcomes ("nccl: needs 2 GPUs (one per rank), found 0").
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace distmetrics::runtime {

// The backends compiled into this build, in a fixed order: a subset of {"gloo", "mpi", "nccl"}.
std::vector<std::string> compiled_backends();

// nullopt when `world_size` ranks on this machine can run `backend` with collectives on
// `comm_device` ("cpu" or "cuda"); otherwise one line saying why not, e.g.
//   "nccl: this build has no NCCL (LibTorch without CUDA)", "nccl: needs 2 GPUs (one per rank), found 0",
//   "mpi: this build has no Open MPI", "mpi: collectives run on the CPU only (comm device cuda)".
std::optional<std::string> backend_unavailable_reason(const std::string& backend,
                                                      const std::string& comm_device, int world_size);

// The number of CUDA devices this process sees (0 in a CPU build).
int visible_gpu_count();

}  // namespace distmetrics::runtime
