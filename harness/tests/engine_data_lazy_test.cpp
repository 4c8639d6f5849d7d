// Lazy generated data (data.h): every generator's rows made alone are the rows of the whole data
// set, to the bit (batch by batch, and a rank's own rows as a data set of their own); the whole
// data are what the generators made before they were made row by row (hashes pinned from that
// code); shard plans made from a count are the plans made from keys.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <set>

#include "distmetrics/harness/data.h"
#include "distmetrics/harness/input_dtype.h"
#include "distmetrics/harness/shard.h"
#include "engine_data_helpers.h"

namespace dh = distmetrics::harness;
using nlohmann::json;
using distmetrics::harness::testing_data::fnv;
using distmetrics::harness::testing_data::spec;

namespace {

std::uint64_t fnv_keys(const std::vector<double>& keys) {
  std::uint64_t h = 1469598103934665603ULL;
  for (double k : keys) {
    unsigned char b[sizeof(double)];
    std::memcpy(b, &k, sizeof b);
    for (auto c : b) h = (h ^ c) * 1099511628211ULL;
  }
  return h;
}

struct Config {
  std::string generator;
  json params;
  std::string dtype;
  std::uint64_t hash;  // of input, target, weight and sort keys, as the whole-data code made them
};

// Every generator, every output and the options that change how a row is drawn. The hashes were
// printed by the generators as they were before rows could be made alone (commit 9b43dd7, each
// generator looping over all num_samples = 53 samples at once, seed 7).
const std::vector<Config>& configs() {
  static const std::vector<Config> all = {
      {"binary", json::object(), "float32", 0xc6bd97d09a6921b8ULL},
      {"binary", {{"output", "logits"}, {"positive_rate", 0.2}, {"weights", "uniform"}}, "float64", 0x2a533a20fd946665ULL},
      {"binary", {{"output", "labels"}, {"weights", "integers"}, {"weight_low", 1}, {"weight_high", 5}}, "float32", 0x3e3867125295f2f8ULL},
      {"multiclass", {{"num_classes", 4}}, "float32", 0xd5fe291d4000e0e4ULL},
      {"multiclass", {{"num_classes", 3}, {"output", "probabilities"}, {"class_weights", {5, 1, 2}}}, "float64", 0x743d3e489f0e6a05ULL},
      {"multiclass", {{"num_classes", 5}, {"output", "labels"}, {"weights", "uniform"}}, "float32", 0x5ea77dba8d04ecdaULL},
      {"multilabel", {{"num_labels", 3}}, "float32", 0x909e62798cd6e380ULL},
      {"multilabel", {{"num_labels", 4}, {"output", "logits"}}, "float64", 0x9bb946b86d89e06aULL},
      {"multilabel", {{"num_labels", 2}, {"output", "labels"}, {"positive_rate", 0.6}}, "float32", 0x16fb251f0bbd2ae0ULL},
      {"regression", json::object(), "float32", 0xccdf649ed3536564ULL},
      {"regression", {{"dims", 3}, {"outliers", 0.3}, {"offset", 2.0}, {"scale", 4.0}}, "float64", 0x1117af86a60030c5ULL},
      {"segmentation", {{"num_classes", 3}, {"height", 4}, {"width", 5}}, "float32", 0x9a13b4c16f1b9976ULL},
      {"segmentation", {{"num_classes", 2}, {"height", 3}, {"width", 2}, {"output", "probabilities"}}, "float64", 0x545c14b2828af1feULL},
      {"segmentation", {{"num_classes", 4}, {"height", 2}, {"width", 3}, {"output", "labels"}}, "float32", 0xf9b930de975e3bd9ULL},
      {"scores", json::object(), "float32", 0x8a67e17fe1652666ULL},
      {"scores", {{"output", "probabilities"}, {"ties", true}}, "float64", 0xba569712305bb61cULL},
      {"values", json::object(), "float32", 0x239e3026d2c6d37aULL},
      {"values", {{"distribution", "normal"}, {"dims", 2}, {"weights", "uniform"}}, "float64", 0x0e3bb0b9f088a268ULL},
      {"values", {{"distribution", "exponential"}, {"scale", 3.0}}, "float32", 0x26ee447a2528e8b8ULL},
      {"values", {{"distribution", "integers"}, {"low", -2}, {"high", 9}, {"weights", "integers"}}, "float64", 0x81c9994fd05c69d1ULL},
      {"images", json::object(), "float32", 0x954817dc923ed5dfULL},
      {"images", {{"channels", 1}, {"height", 3}, {"width", 4}, {"data_range", 255.0}}, "float64", 0xb34a4d6a13a0ab82ULL},
  };
  return all;
}

constexpr std::int64_t kRows = 53;

std::uint64_t whole_hash(const dh::Dataset& d) {
  return fnv_keys(d.sort_key) ^ fnv(d.weight, fnv(d.target, fnv(d.input)));
}

void expect_same(const at::Tensor& a, const at::Tensor& b, const std::string& what) {
  ASSERT_EQ(a.defined(), b.defined()) << what;
  if (!a.defined()) return;
  EXPECT_EQ(a.scalar_type(), b.scalar_type()) << what;
  EXPECT_EQ(a.sizes(), b.sizes()) << what;
  EXPECT_TRUE(a.is_contiguous() && b.is_contiguous()) << what;
  // Bytes, not values: NaN-free data, but -0.0 and 0.0 must not pass for one another either.
  EXPECT_EQ(fnv(a), fnv(b)) << what;
  EXPECT_TRUE(at::equal(a, b)) << what;
}

void expect_same_batch(const distmetrics::metrics::Batch& a, const distmetrics::metrics::Batch& b, const std::string& what) {
  expect_same(a.input, b.input, what + " input");
  expect_same(a.target, b.target, what + " target");
  expect_same(a.weight, b.weight, what + " weight");
}

}  // namespace

