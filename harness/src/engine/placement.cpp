#include "distmetrics/harness/placement.h"

#include <algorithm>
#include <stdexcept>

#include "distmetrics/runtime/backends.h"

namespace distmetrics::harness {
namespace {

const c10::Device kCpu(c10::kCPU);

c10::Device own_gpu(int local_rank) { return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(local_rank)); }

RankDevices on_cpu(int, int) { return {kCpu, kCpu}; }
RankDevices on_own_gpu(int, int local_rank) { return {own_gpu(local_rank), own_gpu(local_rank)}; }
RankDevices on_gpu0(int, int) { return {c10::Device(c10::kCUDA, 0), c10::Device(c10::kCUDA, 0)}; }
RankDevices state_on_cpu_input_on_gpu(int, int local_rank) { return {kCpu, own_gpu(local_rank)}; }
RankDevices rank0_on_cpu(int rank, int local_rank) { return rank == 0 ? on_cpu(rank, local_rank) : on_own_gpu(rank, local_rank); }

int no_gpu(int) { return 0; }
int one_gpu(int) { return 1; }
int gpu_per_rank(int world_size) { return world_size; }

bool contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

}  // namespace

const std::vector<Placement>& placements() {
  static const std::vector<Placement> all = {
      {"cpu", "state and inputs on the CPU", 1, on_cpu, no_gpu, false},
      {"cuda", "state and inputs on cuda:local_rank", 1, on_own_gpu, gpu_per_rank, true},
      {"cuda0", "state and inputs of every rank on cuda:0 (the forgotten set_device)", 1, on_gpu0, one_gpu, true},
      {"cpu_state_cuda_input", "state on the CPU, inputs on cuda:local_rank", 1, state_on_cpu_input_on_gpu,
       gpu_per_rank, false},
      {"mixed", "rank 0 on the CPU, the other ranks on cuda:local_rank", 2, rank0_on_cpu, gpu_per_rank, false},
  };
  return all;
}

std::vector<std::string> placement_names() {
  std::vector<std::string> names;
  for (const auto& p : placements()) names.push_back(p.name);
  return names;
}

const Placement* find_placement(const std::string& name) {
  for (const auto& p : placements())
    if (p.name == name) return &p;
  return nullptr;
}

RankDevices place(const std::string& placement, int rank, int local_rank) {
  const Placement* p = find_placement(placement);
  if (p == nullptr) throw std::invalid_argument("unknown placement '" + placement + "'");
  return p->devices(rank, local_rank);
}

int gpus_needed(const std::string& placement, const std::string& backend, int world_size) {
  const Placement* p = find_placement(placement);
  int needed = p ? p->gpus(world_size) : 0;
  const auto* b = runtime::find_backend(backend);
  if (b && b->gpu_per_rank) needed = world_size;  // one GPU per rank: NCCL refuses duplicates
  return needed;
}

std::string comm_device_for(const std::string& placement, const std::string& backend) {
  const auto* b = runtime::find_backend(backend);
  if (!b) return "cpu";
  if (!contains(b->comm_devices, "cpu")) return "cuda";
  const Placement* p = find_placement(placement);
  if (p && p->collectives_on_gpu && contains(b->comm_devices, "cuda")) return "cuda";
  return "cpu";
}

std::optional<std::string> skip_reason(const std::string& placement, const std::string& backend, int world_size,
                                       int gpus_available) {
  const std::string comm_device = comm_device_for(placement, backend);
  const auto* b = runtime::find_backend(backend);
  if (!b || !b->compiled) return runtime::backend_unavailable_reason(backend, comm_device, world_size);
  const int needed = gpus_needed(placement, backend, world_size);
  if (needed > gpus_available) {
    if (b->gpu_per_rank) {
      return b->name + ": needs " + std::to_string(needed) + " GPU" + (needed == 1 ? "" : "s") +
             " (one per rank), " + std::to_string(gpus_available) + " visible";
    }
    return "needs " + std::to_string(needed) + " GPU" + (needed == 1 ? "" : "s") + " (placement " + placement +
           " at world size " + std::to_string(world_size) + "), " + std::to_string(gpus_available) + " visible";
  }
  return runtime::backend_unavailable_reason(backend, comm_device, world_size);
}

}  // namespace distmetrics::harness
