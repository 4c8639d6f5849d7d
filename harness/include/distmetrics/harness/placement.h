// Device placements: where each rank keeps the metric's state and where its inputs arrive.
// With backend nccl the communicator runs on cuda:local_rank whatever the placement.
#pragma once

#include <c10/core/Device.h>

#include <optional>
#include <string>
#include <vector>

namespace distmetrics::harness {

struct PlacementInfo {
  std::string name;
  std::string description;
  int min_world_size;
};

const std::vector<PlacementInfo>& placements();
std::vector<std::string> placement_names();
const PlacementInfo* find_placement(const std::string& name);

struct RankDevices {
  c10::Device state;  // where the metric lives (Metric::to)
  c10::Device input;  // where the batches are put before update()
};
RankDevices place(const std::string& placement, int rank, int local_rank);

// How many GPUs a variant needs on one node (0 for CPU-only ones); nccl needs one per rank.
int gpus_needed(const std::string& placement, const std::string& backend, int world_size);
// Where collectives run for the variant: "cuda" (cuda:local_rank) or "cpu".
std::string comm_device_for(const std::string& placement, const std::string& backend);

// Why the variant cannot run here (backend not built or unusable, too few GPUs for the
// placement), or nullopt. `gpus_available`: runtime::visible_gpu_count() (backends.h) on this machine.
std::optional<std::string> skip_reason(const std::string& placement, const std::string& backend, int world_size,
                                       int gpus_available);

// Every backend a scenario may name ("gloo", "mpi", "nccl"), built here or not.
const std::vector<std::string>& backend_names();

}  // namespace distmetrics::harness