TEST(LazyData, WholeDataAreTheBytesTheWholeDataGeneratorsMade) {
  for (const auto& c : configs()) {
#ifdef DISTMETRICS_PRINT_HASHES  // built against the code before rows could be made alone
    const auto whole = dh::generate_data(spec(c.generator, c.params, kRows, c.dtype));
    std::printf("HASH %s %s %s 0x%016llxULL\n", c.generator.c_str(), c.params.dump().c_str(), c.dtype.c_str(),
                static_cast<unsigned long long>(whole_hash(whole)));
#else
    const auto whole = dh::generate_whole_data(spec(c.generator, c.params, kRows, c.dtype));
    ASSERT_FALSE(whole.is_lazy());
    EXPECT_EQ(whole.size(), kRows);
    EXPECT_EQ(whole_hash(whole), c.hash) << c.generator << " " << c.params.dump() << " " << c.dtype;
#endif
  }
}

#ifndef DISTMETRICS_PRINT_HASHES

TEST(LazyData, RowsMadeAloneAreTheRowsOfTheWholeData) {
  std::mt19937_64 random(2024);
  for (const auto& c : configs()) {
    const auto s = spec(c.generator, c.params, kRows, c.dtype);
    const auto whole = dh::generate_whole_data(s);
    const auto lazy = dh::generate_lazy_data(s);
    ASSERT_TRUE(lazy.is_lazy());
    EXPECT_EQ(lazy.size(), kRows);
    EXPECT_TRUE(lazy.sort_key.empty());  // made only when asked for
    EXPECT_EQ(lazy.sort_keys(), whole.sort_key) << c.generator;
    const std::string what = c.generator + " " + c.params.dump() + " " + c.dtype;
    // Empty, single rows at both ends, every row in order, and random lists (repeats, any order).
    std::vector<std::vector<std::int64_t>> lists = {{}, {0}, {kRows - 1}, {}};
    for (std::int64_t i = 0; i < kRows; ++i) lists.back().push_back(i);
    for (int k = 0; k < 8; ++k) {
      std::vector<std::int64_t> rows(1 + random() % 20);
      for (auto& r : rows) r = static_cast<std::int64_t>(random() % kRows);
      lists.push_back(rows);
    }
    for (const auto& rows : lists) expect_same_batch(lazy.rows(rows), whole.rows(rows), what);
    // As a variant of an input dtype has them: cast for the ranks, rounded back for the reference.
    for (const std::string dtype : {"float16", "bfloat16", "int32"}) {
      for (bool back : {false, true}) {
        const auto cast_lazy = back ? dh::rounded_through_input_dtype(lazy, dtype) : dh::cast_to_input_dtype(lazy, dtype);
        const auto cast_whole = back ? dh::rounded_through_input_dtype(whole, dtype) : dh::cast_to_input_dtype(whole, dtype);
        ASSERT_TRUE(cast_lazy.is_lazy());
        for (const auto& rows : lists) expect_same_batch(cast_lazy.rows(rows), cast_whole.rows(rows), what + " as " + dtype);
      }
    }
  }
}

