#include "distmetrics/harness/shard.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "counter_rng.h"

namespace distmetrics::harness {
namespace {

constexpr std::uint64_t kUnevenStream = 100;

SampleIndices range(std::int64_t begin, std::int64_t end) {
  SampleIndices out(std::max<std::int64_t>(end - begin, 0));
  std::iota(out.begin(), out.end(), begin);
  return out;
}

// Contiguous blocks of the given sizes, over `order` (global indices).
std::vector<SampleIndices> blocks(const SampleIndices& order, const std::vector<std::int64_t>& sizes) {
  std::vector<SampleIndices> out;
  std::int64_t begin = 0;
  for (auto size : sizes) {
    out.emplace_back(order.begin() + begin, order.begin() + begin + size);
    begin += size;
  }
  return out;
}

// n split into w sizes that differ by at most one, larger first (like torch.chunk).
std::vector<std::int64_t> even_sizes(std::int64_t n, int w) {
  std::vector<std::int64_t> sizes(w, n / w);
  for (int r = 0; r < n % w; ++r) ++sizes[r];
  return sizes;
}

// Random proportions from the seed: rank r gets about n * u_r / sum(u).
std::vector<std::int64_t> uneven_sizes(std::int64_t n, int w, std::uint64_t seed) {
  const detail::CounterRng rng(seed, kUnevenStream + static_cast<std::uint64_t>(w));
  std::vector<double> weight(w);
  double total = 0;
  for (int r = 0; r < w; ++r) total += weight[r] = 0.05 + rng.uniform(r);
  std::vector<std::int64_t> sizes(w);
  std::int64_t given = 0;
  for (int r = 0; r < w; ++r) given += sizes[r] = static_cast<std::int64_t>(n * weight[r] / total);
  for (int r = 0; given < n; r = (r + 1) % w, ++given) ++sizes[r];
  return sizes;
}

std::vector<std::vector<SampleIndices>> batched(const std::vector<SampleIndices>& per_rank, std::int64_t batch_size) {
  std::vector<std::vector<SampleIndices>> out;
  for (const auto& indices : per_rank) out.push_back(cut_batches(indices, batch_size));
  return out;
}

SampleIndices all_samples(const std::vector<double>& sort_key) {
  return range(0, static_cast<std::int64_t>(sort_key.size()));
}

void split_even(ShardPlan& plan, const std::vector<double>& sort_key, std::int64_t batch_size, std::uint64_t) {
  const auto all = all_samples(sort_key);
  plan.ranks = batched(blocks(all, even_sizes(static_cast<std::int64_t>(all.size()), plan.world_size)), batch_size);
}

void split_uneven(ShardPlan& plan, const std::vector<double>& sort_key, std::int64_t batch_size, std::uint64_t seed) {
  const auto all = all_samples(sort_key);
  plan.ranks =
      batched(blocks(all, uneven_sizes(static_cast<std::int64_t>(all.size()), plan.world_size, seed)), batch_size);
}

void split_empty_rank(ShardPlan& plan, const std::vector<double>& sort_key, std::int64_t batch_size, std::uint64_t) {
  const auto all = all_samples(sort_key);
  const int w = plan.world_size;
  auto sizes = w == 1 ? std::vector<std::int64_t>{0} : even_sizes(static_cast<std::int64_t>(all.size()), w - 1);
  if (w > 1) sizes.push_back(0);
  plan.ranks = batched(blocks(all, sizes), batch_size);
}

void split_skewed(ShardPlan& plan, const std::vector<double>& sort_key, std::int64_t batch_size, std::uint64_t) {
  SampleIndices order = all_samples(sort_key);
  std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return sort_key[a] < sort_key[b]; });
  auto per_rank = blocks(order, even_sizes(static_cast<std::int64_t>(order.size()), plan.world_size));
  for (auto& indices : per_rank) std::sort(indices.begin(), indices.end());  // global order within a rank
  plan.ranks = batched(per_rank, batch_size);
}

void split_round_robin(ShardPlan& plan, const std::vector<double>& sort_key, std::int64_t batch_size, std::uint64_t) {
  plan.ranks.assign(plan.world_size, {});
  const auto global = cut_batches(all_samples(sort_key), batch_size);
  for (std::size_t b = 0; b < global.size(); ++b) plan.ranks[b % plan.world_size].push_back(global[b]);
}

