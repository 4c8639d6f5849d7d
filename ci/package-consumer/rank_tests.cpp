// A user's multi-rank GoogleTest, built against an installed distmetrics.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "distmetrics/fixtures/rank_test.h"

DISTMETRICS_RANK_TEST(Consumer, RanksAgreeOnTheirSum, DISTMETRICS_WORLD_SIZES(1, 2).backends({"gloo"})) {
  at::Tensor mine = at::full({1}, double(ctx.rank + 1), at::kDouble);
  at::Tensor sum = ctx.comm.all_reduce_copy(mine, distmetrics::runtime::ReduceOp::Sum);
  EXPECT_EQ(sum.item<double>(), ctx.world_size * (ctx.world_size + 1) / 2.0);
}
