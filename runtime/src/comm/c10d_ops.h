// What the c10d backends (gloo, nccl) share: distmetrics' reduce ops in c10d's terms, and the
// dtypes they reduce through another.
#pragma once

#include <torch/csrc/distributed/c10d/Types.hpp>

#include <ATen/ATen.h>

#include <stdexcept>
#include <string>

#include "distmetrics/runtime/comm.h"

namespace distmetrics::runtime::detail {

inline c10d::ReduceOp to_c10d(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return c10d::ReduceOp(c10d::ReduceOp::SUM);
    case ReduceOp::Max: return c10d::ReduceOp(c10d::ReduceOp::MAX);
    case ReduceOp::Min: return c10d::ReduceOp(c10d::ReduceOp::MIN);
    case ReduceOp::Prod: return c10d::ReduceOp(c10d::ReduceOp::PRODUCT);
  }
  return c10d::ReduceOp(c10d::ReduceOp::SUM);
}

// What a c10d backend reduces for a buffer: bool as uint8 ("or" for sum and max, "and" for prod
// and min, as for torch bools), int16 as int32, bfloat16 as float32 where the backend has no
// bfloat16 reduction (gloo); float16/32/64, int8/32/64 and uint8 as they are.
struct WidenedReduction {
  at::Tensor buffer;  // the caller's buffer itself, or a wider copy of it
  ReduceOp op;
};

inline WidenedReduction widened_for_reduction(const at::Tensor& buffer, ReduceOp op, const std::string& backend,
                                              bool reduces_bfloat16) {
  switch (buffer.scalar_type()) {
    case at::kBool:
      return {buffer.to(at::kByte), (op == ReduceOp::Sum || op == ReduceOp::Max) ? ReduceOp::Max : ReduceOp::Min};
    case at::kShort:
      return {buffer.to(at::kInt), op};
    case at::kBFloat16:
      return {reduces_bfloat16 ? buffer : buffer.to(at::kFloat), op};
    case at::kFloat: case at::kDouble: case at::kHalf: case at::kChar: case at::kByte: case at::kInt: case at::kLong:
      return {buffer, op};
    default:
      throw std::runtime_error(backend + " cannot all_reduce " + c10::toString(buffer.scalar_type()));
  }
}

// The reduced values back into the caller's buffer, where they were reduced in a wider copy.
inline void narrow_back(at::Tensor& buffer, const WidenedReduction& reduced) {
  if (!reduced.buffer.is_same(buffer)) buffer.copy_(reduced.buffer.to(buffer.scalar_type()));
}

}  // namespace distmetrics::runtime::detail
