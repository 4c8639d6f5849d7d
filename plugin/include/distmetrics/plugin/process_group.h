// For plugins that make their own c10d calls: the LibTorch process group behind the
// communicator the harness built for a variant. Kept apart from plugin.h because the c10d
// headers are heavy (and the Gloo one needs USE_C10D_GLOO, defined here).
//
//   if (auto group = distmetrics::plugin::gloo_process_group(*comm)) {
//     std::vector<at::Tensor> tensors{sums};
//     auto work = group->allreduce(tensors);
//     if (!work->wait(std::chrono::seconds(30))) throw std::runtime_error("allreduce timed out");
//   } else {
//     comm->all_reduce(tensors, distmetrics::runtime::ReduceOp::Sum);  // mpi, single process
//   }
//
// Collectives issued on the group directly bypass the communicator's deadlines and its trace:
// always wait with a timeout, and make every rank issue the same collectives in the same order.
// The harness still bounds the whole variant by its deadline and reports a hang.
#pragma once

#include "distmetrics/build_config.h"
#include "distmetrics/runtime/comm.h"

#if DISTMETRICS_HAVE_GLOO && DISTMETRICS_GLOO_THROUGH_PYTHON
#include <torch/csrc/distributed/c10d/Backend.hpp>
#elif DISTMETRICS_HAVE_GLOO
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#if DISTMETRICS_HAVE_NCCL
#ifndef USE_C10D_NCCL
#define USE_C10D_NCCL
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace distmetrics::plugin {

// The communicator's process group as a `Group`, or null when it runs on another kind (or on
// none: mpi, single process).
template <class Group>
c10::intrusive_ptr<Group> process_group_as(const runtime::Communicator& comm) {
  const auto erased = comm.process_group();
  auto* group = dynamic_cast<Group*>(erased.get());
  if (!group) return {};
  return c10::intrusive_ptr<Group>::unsafe_reclaim_from_nonowning(group);
}

#if DISTMETRICS_HAVE_GLOO && DISTMETRICS_GLOO_THROUGH_PYTHON
// A LibTorch without gloo headers (the pip wheel): the group is torch's own ProcessGroupGloo,
// made through its Python binding, and C++ reaches it as the c10d::Backend it derives from (the
// same collectives: allreduce, allgather, broadcast, barrier).
using GlooProcessGroup = c10d::Backend;
#elif DISTMETRICS_HAVE_GLOO
using GlooProcessGroup = c10d::ProcessGroupGloo;
#endif
#if DISTMETRICS_HAVE_GLOO
// The Gloo group of a gloo communicator; null for other backends.
inline c10::intrusive_ptr<GlooProcessGroup> gloo_process_group(const runtime::Communicator& comm) {
  auto group = process_group_as<GlooProcessGroup>(comm);
#if DISTMETRICS_GLOO_THROUGH_PYTHON
  if (group && group->getBackendName() != "gloo") return {};  // every c10d group is a Backend (nccl too)
#endif
  return group;
}
#endif

#if DISTMETRICS_HAVE_NCCL
// The c10d::ProcessGroupNCCL of an nccl communicator; null for other backends.
inline c10::intrusive_ptr<c10d::ProcessGroupNCCL> nccl_process_group(const runtime::Communicator& comm) {
  return process_group_as<c10d::ProcessGroupNCCL>(comm);
}
#endif

}  // namespace distmetrics::plugin
