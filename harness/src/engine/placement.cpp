#include "distmetrics/harness/placement.h"

#include <algorithm>
#include <stdexcept>

#include "distmetrics/runtime/backends.h"

namespace distmetrics::harness {

const std::vector<PlacementInfo>& placements() {
  static const std::vector<PlacementInfo> all = {
      {"cpu", "state and inputs on the CPU", 1},
      {"cuda", "state and inputs on cuda:local_rank", 1},
      {"cuda0", "state and inputs of every rank on cuda:0 (the forgotten set_device)", 1},
      {"cpu_state_cuda_input", "state on the CPU, inputs on cuda:local_rank", 1},
      {"mixed", "rank 0 on the CPU, the other ranks on cuda:local_rank", 2},
  };
  return all;
}

std::vector<std::string> placement_names() {
  std::vector<std::string> names;
  for (const auto& p : placements()) names.push_back(p.name);
  return names;
}

const PlacementInfo* find_placement(const std::string& name) {
  for (const auto& p : placements())
    if (p.name == name) return &p;
  return nullptr;
}

RankDevices place(const std::string& placement, int rank, int local_rank) {
  const c10::Device cpu(c10::kCPU);
  const c10::Device own_gpu(c10::kCUDA, static_cast<c10::DeviceIndex>(local_rank));
  if (placement == "cpu") return {cpu, cpu};
  if (placement == "cuda") return {own_gpu, own_gpu};
  if (placement == "cuda0") return {c10::Device(c10::kCUDA, 0), c10::Device(c10::kCUDA, 0)};
  if (placement == "cpu_state_cuda_input") return {cpu, own_gpu};
  if (placement == "mixed") return rank == 0 ? RankDevices{cpu, cpu} : RankDevices{own_gpu, own_gpu};
  throw std::invalid_argument("unknown placement '" + placement + "'");
}

int gpus_needed(const std::string& placement, const std::string& backend, int world_size) {
  int needed = 0;
  if (placement == "cuda" || placement == "cpu_state_cuda_input" || placement == "mixed") needed = world_size;
  if (placement == "cuda0") needed = 1;
  if (backend == "nccl") needed = world_size;  // one GPU per rank: NCCL refuses duplicates
  return needed;
}

std::string comm_device_for(const std::string& placement, const std::string& backend) {
  if (backend == "nccl") return "cuda";
  if (backend == "gloo" && (placement == "cuda" || placement == "cuda0")) return "cuda";
  return "cpu";
}

const std::vector<std::string>& backend_names() {
  static const std::vector<std::string> names = {"gloo", "mpi", "nccl"};
  return names;
}

std::optional<std::string> skip_reason(const std::string& placement, const std::string& backend, int world_size,
                                       int gpus_available) {
  const auto built = runtime::compiled_backends();
  const std::string comm_device = comm_device_for(placement, backend);
  if (std::find(built.begin(), built.end(), backend) == built.end())
    return runtime::backend_unavailable_reason(backend, comm_device, world_size);
  const int needed = gpus_needed(placement, backend, world_size);
  if (needed > gpus_available) {
    if (backend == "nccl") {
      return "nccl: needs " + std::to_string(needed) + " GPU" + (needed == 1 ? "" : "s") +
             " (one per rank), " + std::to_string(gpus_available) + " visible";
    }
    return "needs " + std::to_string(needed) + " GPU" + (needed == 1 ? "" : "s") + " (placement " + placement +
           " at world size " + std::to_string(world_size) + "), " + std::to_string(gpus_available) + " visible";
  }
  return runtime::backend_unavailable_reason(backend, comm_device, world_size);
}

}  // namespace distmetrics::harness
