// Every collective at world sizes 1 to 4 on every CPU backend built (gloo, mpi), against exact
// closed forms, nccl-tests style: rank r contributes values computed from r, so each result is
// a formula in the world size N.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <map>

#include "distmetrics/fixtures/rank_test.h"
#include "distmetrics/runtime/errors.h"

namespace distmetrics::runtime {
namespace {

using fixtures::RankTestContext;
constexpr std::int64_t kBig = std::int64_t{1} << 40;  // far beyond float32's exact 2^24

std::int64_t factorial(std::int64_t n) { return n <= 1 ? 1 : n * factorial(n - 1); }

std::map<std::string, int> count_ops(const Communicator& comm) {
  std::map<std::string, int> counts;
  for (const auto& record : comm.trace()) ++counts[record.op];
  return counts;
}

DISTMETRICS_RANK_TEST(Collectives, AllReduceSumIsExactForEveryDtype, DISTMETRICS_WORLD_SIZES(1, 2, 3, 4)) {
  const std::int64_t N = ctx.world_size, r = ctx.rank;
  std::vector<at::Tensor> t{
      at::arange(4, at::kDouble) * 0.5 + double(r + 1),      // 0: float64, sum = N(N+1)/2 + N i/2
      at::arange(3, at::kLong) * r + (kBig + r),             // 1: int64 past 2^24, sum = N 2^40 + (i+1) N(N-1)/2
      at::full({2, 2}, float(r + 1), at::kFloat),            // 2: float32, sum = N(N+1)/2
      at::full({5}, std::int32_t(3 * r), at::kInt),          // 3: int32, sum = 3 N(N-1)/2
      at::full({2}, -double(r + 1), at::kDouble),            // 4: float64 again (same buffer as 0)
      at::full({2}, std::int16_t(r + 1), at::kShort),        // 5: int16
      at::full({2}, double(r + 1), at::kHalf),               // 6: float16
      at::full({2}, double(r + 1), at::kBFloat16),           // 7: bfloat16
      at::full({1}, std::uint8_t(r + 1), at::kByte),         // 8: uint8
  };
  ctx.comm.all_reduce(t, ReduceOp::Sum);
  const std::int64_t tri = N * (N + 1) / 2, pairs = N * (N - 1) / 2;
  for (int i = 0; i < 4; ++i) EXPECT_EQ(t[0][i].item<double>(), double(tri) + N * i * 0.5) << "i=" << i;
  for (int i = 0; i < 3; ++i) EXPECT_EQ(t[1][i].item<std::int64_t>(), N * kBig + (i + 1) * pairs) << "i=" << i;
  EXPECT_TRUE(at::equal(t[2], at::full({2, 2}, float(tri), at::kFloat)));
  EXPECT_TRUE(at::equal(t[3], at::full({5}, std::int32_t(3 * pairs), at::kInt)));
  EXPECT_TRUE(at::equal(t[4], at::full({2}, -double(tri), at::kDouble)));
  EXPECT_TRUE(at::equal(t[5], at::full({2}, std::int16_t(tri), at::kShort)));
  EXPECT_TRUE(at::equal(t[6], at::full({2}, double(tri), at::kHalf)));
  EXPECT_TRUE(at::equal(t[7], at::full({2}, double(tri), at::kBFloat16)));
  EXPECT_EQ(t[8].item<std::uint8_t>(), tri);
  // Shapes and dtypes come back as they went.
  EXPECT_EQ(t[2].sizes().vec(), (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(t[6].scalar_type(), at::kHalf);
  // Coalesced: one collective per dtype (8 dtypes), the two float64 tensors in one buffer of 6.
  ASSERT_EQ(ctx.comm.collectives_issued(), 8u);
  for (const auto& record : ctx.comm.trace()) {
    EXPECT_EQ(record.op, "all_reduce(sum)");
    if (record.dtype == "float64") { EXPECT_EQ(record.shape, std::vector<std::int64_t>{6}); }
  }
}

DISTMETRICS_RANK_TEST(Collectives, AllReduceMaxMinProd, DISTMETRICS_WORLD_SIZES(1, 2, 3, 4)) {
  const std::int64_t N = ctx.world_size, r = ctx.rank;
  auto values = [&] {
    return std::vector<at::Tensor>{at::tensor({double(r), -double(r), 0.5 * double(r + 1)}),
                                   at::tensor({kBig + r, -kBig - r, r + 2})};
  };
  auto max = values();
  ctx.comm.all_reduce(max, ReduceOp::Max);
  EXPECT_TRUE(at::equal(max[0], at::tensor({double(N - 1), 0.0, 0.5 * double(N)})));
  EXPECT_TRUE(at::equal(max[1], at::tensor({kBig + N - 1, -kBig, N + 1})));

  auto min = values();
  ctx.comm.all_reduce(min, ReduceOp::Min);
  EXPECT_TRUE(at::equal(min[0], at::tensor({0.0, -double(N - 1), 0.5})));
  EXPECT_TRUE(at::equal(min[1], at::tensor({kBig, -kBig - N + 1, std::int64_t{2}})));

  // prod: 0.5 (r + 1) multiplies to N! / 2^N, exactly (powers of two); r + 2 to (N + 1)!
  std::vector<at::Tensor> prod{at::tensor({0.5 * double(r + 1)}), at::tensor({r + 2})};
  ctx.comm.all_reduce(prod, ReduceOp::Prod);
  EXPECT_EQ(prod[0].item<double>(), double(factorial(N)) / double(std::int64_t{1} << N));
  EXPECT_EQ(prod[1].item<std::int64_t>(), factorial(N + 1));

  // bool: sum and max are "or", prod and min are "and"
  auto bools = [](std::vector<std::int64_t> v) { return at::tensor(v).to(at::kBool); };
  auto flags = [&] { return std::vector<at::Tensor>{bools({r == 0, 0, 1})}; };
  auto any = flags();
  ctx.comm.all_reduce(any, ReduceOp::Sum);
  EXPECT_TRUE(at::equal(any[0], bools({1, 0, 1})));
  auto all = flags();
  ctx.comm.all_reduce(all, ReduceOp::Min);
  EXPECT_TRUE(at::equal(all[0], bools({N == 1, 0, 1})));

  auto counts = count_ops(ctx.comm);
  EXPECT_EQ(counts["all_reduce(max)"], 2);
  EXPECT_EQ(counts["all_reduce(min)"], 3);
  EXPECT_EQ(counts["all_reduce(prod)"], 2);
  EXPECT_EQ(counts["all_reduce(sum)"], 1);
}

// Rank q's contributions, computable on any rank.
at::Tensor rows_of(std::int64_t q) { return (at::arange(q * 3, at::kDouble) + 100.0 * q).view({q, 3}); }
at::Tensor longs_of(std::int64_t q) { return at::arange(q + 1, at::kLong) + (kBig + 10 * q); }
at::Tensor flags_of(std::int64_t q) { return at::arange(q + 1, at::kLong).remainder(2).eq(q % 2); }

DISTMETRICS_RANK_TEST(Collectives, AllGatherUnevenLengthsIncludingEmpty, DISTMETRICS_WORLD_SIZES(1, 2, 3, 4)) {
  const std::int64_t N = ctx.world_size, r = ctx.rank;
  // rank r holds r rows (rank 0 none), r + 1 int64 values and r + 1 flags
  auto gathered = ctx.comm.all_gather(std::vector<at::Tensor>{rows_of(r), longs_of(r), flags_of(r)});
  ASSERT_EQ(gathered.size(), 3u);
  for (std::int64_t q = 0; q < N; ++q) {
    EXPECT_TRUE(at::equal(gathered[0][q], rows_of(q))) << "rows of rank " << q;
    EXPECT_EQ(gathered[0][q].sizes().vec(), (std::vector<std::int64_t>{q, 3}));
    EXPECT_TRUE(at::equal(gathered[1][q], longs_of(q))) << "int64 of rank " << q;
    EXPECT_TRUE(at::equal(gathered[2][q], flags_of(q))) << "flags of rank " << q;
  }
  // the shapes, then one gather of all three tensors' bytes (float64, int64 and bool together)
  auto counts = count_ops(ctx.comm);
  EXPECT_EQ(counts["all_gather(shapes)"], 1);
  EXPECT_EQ(counts["all_gather"], 1);
  EXPECT_EQ(ctx.comm.trace().back().dtype, "uint8");

  // One tensor: the convenience overload.
  auto single = ctx.comm.all_gather(at::full({r + 1}, double(r)));
  ASSERT_EQ(single.size(), static_cast<size_t>(N));
  for (std::int64_t q = 0; q < N; ++q) EXPECT_TRUE(at::equal(single[q], at::full({q + 1}, double(q))));
}

DISTMETRICS_RANK_TEST(Collectives, AllGatherWhenEveryRankIsEmpty, DISTMETRICS_WORLD_SIZES(1, 2, 3, 4)) {
  auto gathered = ctx.comm.all_gather(at::empty({0, 2}, at::kDouble));
  ASSERT_EQ(gathered.size(), static_cast<size_t>(ctx.world_size));
  for (const auto& t : gathered) {
    EXPECT_EQ(t.sizes().vec(), (std::vector<std::int64_t>{0, 2}));
    EXPECT_EQ(t.scalar_type(), at::kDouble);
  }
  // only the shape exchange: every rank knows that nothing needs to move
  ASSERT_EQ(ctx.comm.collectives_issued(), 1u);
  EXPECT_EQ(ctx.comm.trace()[0].op, "all_gather(shapes)");
}

DISTMETRICS_RANK_TEST(Collectives, BroadcastFromEveryRoot, DISTMETRICS_WORLD_SIZES(1, 2, 3, 4)) {
  const std::int64_t N = ctx.world_size, r = ctx.rank;
  for (std::int64_t root = 0; root < N; ++root) {
    at::Tensor a = at::full({2, 3}, 10.0 * double(r) + 0.25, at::kDouble);
    at::Tensor b = at::full({2}, kBig + r, at::kLong);
    ctx.comm.broadcast(a, static_cast<int>(root));
    ctx.comm.broadcast(b, static_cast<int>(root));
    EXPECT_TRUE(at::equal(a, at::full({2, 3}, 10.0 * double(root) + 0.25, at::kDouble))) << "root " << root;
    EXPECT_TRUE(at::equal(b, at::full({2}, kBig + root, at::kLong))) << "root " << root;
  }
  auto counts = count_ops(ctx.comm);
  for (std::int64_t root = 0; root < N; ++root) EXPECT_EQ(counts["broadcast(root=" + std::to_string(root) + ")"], 2);
  at::Tensor t = at::zeros({1});
  EXPECT_THROW(ctx.comm.broadcast(t, static_cast<int>(N)), ConfigError);
}

DISTMETRICS_RANK_TEST(Collectives, BarrierAndTheTraceOfAMixedSequence, DISTMETRICS_WORLD_SIZES(1, 2, 3, 4)) {
  std::vector<at::Tensor> states{at::ones({3}, at::kLong), at::ones({2}, at::kDouble)};
  ctx.comm.all_reduce(states, ReduceOp::Sum);
  ctx.comm.all_gather(at::ones({ctx.rank}, at::kFloat));
  at::Tensor b = at::zeros({4}, at::kDouble);
  ctx.comm.broadcast(b, 0);
  ctx.comm.barrier();
  ctx.comm.barrier();

  const auto& trace = ctx.comm.trace();
  std::vector<std::string> ops;
  for (size_t i = 0; i < trace.size(); ++i) {
    EXPECT_EQ(trace[i].seq, i);
    ops.push_back(trace[i].op);
  }
  // at N = 1 every rank's float32 tensor is empty, so no float32 gather
  std::vector<std::string> expected{"all_reduce(sum)", "all_reduce(sum)", "all_gather(shapes)"};
  if (ctx.world_size > 1) expected.push_back("all_gather");
  for (const char* op : {"broadcast(root=0)", "barrier", "barrier"}) expected.push_back(op);
  EXPECT_EQ(ops, expected);
  EXPECT_EQ(trace[0].dtype, "int64");
  EXPECT_EQ(trace.back().dtype, "");
  EXPECT_EQ(trace.back().describe(), "barrier #" + std::to_string(trace.size() - 1));
}

DISTMETRICS_RANK_TEST(Collectives, GatheringDifferentTrailingShapesRaisesOnEveryRank, DISTMETRICS_WORLD_SIZES(2, 3, 4)) {
  const bool odd_one = ctx.rank == ctx.world_size - 1;
  const std::string odd = std::to_string(ctx.world_size - 1);
  try {
    ctx.comm.all_gather(at::zeros({1, odd_one ? 3 : 2}, at::kDouble));
    ADD_FAILURE() << "gathering [1, 2] with [1, 3] did not raise";
  } catch (const CollectiveError& e) {
    EXPECT_EQ(e.kind(), CollectiveFailure::Mismatch);
    EXPECT_EQ(e.rank(), ctx.rank);
    const std::string message = e.what();
    EXPECT_NE(message.find("rank " + std::to_string(ctx.rank) + ": all_gather(shapes) #0"), std::string::npos) << message;
    EXPECT_NE(message.find("rank 0 has float64 [1, 2], rank " + odd + " has float64 [1, 3]"), std::string::npos) << message;
  }
  try {  // a dtype that differs is named too
    ctx.comm.all_gather(odd_one ? at::zeros({1}, at::kLong) : at::zeros({1}, at::kDouble));
    ADD_FAILURE() << "gathering float64 with int64 did not raise";
  } catch (const CollectiveError& e) {
    EXPECT_NE(std::string(e.what()).find("rank " + odd + " has int64 [1]"), std::string::npos) << e.what();
  }
  // Every rank saw the mismatch in the same shape exchange: the group is still in step.
  ctx.comm.barrier();
  EXPECT_EQ(ctx.comm.collectives_issued(), 3u);
}

}  // namespace
}  // namespace distmetrics::runtime

namespace distmetrics::runtime {
namespace {

// Collectives on the GPU (gloo with comm device cuda, and nccl, which is always cuda): the
// tensors may live anywhere, the communicator moves them and brings results back where they
// were. Skips, with the reason, where there is no GPU (or too few for nccl).
DISTMETRICS_RANK_TEST(CollectivesOnCuda, ReduceGatherBroadcastComeBackExact,
                      DISTMETRICS_WORLD_SIZES(1, 2).backends({"gloo", "nccl"}).comm_device("cuda")) {
  const std::int64_t N = ctx.world_size, r = ctx.rank;
  EXPECT_TRUE(ctx.device().is_cuda());
  std::vector<at::Tensor> t{at::full({3}, double(r + 1)), at::full({2}, kBig + r, at::kLong)};
  ctx.comm.all_reduce(t, ReduceOp::Sum);
  EXPECT_TRUE(t[0].device().is_cpu());  // back where it came from
  EXPECT_TRUE(at::equal(t[0], at::full({3}, double(N * (N + 1) / 2))));
  EXPECT_EQ(t[1][0].item<std::int64_t>(), N * kBig + N * (N - 1) / 2);

  const at::Tensor on_gpu = at::full({r + 1}, 0.5 * double(r), at::TensorOptions().device(ctx.device()));
  auto gathered = ctx.comm.all_gather(on_gpu);
  for (std::int64_t q = 0; q < N; ++q) {
    EXPECT_TRUE(gathered[q].device().is_cuda());
    EXPECT_TRUE(at::equal(gathered[q].cpu(), at::full({q + 1}, 0.5 * double(q))));
  }
  at::Tensor b = at::full({2}, double(r));
  ctx.comm.broadcast(b, static_cast<int>(N - 1));
  EXPECT_TRUE(at::equal(b, at::full({2}, double(N - 1))));
  ctx.comm.barrier();
}

}  // namespace
}  // namespace distmetrics::runtime
