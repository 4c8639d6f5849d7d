// A user's multi-rank GoogleTest, built against an installed distmetrics.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "distmetrics/fixtures/rank_test.h"
#include "distmetrics/harness/data.h"
#include "distmetrics/harness/shard.h"
#include "distmetrics/metrics/registry.h"

DISTMETRICS_RANK_TEST(Consumer, RanksAgreeOnTheirSum, DISTMETRICS_WORLD_SIZES(1, 2).backends({"gloo"})) {
  at::Tensor mine = at::full({1}, double(ctx.rank + 1), at::kDouble);
  at::Tensor sum = ctx.comm.all_reduce_copy(mine, distmetrics::runtime::ReduceOp::Sum);
  EXPECT_EQ(sum.item<double>(), ctx.world_size * (ctx.world_size + 1) / 2.0);
}

// The installed data and shard helpers (distmetrics::harness): every rank generates the same
// data from the seed, feeds its shard of it, and the synced result is the single-process one.
DISTMETRICS_RANK_TEST(Consumer, MeanSquaredErrorOnUnevenShards, DISTMETRICS_WORLD_SIZES(1, 2).backends({"gloo"})) {
  namespace dh = distmetrics::harness;
  dh::DataSpec spec;
  spec.generator = "regression";
  spec.params = dh::resolve_generator_params("regression", nlohmann::json::object());
  spec.seed = 7;
  spec.num_samples = 23;
  spec.dtype = "float64";
  const dh::Dataset data = dh::generate_data(spec);
  const dh::ShardPlan plan = dh::make_shard_plan("uneven", data.sort_keys(), ctx.world_size, /*batch_size=*/4, spec.seed);
  auto metric = distmetrics::metrics::MetricRegistry::reference().make("MeanSquaredError", nlohmann::json::object());
  metric->set_communicator(&ctx.comm);
  for (const auto& batch : plan.ranks.at(ctx.rank)) metric->update(data.rows(batch));
  const double single = (data.input - data.target).pow(2).mean().item<double>();
  EXPECT_NEAR(metric->compute().scalar(), single, 1e-12);
}
