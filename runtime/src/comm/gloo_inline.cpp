// The collectives of InlineGlooGroup that run in the calling thread (gloo_inline.h says why).
// Where gloo's headers are not the gloo inside LibTorch (a pip wheel with Debian's libgloo-dev),
// the option classes built here are those headers' inline code: cmake/checks/gloo_foreign_headers
// runs these same calls against the wheel at configure time, and the build keeps ProcessGroupGloo's
// queued path (DISTMETRICS_GLOO_INLINE=0) where they do not give the right results.
#include "gloo_inline.h"

#include <ATen/core/ivalue.h>
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <functional>
#include <mutex>
#include <string>

namespace distmetrics::runtime::detail {
namespace {

// A collective that ran to its end (or to gloo's error) before it was returned.
class DoneWork final : public c10d::Work {
 public:
  DoneWork(c10d::OpType type, std::vector<at::Tensor> result, std::exception_ptr error)
      : Work(-1, type), result_(std::move(result)),
        future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {
    if (error) {
      future_->setError(error);
    } else {
      future_->markCompleted(c10::IValue(result_));
    }
    finish(error);
  }
  std::vector<at::Tensor> result() override { return result_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

 private:
  std::vector<at::Tensor> result_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

// Runs `op` now; its error, if any, goes into the Work (as a queued work item's would).
c10::intrusive_ptr<c10d::Work> run_now(c10d::OpType type, std::vector<at::Tensor> result,
                                       const std::function<void()>& op) {
  std::exception_ptr error;
  try {
    op();
  } catch (...) {
    error = std::current_exception();
  }
  return c10::make_intrusive<DoneWork>(type, std::move(result), error);
}

// One dense contiguous CPU tensor with data (an empty one goes to ProcessGroupGloo as it is).
bool plain_cpu(const at::Tensor& t) {
  return t.defined() && t.device().is_cpu() && t.layout() == at::kStrided && t.is_contiguous() && !t.is_neg() &&
         !t.is_conj() && t.numel() > 0;
}

// A contiguous tensor's bytes, flat (0-dim tensors included).
at::Tensor bytes_of(const at::Tensor& t) { return t.reshape({-1}).view(at::kByte); }

// The dtypes the inline path moves (as bytes) or reduces: ProcessGroupGloo handles each of them
// too, the same way; any other goes to it.
bool moved_inline(at::ScalarType type) {
  switch (type) {
    case at::kFloat:
    case at::kDouble:
    case at::kHalf:
    case at::kChar:
    case at::kByte:
    case at::kInt:
    case at::kLong:
      return true;
    default:
      return false;
  }
}

// gloo's element-wise functions (each has a two-argument overload: the cast picks this one).
using ReduceFn = void (*)(void*, const void*, const void*, size_t);

// What an inline allreduce needs for one dtype: gloo's element-wise function for the op, and
// the setter of its output typed as gloo counts elements.
struct Reduction {
  ::gloo::AllreduceOptions::Func fn;
  void (*set_output)(::gloo::AllreduceOptions&, at::Tensor&) = nullptr;
};

template <class T>
Reduction reduction(c10d::ReduceOp::RedOpType op) {
  Reduction r;
  r.set_output = [](::gloo::AllreduceOptions& opts, at::Tensor& t) {
    opts.setOutput(t.data_ptr<T>(), static_cast<size_t>(t.numel()));
  };
  switch (op) {
    case c10d::ReduceOp::SUM:
      r.fn = static_cast<ReduceFn>(&::gloo::sum<T>);
      break;
    case c10d::ReduceOp::PRODUCT:
      r.fn = static_cast<ReduceFn>(&::gloo::product<T>);
      break;
    case c10d::ReduceOp::MIN:
      r.fn = static_cast<ReduceFn>(&::gloo::min<T>);
      break;
    case c10d::ReduceOp::MAX:
      r.fn = static_cast<ReduceFn>(&::gloo::max<T>);
      break;
    default:
      break;
  }
  return r;
}

// gloo's reduction for this dtype and op, as ProcessGroupGloo picks it; no function where the
// inline path leaves it to ProcessGroupGloo (other dtypes; AVG, PREMUL_SUM and the bitwise ops).
Reduction reduction_for(at::ScalarType type, c10d::ReduceOp::RedOpType op) {
  switch (type) {
    case at::kFloat:
      return reduction<float>(op);
    case at::kDouble:
      return reduction<double>(op);
    case at::kInt:
      return reduction<std::int32_t>(op);
    case at::kLong:
      return reduction<std::int64_t>(op);
    default:
      return {};
  }
}

// DISTMETRICS_GLOO_INLINE=0 in the environment keeps every collective on ProcessGroupGloo's
// queue: the same build measured both ways (docs/performance.md).
bool inline_enabled() {
  static const bool enabled = [] {
    const char* value = std::getenv("DISTMETRICS_GLOO_INLINE");
    return value == nullptr || std::string(value) != "0";
  }();
  return enabled;
}

}  // namespace

InlineGlooGroup::Slot InlineGlooGroup::take_slot(std::chrono::milliseconds requested) {
  ++counts_.inline_ops;
  const uint32_t tag = nextTag();
  return {tag, getContext(tag), requested == c10d::kUnsetTimeout ? options_->timeout : requested};
}

bool InlineGlooGroup::work_queued() {
  std::lock_guard<std::mutex> lock(workMutex_);
  if (!workQueue_.empty()) return true;
  // One slot per worker thread, empty while it waits for work.
  return std::any_of(workInProgress_.begin(), workInProgress_.end(), [](const auto& work) { return bool(work); });
}

c10::intrusive_ptr<c10d::Work> InlineGlooGroup::allreduce(std::vector<at::Tensor>& tensors,
                                                          const c10d::AllreduceOptions& opts) {
  Reduction reduce;
  if (inline_enabled() && tensors.size() == 1 && plain_cpu(tensors[0])) reduce = reduction_for(tensors[0].scalar_type(), opts.reduceOp.op_);
  if (!reduce.fn) {
    ++counts_.queued_ops;
    return ProcessGroupGloo::allreduce(tensors, opts);
  }
  const Slot slot = take_slot(opts.timeout);
  at::Tensor tensor = tensors[0];
  return run_now(c10d::OpType::ALLREDUCE, tensors, [&] {
    ::gloo::AllreduceOptions gloo_opts(slot.context);
    gloo_opts.setReduceFunction(reduce.fn);
    gloo_opts.setTag(slot.tag);
    gloo_opts.setTimeout(slot.timeout);
    reduce.set_output(gloo_opts, tensor);
    ::gloo::allreduce(gloo_opts);
  });
}

c10::intrusive_ptr<c10d::Work> InlineGlooGroup::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                          std::vector<at::Tensor>& inputs,
                                                          const c10d::AllgatherOptions& opts) {
  // ProcessGroupGloo's own checks, passed, decide that it would gather these as one flat buffer.
  bool plain = inline_enabled() && inputs.size() == 1 && outputs.size() == 1 && plain_cpu(inputs[0]) &&
               moved_inline(inputs[0].scalar_type()) && static_cast<int>(outputs[0].size()) == getSize();
  for (std::size_t i = 0; plain && i < outputs[0].size(); ++i) {
    const at::Tensor& out = outputs[0][i];
    plain = plain_cpu(out) && out.scalar_type() == inputs[0].scalar_type() && out.sizes() == inputs[0].sizes();
  }
  if (!plain) {
    ++counts_.queued_ops;
    return ProcessGroupGloo::allgather(outputs, inputs, opts);
  }
  const Slot slot = take_slot(opts.timeout);
  std::vector<at::Tensor> result(outputs[0]);
  return run_now(c10d::OpType::ALLGATHER, result, [&] {
    // A data move: bytes, gathered into one buffer in rank order, then into each output.
    at::Tensor input = bytes_of(inputs[0]);
    const std::int64_t n = input.numel();
    at::Tensor flat = at::empty({n * getSize()}, input.options());
    ::gloo::AllgatherOptions gloo_opts(slot.context);
    gloo_opts.setInput(input.data_ptr<std::uint8_t>(), static_cast<size_t>(n));
    gloo_opts.setOutput(flat.data_ptr<std::uint8_t>(), static_cast<size_t>(n * getSize()));
    gloo_opts.setTag(slot.tag);
    gloo_opts.setTimeout(slot.timeout);
    ::gloo::allgather(gloo_opts);
    for (int r = 0; r < getSize(); ++r) bytes_of(outputs[0][r]).copy_(flat.narrow(0, r * n, n));
  });
}

c10::intrusive_ptr<c10d::Work> InlineGlooGroup::broadcast(std::vector<at::Tensor>& tensors,
                                                          const c10d::BroadcastOptions& opts) {
  const bool plain = inline_enabled() && tensors.size() == 1 && plain_cpu(tensors[0]) && moved_inline(tensors[0].scalar_type()) &&
                     opts.rootTensor == 0 && opts.rootRank >= 0 && opts.rootRank < getSize();
  if (!plain) {
    ++counts_.queued_ops;
    return ProcessGroupGloo::broadcast(tensors, opts);
  }
  const Slot slot = take_slot(opts.timeout);
  return run_now(c10d::OpType::BROADCAST, tensors, [&] {
    at::Tensor bytes = bytes_of(tensors[0]);
    const auto n = static_cast<size_t>(bytes.numel());
    ::gloo::BroadcastOptions gloo_opts(slot.context);
    gloo_opts.setRoot(static_cast<int>(opts.rootRank));
    gloo_opts.setTag(slot.tag);
    gloo_opts.setTimeout(slot.timeout);
    if (getRank() == opts.rootRank) gloo_opts.setInput(bytes.data_ptr<std::uint8_t>(), n);
    gloo_opts.setOutput(bytes.data_ptr<std::uint8_t>(), n);
    ::gloo::broadcast(gloo_opts);
  });
}

c10::intrusive_ptr<c10d::Work> InlineGlooGroup::barrier(const c10d::BarrierOptions& opts) {
  // ProcessGroupGloo's barrier first waits for the work queued before it: only with none is it
  // the bare gloo barrier that runs here.
  if (!inline_enabled() || work_queued()) {
    ++counts_.queued_ops;
    return ProcessGroupGloo::barrier(opts);
  }
  const Slot slot = take_slot(opts.timeout);
  return run_now(c10d::OpType::BARRIER, {}, [&] {
    ::gloo::BarrierOptions gloo_opts(slot.context);
    gloo_opts.setTag(slot.tag);
    gloo_opts.setTimeout(slot.timeout);
    ::gloo::barrier(gloo_opts);
  });
}

}  // namespace distmetrics::runtime::detail