// What a rank of a variant feeds: only its own rows, made alone (generate_rows), are the rows of
// the whole data, to the bit, as the ranks have them in every input dtype.
TEST(LazyData, ARanksOwnRowsMadeAloneAreThoseRowsOfTheWholeData) {
  for (const auto& c : configs()) {
    const auto s = spec(c.generator, c.params, kRows, c.dtype);
    ASSERT_TRUE(dh::generated_whole(s));
    const auto whole = dh::generate_whole_data(s);
    const std::string what = c.generator + " " + c.params.dump() + " " + c.dtype;
    for (const std::vector<std::int64_t>& rows :
         {std::vector<std::int64_t>{}, {0}, {kRows - 1}, {3, 4, 5, 6, 7, 8, 9}, {1, 10, 19, 28, 37, 46}, {0, 2, 52}}) {
      const auto mine = dh::generate_rows(s, rows);
      ASSERT_FALSE(mine.is_lazy()) << what;
      ASSERT_EQ(mine.size(), static_cast<std::int64_t>(rows.size())) << what;
      std::vector<std::int64_t> local(rows.size());
      for (std::size_t k = 0; k < rows.size(); ++k) local[k] = static_cast<std::int64_t>(k);
      expect_same_batch(mine.rows(local), whole.rows(rows), what);
      EXPECT_EQ(mine.rows({}).size(), 0) << what;
      for (const std::string dtype : {"float16", "int32"})
        expect_same_batch(dh::cast_to_input_dtype(mine, dtype).rows(local), dh::cast_to_input_dtype(whole, dtype).rows(rows),
                          what + " as " + dtype);
    }
  }
}

TEST(LazyData, OnlyAGeneratorsWholeDataAreMadeRowByRowForARank) {
  const auto small = spec("values", json::object(), 1000);
  EXPECT_TRUE(dh::generated_whole(small));
  EXPECT_FALSE(dh::generated_whole(spec("values", json::object(), std::int64_t{1} << 25)));  // lazy
  auto file = small;
  file.generator.clear();
  file.file = "/nonexistent/x.pt";
  EXPECT_FALSE(dh::generated_whole(file));
  try {
    dh::generate_rows(small, {999, 1000});
    ADD_FAILURE() << "a row past the data was made";
  } catch (const std::out_of_range& e) {
    EXPECT_EQ(std::string(e.what()), "row 1000 asked of generator 'values', which has 1000 samples");
  }
}

TEST(LazyData, LargeGeneratedDataAreLazyAndSmallOnesWhole) {
  const auto small = spec("values", json::object(), 1000);
  EXPECT_FALSE(dh::generated_lazily(small));
  EXPECT_FALSE(dh::generate_data(small).is_lazy());
  // values: 3 numbers a sample (generator_elements_per_sample), so 2^25 samples are about 1e8.
  const std::int64_t n = std::int64_t{1} << 25;
  EXPECT_EQ(dh::generator_elements_per_sample("values", small.params), 3);
  const auto large = spec("values", json::object(), n);
  EXPECT_TRUE(dh::generated_lazily(large));
  const auto data = dh::generate_data(large);
  ASSERT_TRUE(data.is_lazy());
  EXPECT_EQ(data.size(), n);
  EXPECT_FALSE(data.input.defined());
  // The threshold: kWholeDataElements numbers are held whole, one sample more is lazy.
  const std::int64_t per = dh::generator_elements_per_sample("multiclass", {{"num_classes", 4}});
  EXPECT_EQ(per, 5);
  EXPECT_FALSE(dh::generated_lazily(spec("multiclass", {{"num_classes", 4}}, dh::kWholeDataElements / per)));
  EXPECT_TRUE(dh::generated_lazily(spec("multiclass", {{"num_classes", 4}}, dh::kWholeDataElements / per + 1)));
  // Files and Python data are never lazy.
  auto file = large;
  file.file = "/nonexistent/x.pt";
  EXPECT_FALSE(dh::generated_lazily(file));
}

