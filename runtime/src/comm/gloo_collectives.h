// The collectives of a gloo communicator over c10d's group interface, shared by both ways this
// build may make the group: gloo.cpp (ProcessGroupGloo from its C++ header, where LibTorch ships
// the gloo headers that match it) and gloo_through_python.cpp (torch's ProcessGroupGloo made
// through its Python binding, used as a c10d::Backend: the pip wheel). `Group` is the type the
// group is held as: c10d::ProcessGroup-like (torch 1.13) or c10d::Backend (torch 2.x).
#pragma once

#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <ATen/ATen.h>

#include <chrono>
#include <string>
#include <vector>

#include "backend_factory.h"
#include "c10d_ops.h"
#include "distmetrics/runtime/errors.h"

namespace distmetrics::runtime::detail {

// The default timeout of the group torch.distributed is handed (a Python metric's own
// collectives, which carry no deadline of ours) sits a little after the variant's op timeout, so
// that the variant's deadline, not Gloo's, reports a hang.
constexpr std::chrono::milliseconds kGlooTimeoutMargin{1000};

// Gloo's own timeout for a collective of ours: the deadline itself. A collective that runs in the
// calling thread (gloo_inline.h) returns only when it is done or Gloo gave up, so a later timeout
// would hold the rank past its deadline; wait_for_gloo reports either ending at the deadline as
// the deadline's. remaining() truncates to whole milliseconds: one more, so that Gloo gives up at
// or after the deadline, never just before it (which would read as Gloo's own error).
inline std::chrono::milliseconds gloo_timeout(const Deadline& deadline) {
  return std::max(deadline.remaining(), std::chrono::milliseconds(0)) + std::chrono::milliseconds(1);  // 0: "forever"
}

// Waits for a Gloo work item until the deadline. Past it: BackendTimeout, also where Gloo itself
// gave up there (its timeout is the deadline). A failure Gloo reports before it (a peer that
// closed its connection, say) is rethrown as it is.
inline void wait_for_gloo(const c10::intrusive_ptr<c10d::Work>& work, const Deadline& deadline) {
  try {
    if (work->wait(gloo_timeout(deadline))) return;
  } catch (const std::exception& e) {
    if (work->isCompleted() && !deadline.expired()) throw std::runtime_error(short_what(e));
  }
  throw BackendTimeout("gloo work still pending at the deadline");
}

template <class Group>
class GlooCollectives : public Communicator {
 public:
  GlooCollectives(const CommSpec& spec, at::Device device, c10::intrusive_ptr<Group> group,
                  c10::intrusive_ptr<c10d::Store> store)
      : Communicator(spec.rank, spec.world_size, device), group_(std::move(group)), store_(std::move(store)) {}
  std::string backend() const override { return "gloo"; }
  c10::intrusive_ptr<c10::intrusive_ptr_target> process_group() const override { return group_; }
  c10::intrusive_ptr<c10::intrusive_ptr_target> rendezvous_store() const override { return store_; }

 protected:
  void all_reduce_flat(at::Tensor& buffer, ReduceOp op, const Deadline& deadline) override {
    // Gloo has no bool, int16 or bfloat16 reduction: those go through another dtype.
    const WidenedReduction work = widened_for_reduction(buffer, op, "gloo", /*reduces_bfloat16=*/false);
    std::vector<at::Tensor> tensors{work.buffer};
    c10d::AllreduceOptions options;
    options.reduceOp = to_c10d(work.op);
    options.timeout = gloo_timeout(deadline);
    wait_for_gloo(group_->allreduce(tensors, options), deadline);
    narrow_back(buffer, work);
  }

  void all_gather_flat(const at::Tensor& input, at::Tensor& output, const Deadline& deadline) override {
    // A pure data move: bytes, whatever the dtype (Gloo gathers only some dtypes).
    const std::int64_t n = input.numel() * static_cast<std::int64_t>(input.element_size());
    at::Tensor output_bytes = output.view(at::kByte);
    std::vector<std::vector<at::Tensor>> outputs(1);
    for (int r = 0; r < world_size(); ++r) outputs[0].push_back(output_bytes.narrow(0, r * n, n));
    std::vector<at::Tensor> inputs{input.view(at::kByte)};
    c10d::AllgatherOptions options;
    options.timeout = gloo_timeout(deadline);
    wait_for_gloo(group_->allgather(outputs, inputs, options), deadline);
  }

  void broadcast_flat(at::Tensor& buffer, int root, const Deadline& deadline) override {
    std::vector<at::Tensor> tensors{buffer.view(at::kByte)};
    c10d::BroadcastOptions options;
    options.rootRank = root;
    options.timeout = gloo_timeout(deadline);
    wait_for_gloo(group_->broadcast(tensors, options), deadline);
  }

  void barrier_flat(const Deadline& deadline) override {
    c10d::BarrierOptions options;
    options.timeout = gloo_timeout(deadline);
    wait_for_gloo(group_->barrier(options), deadline);
  }

  c10::intrusive_ptr<Group> group_;
  c10::intrusive_ptr<c10d::Store> store_;
};

}  // namespace distmetrics::runtime::detail
