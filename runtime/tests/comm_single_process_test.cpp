// The Communicator base on world size 1: coalescing, tracing, exact gathers.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "../src/comm/c10d_ops.h"
#include "distmetrics/runtime/comm.h"
#include "distmetrics/runtime/errors.h"

namespace distmetrics::runtime {
namespace {

// The dtypes gloo and nccl reduce through another (c10d_ops.h): one home for both backends.
TEST(C10dReduction, BoolGoesAsUint8WithOrAndAnd) {
  const at::Tensor flags = at::tensor({1, 0, 1}, at::kInt).to(at::kBool);
  const auto sum = detail::widened_for_reduction(flags, ReduceOp::Sum, "gloo", false);
  EXPECT_EQ(sum.buffer.scalar_type(), at::kByte);
  EXPECT_EQ(sum.op, ReduceOp::Max);  // "or"
  EXPECT_EQ(sum.buffer.sum().item<int>(), 2);
  EXPECT_EQ(detail::widened_for_reduction(flags, ReduceOp::Max, "nccl", true).op, ReduceOp::Max);
  EXPECT_EQ(detail::widened_for_reduction(flags, ReduceOp::Prod, "gloo", false).op, ReduceOp::Min);  // "and"
  EXPECT_EQ(detail::widened_for_reduction(flags, ReduceOp::Min, "nccl", true).op, ReduceOp::Min);
}

TEST(C10dReduction, Int16AndBfloat16GoWiderWhereTheBackendLacksThem) {
  at::Tensor shorts = at::tensor({-3, 7}, at::kShort);
  auto widened = detail::widened_for_reduction(shorts, ReduceOp::Sum, "gloo", false);
  EXPECT_EQ(widened.buffer.scalar_type(), at::kInt);
  EXPECT_EQ(widened.op, ReduceOp::Sum);
  widened.buffer.mul_(2);  // what the backend's reduction would leave in the wider copy
  detail::narrow_back(shorts, widened);
  EXPECT_EQ(shorts.scalar_type(), at::kShort);
  EXPECT_EQ(shorts[0].item<int>(), -6);
  EXPECT_EQ(shorts[1].item<int>(), 14);

  const at::Tensor halves = at::tensor({0.5, 1.5}).to(at::kBFloat16);
  EXPECT_EQ(detail::widened_for_reduction(halves, ReduceOp::Sum, "gloo", false).buffer.scalar_type(), at::kFloat);
  const auto native = detail::widened_for_reduction(halves, ReduceOp::Sum, "nccl", true);
  EXPECT_TRUE(native.buffer.is_same(halves));  // reduced in place: nothing to copy back
  for (const auto dtype : {at::kFloat, at::kDouble, at::kHalf, at::kChar, at::kByte, at::kInt, at::kLong})
    EXPECT_TRUE(detail::widened_for_reduction(at::zeros({2}, dtype), ReduceOp::Max, "gloo", false).buffer.scalar_type() ==
                dtype);
}

TEST(C10dReduction, ADtypeNoBackendReducesNamesBoth) {
  try {
    detail::widened_for_reduction(at::zeros({2}, at::kComplexFloat), ReduceOp::Sum, "gloo", false);
    FAIL() << "a complex buffer was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "gloo cannot all_reduce ComplexFloat");
  }
}

TEST(SingleProcessComm, AllReduceCoalescesOneCollectivePerDtype) {
  auto comm = make_single_process_communicator();
  std::vector<at::Tensor> tensors{at::tensor({1.0, 2.0}), at::tensor({int64_t{7}}), at::tensor({3.0})};
  comm->all_reduce(tensors, ReduceOp::Sum);
  // one collective per dtype, in a fixed dtype order (int64 before float64) on every rank
  ASSERT_EQ(comm->trace().size(), 2u);
  EXPECT_EQ(comm->trace()[0].op, "all_reduce(sum)");
  EXPECT_EQ(comm->trace()[0].dtype, "int64");
  EXPECT_EQ(comm->trace()[0].shape, std::vector<int64_t>{1});
  EXPECT_EQ(comm->trace()[1].dtype, "float64");
  EXPECT_EQ(comm->trace()[1].shape, std::vector<int64_t>{3});
  EXPECT_TRUE(at::equal(tensors[0], at::tensor({1.0, 2.0})));
  EXPECT_TRUE(at::equal(tensors[1], at::tensor({int64_t{7}})));
}

TEST(SingleProcessComm, AllReduceLeavesTheCallersTensorUntouched) {
  auto comm = make_single_process_communicator();
  at::Tensor state = at::tensor({5.0});
  at::Tensor synced = comm->all_reduce_copy(state, ReduceOp::Max);
  synced.add_(1.0);
  EXPECT_EQ(state.item<double>(), 5.0);
}

TEST(SingleProcessComm, AllGatherReturnsTheInputExactlyIncludingEmpty) {
  auto comm = make_single_process_communicator();
  auto out = comm->all_gather(std::vector<at::Tensor>{at::arange(6, at::kLong).view({3, 2}),
                                                      at::empty({0, 4}, at::kDouble)});
  ASSERT_EQ(out.size(), 2u);
  ASSERT_EQ(out[0].size(), 1u);
  EXPECT_TRUE(at::equal(out[0][0], at::arange(6, at::kLong).view({3, 2})));
  EXPECT_EQ(out[1][0].sizes().vec(), (std::vector<int64_t>{0, 4}));
  // shapes, then one gather of both tensors' bytes (the empty float64 one adds none)
  ASSERT_EQ(comm->trace().size(), 2u);
  EXPECT_EQ(comm->trace()[0].op, "all_gather(shapes)");
  EXPECT_EQ(comm->trace()[1].op, "all_gather");
  EXPECT_EQ(comm->trace()[1].seq, 1u);
}

TEST(SingleProcessComm, ScalarTensorsCannotBeGathered) {
  auto comm = make_single_process_communicator();
  EXPECT_THROW(comm->all_gather(at::scalar_tensor(1.0)), ConfigError);
}

}  // namespace
}  // namespace distmetrics::runtime
