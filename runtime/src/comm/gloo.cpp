// The gloo backend: c10d::ProcessGroupGloo over a (prefix) store; CPU or CUDA tensors.
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO  // the c10d Gloo header is empty without it (LibTorch's targets define it)
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <ATen/ATen.h>

#include <cstdlib>

#include "backend_factory.h"
#include "c10d_ops.h"
#include "distmetrics/runtime/errors.h"

namespace distmetrics::runtime::detail {
namespace {

using namespace std::chrono_literals;

// Gloo's own timeout sits a little after ours, so that our deadline, not Gloo's, reports a hang
// (as a timeout, with the collective's record) and Gloo still frees its threads soon after.
constexpr std::chrono::milliseconds kGlooTimeoutMargin = 1000ms;

// Waits for a Gloo work item until the deadline. Past it: BackendTimeout. A failure Gloo
// reports (a peer that closed its connection, say) is rethrown as it is.
void wait_for(const c10::intrusive_ptr<c10d::Work>& work, const Deadline& deadline) {
  const auto left = std::max(deadline.remaining(), std::chrono::milliseconds(1));  // 0 would mean "forever"
  try {
    if (work->wait(left)) return;
  } catch (const std::exception& e) {
    if (work->isCompleted()) throw std::runtime_error(short_what(e));
  }
  throw BackendTimeout("gloo work still pending at the deadline");
}

class GlooCommunicator final : public Communicator {
 public:
  GlooCommunicator(const CommSpec& spec, at::Device device, c10::intrusive_ptr<c10d::ProcessGroupGloo> group,
                   c10::intrusive_ptr<c10d::Store> store)
      : Communicator(spec.rank, spec.world_size, device), group_(std::move(group)), store_(std::move(store)) {}
  std::string backend() const override { return "gloo"; }
  c10::intrusive_ptr<c10::intrusive_ptr_target> process_group() const override { return group_; }
  c10::intrusive_ptr<c10::intrusive_ptr_target> rendezvous_store() const override { return store_; }

 protected:
  void all_reduce_flat(at::Tensor& buffer, ReduceOp op, const Deadline& deadline) override {
    // Gloo reduces float16/32/64, int8/32/64 and uint8. Bool goes as uint8 (sum and max are
    // "or", prod and min are "and", as for torch bools); int16 and bfloat16 through a wider type.
    at::Tensor work_buffer = buffer;
    ReduceOp work_op = op;
    switch (buffer.scalar_type()) {
      case at::kBool:
        work_buffer = buffer.to(at::kByte);
        work_op = (op == ReduceOp::Sum || op == ReduceOp::Max) ? ReduceOp::Max : ReduceOp::Min;
        break;
      case at::kShort: work_buffer = buffer.to(at::kInt); break;
      case at::kBFloat16: work_buffer = buffer.to(at::kFloat); break;
      case at::kFloat: case at::kDouble: case at::kHalf: case at::kChar: case at::kByte: case at::kInt:
      case at::kLong:
        break;
      default:
        throw std::runtime_error(std::string("gloo cannot all_reduce ") + c10::toString(buffer.scalar_type()));
    }
    std::vector<at::Tensor> tensors{work_buffer};
    c10d::AllreduceOptions options;
    options.reduceOp = to_c10d(work_op);
    options.timeout = deadline.remaining() + kGlooTimeoutMargin;
    wait_for(group_->allreduce(tensors, options), deadline);
    if (!work_buffer.is_same(buffer)) buffer.copy_(work_buffer.to(buffer.scalar_type()));
  }

  void all_gather_flat(const at::Tensor& input, at::Tensor& output, const Deadline& deadline) override {
    // A pure data move: bytes, whatever the dtype (Gloo gathers only some dtypes).
    const std::int64_t n = input.numel() * static_cast<std::int64_t>(input.element_size());
    at::Tensor output_bytes = output.view(at::kByte);
    std::vector<std::vector<at::Tensor>> outputs(1);
    for (int r = 0; r < world_size(); ++r) outputs[0].push_back(output_bytes.narrow(0, r * n, n));
    std::vector<at::Tensor> inputs{input.view(at::kByte)};
    c10d::AllgatherOptions options;
    options.timeout = deadline.remaining() + kGlooTimeoutMargin;
    wait_for(group_->allgather(outputs, inputs, options), deadline);
  }

  void broadcast_flat(at::Tensor& buffer, int root, const Deadline& deadline) override {
    std::vector<at::Tensor> tensors{buffer.view(at::kByte)};
    c10d::BroadcastOptions options;
    options.rootRank = root;
    options.timeout = deadline.remaining() + kGlooTimeoutMargin;
    wait_for(group_->broadcast(tensors, options), deadline);
  }

  void barrier_flat(const Deadline& deadline) override {
    c10d::BarrierOptions options;
    options.timeout = deadline.remaining() + kGlooTimeoutMargin;
    wait_for(group_->barrier(options), deadline);
  }

 private:
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group_;
  c10::intrusive_ptr<c10d::Store> store_;
};

std::shared_ptr<::gloo::transport::Device> transport_device(const CommSpec& spec) {
  if (!spec.gloo_address.empty()) return c10d::ProcessGroupGloo::createDeviceForHostname(spec.gloo_address);
  if (const char* interface = std::getenv("GLOO_SOCKET_IFNAME"); interface && *interface) {
    return c10d::ProcessGroupGloo::createDeviceForInterface(interface);
  }
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

}  // namespace

std::unique_ptr<Communicator> make_gloo_communicator(const CommSpec& spec, const c10::intrusive_ptr<c10d::Store>& store,
                                                     const Deadline& deadline) {
  // The rendezvous (every rank connects to every other through the store) must finish by the
  // deadline; the store's own timeout bounds each of its waits.
  store->setTimeout(std::max(deadline.remaining(), std::chrono::milliseconds(1)));
  auto options = c10d::ProcessGroupGloo::Options::create(spec.op_timeout + kGlooTimeoutMargin);
  options->devices.push_back(transport_device(spec));
  options->threads = 2;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group;
  try {
    group = c10::make_intrusive<c10d::ProcessGroupGloo>(store, spec.rank, spec.world_size, options);
  } catch (const std::exception& e) {
    throw std::runtime_error("gloo: rank " + std::to_string(spec.rank) + " could not connect to its " +
                             std::to_string(spec.world_size - 1) + " peers: " + short_what(e));
  }
  return std::make_unique<GlooCommunicator>(spec, comm_device_of(spec), std::move(group), store);
}

}  // namespace distmetrics::runtime::detail
