// Device placements: where each rank keeps the metric's state and where its inputs arrive.
// ONE table (placement.cpp), one entry per placement: its name, what it does, the devices of
// each rank, whether it puts tensors on a GPU. Names, validation, suggestions and docs listings
// come from it. The GPU a rank uses is the backend's rule (runtime::rank_gpu_index): its own,
// cuda:local_rank, where the backend needs one GPU per rank (nccl, whose communicator runs there
// whatever the placement); otherwise ranks may share one (gloo), so a GPU placement needs one
// GPU on gloo at any world size.
#pragma once

#include <c10/core/Device.h>

#include <optional>
#include <string>
#include <vector>

#include "distmetrics/runtime/text.h"

namespace distmetrics::harness {

struct RankDevices {
  c10::Device state;  // where the metric lives (Metric::to)
  c10::Device input;  // where the batches are put before update()
};

struct Placement {
  std::string name;
  std::string description;
  int min_world_size;                                // below it the placement means nothing (mixed)
  RankDevices (*devices)(int rank, c10::Device gpu);  // where rank `rank` keeps state and inputs; `gpu`: the rank's GPU
  bool uses_gpu;                                     // some rank keeps state or inputs on a GPU
  bool collectives_on_gpu;                           // a backend that can (gloo) runs collectives on cuda
};

const std::vector<Placement>& placements();
std::vector<std::string> placement_names();
const Placement* find_placement(const std::string& name);

// Where rank `rank` keeps state and inputs; `gpu` is the GPU the rank uses (rank_gpu below).
RankDevices place(const std::string& placement, int rank, c10::Device gpu);
// The GPU rank `local_rank` of a `backend` variant uses with `visible_gpus` GPUs visible
// (runtime::rank_gpu_index): cuda:local_rank for nccl, else shared cuda:(local_rank mod visible).
c10::Device rank_gpu(const std::string& backend, int local_rank, int visible_gpus);

// How many GPUs a variant needs on one node: 0 for a CPU placement on a CPU backend; one per
// rank on nccl; 1 for a GPU placement on gloo (its ranks may share it).
int gpus_needed(const std::string& placement, const std::string& backend, int world_size);
// Where collectives run for the variant: "cuda" (cuda:local_rank) or "cpu".
std::string comm_device_for(const std::string& placement, const std::string& backend);

// Why the variant cannot run here (backend not built or unusable, too few GPUs for the
// placement), or nullopt. `gpus_available`: runtime::visible_gpu_count() (backends.h) on this machine.
std::optional<runtime::Unavailable> skip_reason(const std::string& placement, const std::string& backend, int world_size,
                                       int gpus_available);

}  // namespace distmetrics::harness
