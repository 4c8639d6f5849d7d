#include "distmetrics/harness/placement.h"

#include <algorithm>
#include <stdexcept>

#include "distmetrics/runtime/backends.h"

namespace distmetrics::harness {
namespace {

const c10::Device kCpu(c10::kCPU);

RankDevices on_cpu(int, c10::Device) { return {kCpu, kCpu}; }
RankDevices on_own_gpu(int, c10::Device gpu) { return {gpu, gpu}; }
RankDevices on_gpu0(int, c10::Device) { return {c10::Device(c10::kCUDA, 0), c10::Device(c10::kCUDA, 0)}; }
RankDevices state_on_cpu_input_on_gpu(int, c10::Device gpu) { return {kCpu, gpu}; }
RankDevices rank0_on_cpu(int rank, c10::Device gpu) { return rank == 0 ? on_cpu(rank, gpu) : on_own_gpu(rank, gpu); }

bool contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

}  // namespace

const std::vector<Placement>& placements() {
  static const std::vector<Placement> all = {
      {"cpu", "state and inputs on the CPU", 1, on_cpu, false, false},
      {"cuda", "state and inputs on the rank's GPU", 1, on_own_gpu, true, true},
      {"cuda0", "state and inputs of every rank on cuda:0 (the forgotten set_device)", 1, on_gpu0, true, true},
      {"cpu_state_cuda_input", "state on the CPU, inputs on the rank's GPU", 1, state_on_cpu_input_on_gpu, true,
       false},
      {"mixed", "rank 0 on the CPU, the other ranks on their GPU", 2, rank0_on_cpu, true, false},
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

RankDevices place(const std::string& placement, int rank, c10::Device gpu) {
  const Placement* p = find_placement(placement);
  if (p == nullptr) throw std::invalid_argument("unknown placement '" + placement + "'");
  return p->devices(rank, gpu);
}

c10::Device rank_gpu(const std::string& backend, int local_rank, int visible_gpus) {
  return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(runtime::rank_gpu_index(backend, local_rank, visible_gpus)));
}

int gpus_needed(const std::string& placement, const std::string& backend, int world_size) {
  const auto* b = runtime::find_backend(backend);
  if (b && b->gpu_per_rank) return world_size;  // one GPU per rank: NCCL refuses duplicates
  const Placement* p = find_placement(placement);
  return p && p->uses_gpu ? 1 : 0;  // gloo ranks may share the one GPU
}

std::string comm_device_for(const std::string& placement, const std::string& backend) {
  const auto* b = runtime::find_backend(backend);
  if (!b) return "cpu";
  if (!contains(b->comm_devices, "cpu")) return "cuda";
  const Placement* p = find_placement(placement);
  if (p && p->collectives_on_gpu && contains(b->comm_devices, "cuda")) return "cuda";
  return "cpu";
}

std::optional<runtime::Unavailable> skip_reason(const std::string& placement, const std::string& backend,
                                                int world_size, int gpus_available) {
  const std::string comm_device = comm_device_for(placement, backend);
  const auto* b = runtime::find_backend(backend);
  if (!b || !b->compiled) return runtime::backend_unavailable(backend, comm_device, world_size);
  const int needed = gpus_needed(placement, backend, world_size);
  if (needed > gpus_available) {
    if (b->gpu_per_rank) {
      return runtime::Unavailable(b->name + ": needs " + std::to_string(needed) + " GPU" + (needed == 1 ? "" : "s"),
                                  " (one per rank), " + std::to_string(gpus_available) + " visible");
    }
    return runtime::Unavailable("needs a GPU", " (placement " + placement + " on " + backend +
                                                   ": its ranks may share one), " + std::to_string(gpus_available) +
                                                   " visible");
  }
  return runtime::backend_unavailable(backend, comm_device, world_size);
}

}  // namespace distmetrics::harness
