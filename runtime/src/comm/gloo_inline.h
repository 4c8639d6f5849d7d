// c10d::ProcessGroupGloo whose common CPU collectives run in the calling thread.
//
// ProcessGroupGloo queues every collective for one of its worker threads and the caller waits on
// the returned Work: each collective hands off twice (caller to worker, worker back to caller)
// beside the transport's loop thread, which receives and wakes whoever waits. With three ranks
// on two cores a thread that is woken waits to be scheduled, and the peer run's Python variants
// spend half their rank time in the libraries' small collectives (docs/performance.md, "Where a
// Python variant's sync goes"). Here allreduce, allgather, broadcast and barrier of one dense
// contiguous CPU tensor of a common dtype run gloo's own algorithm (gloo::allreduce, allgather,
// broadcast, barrier: what ProcessGroupGloo's work items call) in the caller's thread, with the
// same tag sequence and context, and return a Work that is already complete (its error, if gloo
// raised, rethrown by wait() as the queued work's would be). Everything else (other ops, several
// tensors, CUDA, other dtypes or reduce ops, a barrier with queued work before it) is
// ProcessGroupGloo's own path, which also gives the same errors for arguments it refuses.
#pragma once

#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO  // the c10d Gloo header is empty without it (LibTorch's targets define it)
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <ATen/ATen.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

namespace distmetrics::runtime::detail {

class InlineGlooGroup : public c10d::ProcessGroupGloo {
 public:
  using ProcessGroupGloo::ProcessGroupGloo;

  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts = c10d::AllreduceOptions()) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts = c10d::BroadcastOptions()) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts = c10d::BarrierOptions()) override;

  // How many collectives ran in the calling thread, and how many went to ProcessGroupGloo's
  // queue (tests; the conform run's variants should be almost all inline).
  struct Counts {
    long inline_ops = 0;
    long queued_ops = 0;
  };
  Counts counts() const { return counts_; }

 private:
  // What a collective run here takes from the group, counted: the next tag (as ProcessGroupGloo
  // would give it), that tag's context, and the timeout (the group's where none was asked).
  struct Slot {
    uint32_t tag;
    std::shared_ptr<::gloo::Context> context;
    std::chrono::milliseconds timeout;
  };
  Slot take_slot(std::chrono::milliseconds requested);
  bool work_queued();
  Counts counts_;
};

}  // namespace distmetrics::runtime::detail
