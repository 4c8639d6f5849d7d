// Device placements: where each rank keeps the metric's state and where its inputs arrive.
// ONE table (placement.cpp), one entry per placement: its name, what it does, the devices of
// each rank, the GPUs it needs. Names, validation, suggestions and docs listings come from it.
// With a backend whose ranks need a GPU each (nccl) the communicator runs on cuda:local_rank
// whatever the placement.
#pragma once

#include <c10/core/Device.h>

#include <optional>
#include <string>
#include <vector>

namespace distmetrics::harness {

struct RankDevices {
  c10::Device state;  // where the metric lives (Metric::to)
  c10::Device input;  // where the batches are put before update()
};

struct Placement {
  std::string name;
  std::string description;
  int min_world_size;                               // below it the placement means nothing (mixed)
  RankDevices (*devices)(int rank, int local_rank);  // where rank `rank` keeps state and inputs
  int (*gpus)(int world_size);                      // GPUs it needs on one node (0: CPU only)
  bool collectives_on_gpu;                          // a backend that can (gloo) runs collectives on cuda
};

const std::vector<Placement>& placements();
std::vector<std::string> placement_names();
const Placement* find_placement(const std::string& name);

RankDevices place(const std::string& placement, int rank, int local_rank);

// How many GPUs a variant needs on one node (0 for CPU-only ones); nccl needs one per rank.
int gpus_needed(const std::string& placement, const std::string& backend, int world_size);
// Where collectives run for the variant: "cuda" (cuda:local_rank) or "cpu".
std::string comm_device_for(const std::string& placement, const std::string& backend);

// Why the variant cannot run here (backend not built or unusable, too few GPUs for the
// placement), or nullopt. `gpus_available`: runtime::visible_gpu_count() (backends.h) on this machine.
std::optional<std::string> skip_reason(const std::string& placement, const std::string& backend, int world_size,
                                       int gpus_available);

}  // namespace distmetrics::harness
