// The nccl backend: c10d::ProcessGroupNCCL over a (prefix) store; CUDA tensors on
// cuda:local_rank. Built only with a CUDA LibTorch that ships NCCL (DISTMETRICS_HAVE_NCCL), as a
// module of its own (libdistmetrics_nccl.so, modules.cmake): it links libtorch_cuda and NCCL,
// which the runtime (LibTorch's CPU side) loads with the first nccl communicator of a process.
#ifndef USE_C10D_NCCL
#define USE_C10D_NCCL  // the c10d NCCL header is empty without it (LibTorch's targets define it)
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include <ATen/ATen.h>
#include <c10/cuda/CUDAFunctions.h>

#include <thread>

#include "backend_factory.h"
#include "c10d_ops.h"
#include "distmetrics/runtime/backends.h"
#include "distmetrics/runtime/errors.h"

namespace distmetrics::runtime::detail {
namespace {

using namespace std::chrono_literals;

// ProcessGroupNCCL's watchdog ends the process when a collective outlives the group's timeout;
// it sits after our own deadline, so that a hang is first reported (as a timeout, with the
// collective's record) and only then torn down.
constexpr std::chrono::milliseconds kWatchdogMargin = 10000ms;

// NCCL work runs on its own stream: poll until the GPU has finished it or the deadline passes
// (BackendTimeout), then wait() to order the caller's stream after it and to surface errors.
void wait_for(const c10::intrusive_ptr<c10d::Work>& work, const Deadline& deadline) {
  auto pause = std::chrono::microseconds(0);
  while (!work->isCompleted()) {
    if (deadline.expired()) throw BackendTimeout("nccl work still pending at the deadline");
    if (pause.count() > 0) std::this_thread::sleep_for(pause);
    else std::this_thread::yield();
    pause = std::min(std::max(pause * 2, std::chrono::microseconds(20)), std::chrono::microseconds(2000));
  }
  try {
    work->wait();
  } catch (const std::exception& e) {
    throw std::runtime_error(short_what(e));
  }
}

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(const CommSpec& spec, at::Device device, c10::intrusive_ptr<c10d::ProcessGroupNCCL> group,
                   c10::intrusive_ptr<c10d::Store> store)
      : Communicator(spec.rank, spec.world_size, device), group_(std::move(group)), store_(std::move(store)) {}
  std::string backend() const override { return "nccl"; }
  c10::intrusive_ptr<c10::intrusive_ptr_target> process_group() const override { return group_; }
  c10::intrusive_ptr<c10::intrusive_ptr_target> rendezvous_store() const override { return store_; }

  // The first collective creates the NCCL communicator (a blocking rendezvous of every rank):
  // done once here, while connecting, so that it is not charged to the task's first collective.
  void connect(const Deadline& deadline) {
    at::Tensor one = at::ones({1}, at::TensorOptions().dtype(at::kInt).device(device()));
    all_reduce_flat(one, ReduceOp::Sum, deadline);
    if (one.item<int>() != world_size()) {
      throw std::runtime_error("nccl: the connecting all_reduce gave " + std::to_string(one.item<int>()) +
                               " instead of the world size " + std::to_string(world_size()));
    }
  }

 protected:
  void all_reduce_flat(at::Tensor& buffer, ReduceOp op, const Deadline& deadline) override {
    // NCCL has no bool or int16 reduction: those go through another dtype.
    const WidenedReduction work = widened_for_reduction(buffer, op, "nccl", /*reduces_bfloat16=*/true);
    std::vector<at::Tensor> tensors{work.buffer};
    c10d::AllreduceOptions options;
    options.reduceOp = to_c10d(work.op);
    wait_for(group_->allreduce(tensors, options), deadline);
    narrow_back(buffer, work);
  }

  void all_gather_flat(const at::Tensor& input, at::Tensor& output, const Deadline& deadline) override {
    // A pure data move: bytes, whatever the dtype.
    at::Tensor output_bytes = output.view(at::kByte);
    at::Tensor input_bytes = input.view(at::kByte);
    wait_for(group_->_allgather_base(output_bytes, input_bytes, c10d::AllgatherOptions()), deadline);
  }

  void broadcast_flat(at::Tensor& buffer, int root, const Deadline& deadline) override {
    std::vector<at::Tensor> tensors{buffer.view(at::kByte)};
    c10d::BroadcastOptions options;
    options.rootRank = root;
    wait_for(group_->broadcast(tensors, options), deadline);
  }

  void barrier_flat(const Deadline& deadline) override {
    // An all_reduce of one element on our own device: ProcessGroupNCCL::barrier() would have to
    // guess the device of this rank.
    at::Tensor token = at::zeros({1}, at::TensorOptions().dtype(at::kInt).device(device()));
    all_reduce_flat(token, ReduceOp::Sum, deadline);
  }

 private:
  c10::intrusive_ptr<c10d::ProcessGroupNCCL> group_;
  c10::intrusive_ptr<c10d::Store> store_;
};

std::unique_ptr<Communicator> make_nccl(const CommSpec& spec, const c10::intrusive_ptr<c10d::Store>& store,
                                        const Deadline& deadline) {
  const at::Device device = comm_device_of(spec);  // cuda:local_rank
  // Every rank on its own GPU, and this process's current device set to it: NCCL refuses two
  // ranks on one GPU, and kernels launched on cuda:0 by every rank is a classic hang.
  c10::cuda::set_device(device.index());
  store->setTimeout(std::max(deadline.remaining(), std::chrono::milliseconds(1)));
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = spec.op_timeout + kWatchdogMargin;
  std::unique_ptr<NcclCommunicator> comm;
  try {
    auto group = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, spec.rank, spec.world_size, options);
    comm = std::make_unique<NcclCommunicator>(spec, device, std::move(group), store);
    comm->connect(deadline);
  } catch (const BackendTimeout&) {
    throw std::runtime_error("nccl: rank " + std::to_string(spec.rank) + " timed out creating the NCCL communicator on " +
                             device.str() + " (a peer never connected)");
  } catch (const std::exception& e) {
    throw std::runtime_error("nccl: rank " + std::to_string(spec.rank) + " could not create the NCCL communicator on " +
                             device.str() + ": " + short_what(e));
  }
  return comm;
}

}  // namespace
}  // namespace distmetrics::runtime::detail

// The nccl backend's factory, for the runtime that loads this module (backends.cpp).
extern "C" distmetrics::runtime::CommunicatorFactory distmetrics_nccl_communicator() {
  return distmetrics::runtime::detail::make_nccl;
}