namespace {

// The values generator's uniform draw, written out from the splitmix64 finalizer as
// docs/scenarios.md describes it (independent of harness/src/data/counter_rng.h).
std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
double uniform_draw(std::uint64_t seed, std::uint64_t stream, std::uint64_t counter) {
  const std::uint64_t key = mix(seed ^ mix(stream * 0x632BE59BD9B4E019ULL + 0x9E3779B97F4A7C15ULL));
  return (static_cast<double>(mix(key + (counter + 1) * 0x9E3779B97F4A7C15ULL) >> 11) + 0.5) * 0x1.0p-53;
}

}  // namespace

TEST(LazyData, RowsPastTwoToTheTwentyFourAreTheGeneratorsDraws) {
  const std::int64_t n = (std::int64_t{1} << 25) + 3;
  const auto data = dh::generate_data(spec("values", {{"low", 2.0}, {"high", 6.0}}, n, "float64", 11));
  ASSERT_TRUE(data.is_lazy());
  const std::vector<std::int64_t> rows = {n - 1, std::int64_t{1} << 24, (std::int64_t{1} << 24) + 1, 0, n - 1};
  const auto batch = data.rows(rows);
  ASSERT_EQ(batch.input.sizes(), (std::vector<std::int64_t>{5}));
  ASSERT_EQ(batch.input.scalar_type(), at::kDouble);
  for (std::size_t r = 0; r < rows.size(); ++r)
    EXPECT_EQ(batch.input[r].item<double>(), 2.0 + 4.0 * uniform_draw(11, 1, static_cast<std::uint64_t>(rows[r])))
        << "row " << rows[r];
  EXPECT_FALSE(batch.target.defined());
  EXPECT_FALSE(batch.weight.defined());
  // Prefix-stable: the first rows are those of a small whole data set of the same seed.
  const auto small = dh::generate_data(spec("values", {{"low", 2.0}, {"high", 6.0}}, 10, "float64", 11));
  EXPECT_TRUE(at::equal(data.rows({3, 9}).input, small.rows({3, 9}).input));
  EXPECT_THROW(data.rows({n}), std::out_of_range);
  EXPECT_THROW(data.rows({-1}), std::out_of_range);
}

TEST(LazyData, WhatNeedsTheWholeDataNamesTheField) {
  const auto data = dh::generate_data(spec("binary", json::object(), std::int64_t{1} << 25));
  try {
    data.require_whole("reference.python");
    FAIL() << "lazy data passed for whole";
  } catch (const std::invalid_argument& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("reference.python needs the whole data"), std::string::npos) << message;
    EXPECT_NE(message.find("33554432 samples of generator 'binary' (data.num_samples)"), std::string::npos) << message;
  }
  EXPECT_NO_THROW(dh::generate_data(spec("binary", json::object(), 10)).require_whole("reference.python"));
}

// --- shard plans from a count ------------------------------------------------------------------

TEST(LazyShards, PlansFromACountAreThePlansFromKeys) {
  for (const auto& policy : dh::shard_policy_names()) {
    for (int ws : {1, 2, 3, 4}) {
      if (ws < dh::find_shard_policy(policy)->min_world_size) continue;
      for (std::int64_t n : {0, 1, 5, 23, 64}) {
        for (std::int64_t batch : {1, 4, 100}) {
          std::vector<double> keys(n);
          for (std::int64_t i = 0; i < n; ++i) keys[i] = static_cast<double>((i * 5) % 3);
          int asked = 0;
          const dh::ShardSamples samples{n, [&] {
                                           ++asked;
                                           return keys;
                                         }};
          const auto from_count = dh::make_shard_plan(policy, samples, ws, batch, 9);
          const auto from_keys = dh::make_shard_plan(policy, keys, ws, batch, 9);
          EXPECT_EQ(from_count.ranks, from_keys.ranks) << policy << " ws" << ws << " n" << n;
          EXPECT_EQ(from_count.duplicates, from_keys.duplicates) << policy;
          // Only the label-skewed policy reads the keys.
          EXPECT_EQ(asked, policy == "skewed" ? 1 : 0) << policy;
        }
      }
    }
  }
}

