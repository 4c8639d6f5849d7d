#include "distmetrics/harness/shard.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "../data/counter_rng.h"

namespace distmetrics::harness {
namespace {

constexpr std::uint64_t kUnevenStream = 100;

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

// Batches of the samples [begin, end), made directly (no list of all samples first): the plan
// of a large data set is then its index vectors and nothing more.
std::vector<SampleIndices> range_batches(std::int64_t begin, std::int64_t end, std::int64_t batch_size) {
  std::vector<SampleIndices> out;
  for (std::int64_t b = begin; b < end; b += batch_size) {
    SampleIndices batch(static_cast<std::size_t>(std::min(end, b + batch_size) - b));
    std::iota(batch.begin(), batch.end(), b);
    out.push_back(std::move(batch));
  }
  return out;
}

// Contiguous blocks of the given sizes over 0, 1, ..., cut into batches.
void contiguous(ShardPlan& plan, const std::vector<std::int64_t>& sizes, std::int64_t batch_size) {
  plan.ranks.clear();
  std::int64_t begin = 0;
  for (auto size : sizes) {
    plan.ranks.push_back(range_batches(begin, begin + size, batch_size));
    begin += size;
  }
}

void split_even(ShardPlan& plan, const ShardSamples& samples, std::int64_t batch_size, std::uint64_t) {
  contiguous(plan, even_sizes(samples.count, plan.world_size), batch_size);
}

void split_uneven(ShardPlan& plan, const ShardSamples& samples, std::int64_t batch_size, std::uint64_t seed) {
  contiguous(plan, uneven_sizes(samples.count, plan.world_size, seed), batch_size);
}

void split_empty_rank(ShardPlan& plan, const ShardSamples& samples, std::int64_t batch_size, std::uint64_t) {
  const int w = plan.world_size;
  auto sizes = w == 1 ? std::vector<std::int64_t>{0} : even_sizes(samples.count, w - 1);
  if (w > 1) sizes.push_back(0);
  contiguous(plan, sizes, batch_size);
}

void split_skewed(ShardPlan& plan, const ShardSamples& samples, std::int64_t batch_size, std::uint64_t) {
  const std::vector<double> sort_key = samples.sort_keys ? samples.sort_keys() : std::vector<double>{};
  if (static_cast<std::int64_t>(sort_key.size()) != samples.count)
    throw std::invalid_argument("the skewed shard policy needs one sort key per sample: " +
                                std::to_string(sort_key.size()) + " keys for " + std::to_string(samples.count) +
                                " samples");
  SampleIndices order(static_cast<std::size_t>(samples.count));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return sort_key[a] < sort_key[b]; });
  auto per_rank = blocks(order, even_sizes(samples.count, plan.world_size));
  for (auto& indices : per_rank) std::sort(indices.begin(), indices.end());  // global order within a rank
  plan.ranks = batched(per_rank, batch_size);
}

void split_round_robin(ShardPlan& plan, const ShardSamples& samples, std::int64_t batch_size, std::uint64_t) {
  plan.ranks.assign(plan.world_size, {});
  auto global = range_batches(0, samples.count, batch_size);
  for (std::size_t b = 0; b < global.size(); ++b) plan.ranks[b % plan.world_size].push_back(std::move(global[b]));
}

// Entry i of a list of `total` samples, whose entry i is sample `sample(i)`, goes to rank
// i % world size; batches filled as they go.
template <typename Sample>
void deal(ShardPlan& plan, std::int64_t total, Sample sample, std::int64_t batch_size) {
  const int w = plan.world_size;
  plan.ranks.assign(w, {});
  for (std::int64_t i = 0; i < total; ++i) {
    auto& batches = plan.ranks[i % w];
    if (batches.empty() || static_cast<std::int64_t>(batches.back().size()) == batch_size) {
      const std::int64_t left = (total - i + w - 1) / w;  // entries this rank has still to get
      batches.emplace_back().reserve(static_cast<std::size_t>(std::min(left, batch_size)));
    }
    batches.back().push_back(sample(i));
  }
}

void split_scattered(ShardPlan& plan, const ShardSamples& samples, std::int64_t batch_size, std::uint64_t) {
  deal(plan, samples.count, [](std::int64_t i) { return i; }, batch_size);
}

void split_padded(ShardPlan& plan, const ShardSamples& samples, std::int64_t batch_size, std::uint64_t) {
  const std::int64_t n = samples.count;
  const std::int64_t total = n == 0 ? 0 : (n + plan.world_size - 1) / plan.world_size * plan.world_size;
  plan.duplicates = total - n;
  // The padding repeats the first samples: entry n + k is sample k % n.
  deal(plan, total, [n](std::int64_t i) { return i < n ? i : (i - n) % n; }, batch_size);
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
  return make_shard_plan(policy, ShardSamples{static_cast<std::int64_t>(sort_key.size()), [&] { return sort_key; }},
                         world_size, batch_size, seed);
}

ShardPlan make_shard_plan(const std::string& policy, const ShardSamples& samples, int world_size,
                          std::int64_t batch_size, std::uint64_t seed) {
  if (world_size < 1) throw std::invalid_argument("make_shard_plan: world size must be >= 1");
  if (batch_size < 1) throw std::invalid_argument("make_shard_plan: batch size must be >= 1");
  ShardPlan plan;
  plan.policy = policy;
  plan.world_size = world_size;
  const ShardPolicy* p = find_shard_policy(policy);
  if (p == nullptr) throw std::invalid_argument("unknown shard policy '" + policy + "'");
  p->split(plan, samples, batch_size, seed);
  return plan;
}

}  // namespace distmetrics::harness
