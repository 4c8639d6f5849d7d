// Raw c10d Gloo access for the baselines: the process group under a communicator, and a fresh
// group over any store (what users build with torch.distributed.init_process_group).
#pragma once

#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO  // the c10d Gloo header is empty without it
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <chrono>
#include <stdexcept>

#include "distmetrics/runtime/comm.h"

namespace distmetrics::bench {

inline c10::intrusive_ptr<c10d::ProcessGroupGloo> gloo_group_of(const runtime::Communicator& comm) {
  auto* group = dynamic_cast<c10d::ProcessGroupGloo*>(comm.process_group().get());
  if (group == nullptr) throw std::runtime_error("the benchmark needs the gloo backend");
  return c10::intrusive_ptr<c10d::ProcessGroupGloo>::unsafe_reclaim_from_nonowning(group);
}

inline c10::intrusive_ptr<c10d::ProcessGroupGloo> fresh_gloo_group(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                                   int world_size) {
  auto options = c10d::ProcessGroupGloo::Options::create(std::chrono::seconds(60));
  options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  options->threads = 2;
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, world_size, options);
}

// One blocking all_reduce(sum) of `t`, in place.
inline void raw_all_reduce(c10d::ProcessGroupGloo& group, at::Tensor& t) {
  std::vector<at::Tensor> tensors{t};
  group.allreduce(tensors)->wait();
}

}  // namespace distmetrics::bench