// Sample i of `order` goes to rank i % world size.
void deal(ShardPlan& plan, const SampleIndices& order, std::int64_t batch_size) {
  std::vector<SampleIndices> per_rank(plan.world_size);
  for (std::size_t i = 0; i < order.size(); ++i) per_rank[i % plan.world_size].push_back(order[i]);
  plan.ranks = batched(per_rank, batch_size);
}

void split_scattered(ShardPlan& plan, const std::vector<double>& sort_key, std::int64_t batch_size, std::uint64_t) {
  deal(plan, all_samples(sort_key), batch_size);
}

void split_padded(ShardPlan& plan, const std::vector<double>& sort_key, std::int64_t batch_size, std::uint64_t) {
  SampleIndices order = all_samples(sort_key);
  const auto n = static_cast<std::int64_t>(order.size());
  if (n > 0) {
    const std::int64_t total = (n + plan.world_size - 1) / plan.world_size * plan.world_size;
    for (std::int64_t i = 0; static_cast<std::int64_t>(order.size()) < total; ++i) order.push_back(i % n);
    plan.duplicates = total - n;
  }
  deal(plan, order, batch_size);
}

}  // namespace

std::int64_t ShardPlan::samples_of(int rank) const {
  std::int64_t n = 0;
  for (const auto& batch : ranks.at(rank)) n += static_cast<std::int64_t>(batch.size());
  return n;
}

const std::vector<ShardPolicy>& shard_policies() {
  static const std::vector<ShardPolicy> policies = {
      {"even", "contiguous blocks of equal size (sizes differ by at most one sample)", 1, split_even},
      {"uneven", "contiguous blocks of random sizes drawn from the seed", 1, split_uneven},
      {"empty_rank", "the last rank gets no data; the others split it evenly", 2, split_empty_rank},
      {"skewed", "label-skewed (non-IID): samples ordered by label, then equal contiguous blocks", 1, split_skewed},
      {"round_robin", "whole global batches dealt to ranks in turn: batch b goes to rank b % world size", 1,
       split_round_robin},
      {"scattered", "single samples dealt in turn: sample i goes to rank i % world size", 1, split_scattered},
      {"padded", "like torch DistributedSampler(shuffle=False): padded with repeated samples to a multiple "
                 "of the world size, then sample i of the padded list goes to rank i % world size",
       1, split_padded},
  };
  return policies;
}

std::vector<std::string> shard_policy_names() {
  std::vector<std::string> names;
  for (const auto& p : shard_policies()) names.push_back(p.name);
  return names;
}

const ShardPolicy* find_shard_policy(const std::string& name) {
  for (const auto& p : shard_policies())
    if (p.name == name) return &p;
  return nullptr;
}

void pad_to_common_steps(ShardPlan& plan) {
  std::size_t steps = 0;
  for (const auto& rank : plan.ranks) steps = std::max(steps, rank.size());
  for (auto& rank : plan.ranks) rank.resize(steps);  // new batches are empty
}

std::vector<SampleIndices> cut_batches(const SampleIndices& indices, std::int64_t batch_size) {
  if (batch_size < 1) throw std::invalid_argument("cut_batches: batch size must be >= 1");
  std::vector<SampleIndices> out;
  for (std::size_t begin = 0; begin < indices.size(); begin += batch_size) {
    const auto end = std::min(indices.size(), begin + static_cast<std::size_t>(batch_size));
    out.emplace_back(indices.begin() + begin, indices.begin() + end);
  }
  return out;
}

ShardPlan make_shard_plan(const std::string& policy, const std::vector<double>& sort_key, int world_size,
                          std::int64_t batch_size, std::uint64_t seed) {
  if (world_size < 1) throw std::invalid_argument("make_shard_plan: world size must be >= 1");
  ShardPlan plan;
  plan.policy = policy;
  plan.world_size = world_size;
  const ShardPolicy* p = find_shard_policy(policy);
  if (p == nullptr) throw std::invalid_argument("unknown shard policy '" + policy + "'");
  p->split(plan, sort_key, batch_size, seed);
  return plan;
}

}  // namespace distmetrics::harness