TEST(LazyShards, PolicySplitsWrittenOut) {
  // scattered, 7 samples on 3 ranks in batches of 2: rank 0 gets 0, 3, 6.
  const dh::ShardSamples seven{7, nullptr};
  const auto sc = dh::make_shard_plan("scattered", seven, 3, 2, 0);
  EXPECT_EQ(sc.ranks[0], (std::vector<dh::SampleIndices>{{0, 3}, {6}}));
  EXPECT_EQ(sc.ranks[2], (std::vector<dh::SampleIndices>{{2, 5}}));
  // padded: 7 samples on 3 ranks pad to 9 with samples 0 and 1 (DistributedSampler).
  const auto pad = dh::make_shard_plan("padded", seven, 3, 2, 0);
  EXPECT_EQ(pad.duplicates, 2);
  EXPECT_EQ(pad.ranks[1], (std::vector<dh::SampleIndices>{{1, 4}, {0}}));
  EXPECT_EQ(pad.ranks[2], (std::vector<dh::SampleIndices>{{2, 5}, {1}}));
  // even: 7 on 2 ranks, batches of 3: 4 and 3 samples.
  const auto even = dh::make_shard_plan("even", seven, 2, 3, 0);
  EXPECT_EQ(even.ranks[0], (std::vector<dh::SampleIndices>{{0, 1, 2}, {3}}));
  EXPECT_EQ(even.ranks[1], (std::vector<dh::SampleIndices>{{4, 5, 6}}));
  EXPECT_THROW(dh::make_shard_plan("skewed", seven, 2, 3, 0), std::invalid_argument);  // no keys given
  EXPECT_THROW(dh::make_shard_plan("even", seven, 2, 0, 0), std::invalid_argument);
}

TEST(LazyShards, SkewedPlanOfLazyDataIsThePlanOfWholeData) {
  const auto s = spec("multiclass", {{"num_classes", 3}, {"class_weights", {1, 4, 2}}}, 300);
  const auto whole = dh::generate_whole_data(s);
  const auto lazy = dh::generate_lazy_data(s);
  const auto a = dh::make_shard_plan("skewed", dh::ShardSamples{lazy.size(), [&] { return lazy.sort_keys(); }}, 3, 16, 0);
  const auto b = dh::make_shard_plan("skewed", whole.sort_key, 3, 16, 0);
  EXPECT_EQ(a.ranks, b.ranks);
  // Ordered by label: rank 0 holds every sample of class 0 (about 43 of 300, fewer than its 100),
  // and no label on rank 0 is above a label on rank 2.
  auto targets_of = [&](int rank) {
    std::vector<at::Tensor> parts;
    for (const auto& batch : a.ranks[rank]) parts.push_back(lazy.rows(batch).target);
    return at::cat(parts);
  };
  EXPECT_EQ(targets_of(0).eq(0).sum().item<std::int64_t>(), whole.target.eq(0).sum().item<std::int64_t>());
  EXPECT_GT(whole.target.eq(0).sum().item<std::int64_t>(), 0);
  EXPECT_LE(targets_of(0).max().item<std::int64_t>(), targets_of(2).min().item<std::int64_t>());
}

TEST(LazyShards, APlanOfTwoToTheTwentyFiveSamplesHandsOutEachOnce) {
  const std::int64_t n = std::int64_t{1} << 25, batch = 1 << 16;
  const auto plan = dh::make_shard_plan("even", dh::ShardSamples{n, nullptr}, 2, batch, 0);
  ASSERT_EQ(plan.ranks.size(), 2u);
  EXPECT_EQ(plan.samples_of(0), n / 2);
  EXPECT_EQ(plan.samples_of(1), n / 2);
  EXPECT_EQ(plan.batches_of(0), 256u);  // 2^24 / 2^16
  EXPECT_EQ(plan.ranks[0].front().front(), 0);
  EXPECT_EQ(plan.ranks[0].back().back(), n / 2 - 1);
  EXPECT_EQ(plan.ranks[1].front().front(), n / 2);
  EXPECT_EQ(plan.ranks[1].back().back(), n - 1);
  const std::int64_t m = std::int64_t{1} << 20;
  const auto rr = dh::make_shard_plan("round_robin", dh::ShardSamples{m + 5, nullptr}, 2, batch, 0);
  // 17 global batches: rank 0 gets batches 0, 2, ..., 16 (the short last one), rank 1 the others.
  EXPECT_EQ(rr.samples_of(0), 8 * batch + 5);
  EXPECT_EQ(rr.samples_of(1), 8 * batch);
  EXPECT_EQ(rr.ranks[0].back(), (dh::SampleIndices{m, m + 1, m + 2, m + 3, m + 4}));
}

#endif
