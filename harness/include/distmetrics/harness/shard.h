// Shard policies: how the global data set is split across ranks and cut into batches.
// Every policy returns, per rank, its batches as lists of global sample indices; the
// single-process reference sees the whole data (each sample once) in global order.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace distmetrics::harness {

using SampleIndices = std::vector<std::int64_t>;

struct ShardPlan {
  std::string policy;
  int world_size = 1;
  std::vector<std::vector<SampleIndices>> ranks;  // ranks[r][b]: rank r's batch b
  // Samples handed out more than once (the padding of the "padded" policy); 0 elsewhere.
  std::int64_t duplicates = 0;

  std::int64_t samples_of(int rank) const;
  std::size_t batches_of(int rank) const { return ranks.at(rank).size(); }
};

// What a policy splits: the number of samples, and their label keys (one per sample) for a policy
// that orders by label, made only when asked for (lazy data generate them chunk by chunk).
struct ShardSamples {
  std::int64_t count = 0;
  std::function<std::vector<double>()> sort_keys;
};

// A shard policy: ONE entry in the table of shard.cpp. Names, validation, suggestions and docs
// listings come from the table.
struct ShardPolicy {
  std::string name;
  std::string description;
  int min_world_size;  // below it the policy means nothing (e.g. empty_rank at world size 1)
  // Fills plan.ranks (and plan.duplicates) for plan.world_size ranks, batches of at most
  // `batch_size`; `seed` drives random choices.
  void (*split)(ShardPlan& plan, const ShardSamples& samples, std::int64_t batch_size, std::uint64_t seed);
};

const std::vector<ShardPolicy>& shard_policies();
std::vector<std::string> shard_policy_names();
const ShardPolicy* find_shard_policy(const std::string& name);

// `sort_key` has one entry per sample (Dataset::sort_key): its size is the number of samples.
// `seed` drives the random sizes of "uneven".
ShardPlan make_shard_plan(const std::string& policy, const std::vector<double>& sort_key, int world_size,
                          std::int64_t batch_size, std::uint64_t seed);
// The same for `samples.count` samples whose keys come from `samples.sort_keys` when the policy
// needs them (Dataset::sort_keys). The plan holds 8 bytes a sample (its index vectors).
ShardPlan make_shard_plan(const std::string& policy, const ShardSamples& samples, int world_size,
                          std::int64_t batch_size, std::uint64_t seed);

// Step-synchronous feeding (single_process = "per_step"): every rank gets as many batches as
// the rank with the most, the missing ones empty, so that every rank calls update() once per
// global step (a rank with no data for a step passes an empty batch).
void pad_to_common_steps(ShardPlan& plan);

// Cuts indices into consecutive batches of `batch_size` (the last may be shorter).
std::vector<SampleIndices> cut_batches(const SampleIndices& indices, std::int64_t batch_size);

}  // namespace distmetrics::harness
