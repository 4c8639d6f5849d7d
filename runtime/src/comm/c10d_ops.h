// What the c10d backends (gloo, nccl) share: distmetrics' reduce ops in c10d's terms.
#pragma once

#include <torch/csrc/distributed/c10d/Types.hpp>

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

}  // namespace distmetrics::runtime::detail
