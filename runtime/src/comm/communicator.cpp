// The parts of Communicator every backend shares: tracing, device moves, coalescing and the
// shape exchange. Backends only move flat buffers.
#include "distmetrics/runtime/comm.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <map>
#include <sstream>

#include "distmetrics/runtime/errors.h"
#include "distmetrics/runtime/phases.h"

namespace distmetrics::runtime {

const char* to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Max: return "max";
    case ReduceOp::Min: return "min";
    case ReduceOp::Prod: return "prod";
  }
  return "?";
}

const char* to_string(CollectiveFailure kind) {
  switch (kind) {
    case CollectiveFailure::Timeout: return "timeout";
    case CollectiveFailure::Mismatch: return "mismatch";
    case CollectiveFailure::Failed: return "failed";
  }
  return "?";
}

std::string dtype_name(at::ScalarType type) {
  switch (type) {
    case at::kDouble: return "float64";
    case at::kFloat: return "float32";
    case at::kHalf: return "float16";
    case at::kBFloat16: return "bfloat16";
    case at::kLong: return "int64";
    case at::kInt: return "int32";
    case at::kShort: return "int16";
    case at::kChar: return "int8";
    case at::kByte: return "uint8";
    case at::kBool: return "bool";
    default: return c10::toString(type);
  }
}

std::string CollectiveRecord::describe() const {
  std::ostringstream out;
  out << op << " #" << seq;
  if (!dtype.empty()) {
    out << " (" << dtype << " [";
    for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
    out << "])";
  }
  return out.str();
}

std::string CollectiveRecord::issuer() const {
  if (compute >= 0) return "compute " + std::to_string(compute + 1) + " (script step " + std::to_string(step + 1) + ")";
  if (step >= 0) return "script step " + std::to_string(step + 1);
  return "";
}

namespace {

bool mentions(const std::string& text, std::initializer_list<const char*> words) {
  std::string lower = text;
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* w : words)
    if (lower.find(w) != std::string::npos) return true;
  return false;
}

// The advice follows from what the backend said: a lost connection is a peer that died or
// left (its own outcome is the cause), not a tensor the backend cannot take.
std::string what_to_do(CollectiveFailure kind, const std::string& detail) {
  if (kind == CollectiveFailure::Failed &&
      mentions(detail, {"connection reset", "connection closed", "broken pipe", "end of file", "socket closed",
                        "connection refused", "peer"}))
    return kPeerLeftAdvice;
  if (kind == CollectiveFailure::Failed && !mentions(detail, {"cuda", "nccl", "device"}))
    return "Check that the tensors suit the backend (dtype, device, dense and contiguous).";
  switch (kind) {
    case CollectiveFailure::Timeout:
      return "Every rank must issue the same collectives in the same order: compare the ranks' "
             "collective traces to find the rank that skipped or reordered one.";
    case CollectiveFailure::Mismatch:
      return "Every rank must pass tensors of the same dtype and trailing shape.";
    case CollectiveFailure::Failed:
      return "Check that the tensors suit the backend (NCCL needs CUDA tensors on cuda:local_rank).";
  }
  return "";
}

std::string collective_message(int rank, CollectiveFailure kind, const CollectiveRecord& record,
                               const std::string& detail) {
  std::ostringstream out;
  out << "rank " << rank << ": " << record.describe() << " ";
  switch (kind) {
    case CollectiveFailure::Timeout: out << "timed out"; break;
    case CollectiveFailure::Mismatch: out << "found ranks that disagree"; break;
    case CollectiveFailure::Failed: out << "failed"; break;
  }
  out << ": " << detail << ". " << what_to_do(kind, detail);
  return out.str();
}

std::vector<std::int64_t> sizes_of(const at::Tensor& t) { return t.sizes().vec(); }

// Fixed layout of one tensor's entry in the shape exchange of all_gather.
constexpr int kMaxDims = 8;
constexpr int kMetaPerTensor = 2 + kMaxDims;  // dtype, ndim, dims...

}  // namespace

CollectiveError::CollectiveError(int rank, CollectiveFailure kind, CollectiveRecord record,
                                 const std::string& detail)
    : std::runtime_error(collective_message(rank, kind, record, detail)),
      rank_(rank),
      kind_(kind),
      record_(std::move(record)) {}

// Numbers, traces and reports one collective; turns backend exceptions into CollectiveErrors.
class CollectiveScope {
 public:
  CollectiveScope(Communicator& comm, std::string op, const at::Tensor* buffer) : comm_(comm) {
    record_.seq = comm.trace_.size();
    record_.op = std::move(op);
    record_.step = comm.issuer_step_;
    record_.compute = comm.issuer_compute_;
    if (buffer != nullptr) {
      record_.dtype = dtype_name(buffer->scalar_type());
      record_.shape = sizes_of(*buffer);
    }
    comm.trace_.push_back(record_);
    if (comm.observer_) comm.observer_->on_enter(record_);
    sync_ = RankPhaseClock::enter("sync");
  }
  ~CollectiveScope() { RankPhaseClock::leave(sync_); }

  template <typename Fn>
  void run(Fn&& fn) {
    const Deadline deadline = Deadline::after(comm_.op_timeout_);
    try {
      fn(deadline);
    } catch (const BackendTimeout& e) {
      finish(false);
      throw CollectiveError(comm_.rank_, CollectiveFailure::Timeout, record_,
                            std::string("did not finish within ") +
                                std::to_string(deadline.budget().count()) + " ms (" + e.what() + ")");
    } catch (const CollectiveError&) {
      finish(false);
      throw;
    } catch (const std::exception& e) {
      finish(false);
      throw CollectiveError(comm_.rank_, CollectiveFailure::Failed, record_, e.what());
    }
    finish(true);
  }

  [[noreturn]] void mismatch(const std::string& detail) {
    finish(false);
    throw CollectiveError(comm_.rank_, CollectiveFailure::Mismatch, record_, detail);
  }

 private:
  void finish(bool ok) {
    if (comm_.observer_) comm_.observer_->on_exit(record_, ok);
  }
  Communicator& comm_;
  CollectiveRecord record_;
  std::uint64_t sync_ = 0;  // the rank's phase clock: time inside a collective is "sync"
};

Communicator::Communicator(int rank, int world_size, at::Device device)
    : rank_(rank), world_size_(world_size), device_(device) {
  if (world_size < 1 || rank < 0 || rank >= world_size) {
    throw ConfigError("communicator: rank " + std::to_string(rank) + " is not in [0, " +
                      std::to_string(world_size) + ")");
  }
}

Communicator::~Communicator() = default;

CollectiveRecord Communicator::enter_external(std::string op, std::string dtype, std::vector<std::int64_t> shape) {
  CollectiveRecord record;
  record.seq = trace_.size();
  record.op = std::move(op);
  record.dtype = std::move(dtype);
  record.shape = std::move(shape);
  record.step = issuer_step_;  // stamped like the communicator's own, so a desync is judged per step
  record.compute = issuer_compute_;
  trace_.push_back(record);
  if (observer_) observer_->on_enter(record);
  external_sync_ = RankPhaseClock::enter("sync");
  return record;
}

void Communicator::exit_external(const CollectiveRecord& record, bool ok) {
  RankPhaseClock::leave(external_sync_);
  external_sync_ = 0;
  if (observer_) observer_->on_exit(record, ok);
}

void Communicator::all_reduce(std::vector<at::Tensor>& tensors, ReduceOp op) {
  // One buffer per dtype, in a fixed dtype order, so that every rank issues the same sequence.
  std::map<at::ScalarType, std::vector<size_t>> by_dtype;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!tensors[i].defined()) throw ConfigError("all_reduce: tensor " + std::to_string(i) + " is undefined");
    by_dtype[tensors[i].scalar_type()].push_back(i);
  }
  for (const auto& [dtype, indices] : by_dtype) {
    // The buffer is this call's own copy (the backend reduces in place; the caller's tensors are
    // never written to), and the results are views of it: one copy per dtype, not two.
    at::Tensor buffer;
    if (indices.size() == 1) {
      const at::Tensor& only = tensors[indices[0]];
      at::Tensor flat = only.reshape(-1).to(device_);
      buffer = flat.is_alias_of(only) ? flat.clone(at::MemoryFormat::Contiguous) : flat.contiguous();
    } else {
      std::vector<at::Tensor> flat_parts;
      for (size_t i : indices) flat_parts.push_back(tensors[i].reshape(-1).to(device_));
      buffer = at::cat(flat_parts);
    }
    CollectiveScope scope(*this, std::string("all_reduce(") + to_string(op) + ")", &buffer);
    scope.run([&](const Deadline& deadline) { all_reduce_flat(buffer, op, deadline); });
    std::int64_t offset = 0;
    for (size_t i : indices) {
      const std::int64_t n = tensors[i].numel();
      tensors[i] = buffer.narrow(0, offset, n).view(tensors[i].sizes()).to(tensors[i].device());
      offset += n;
    }
  }
}

at::Tensor Communicator::all_reduce_copy(const at::Tensor& tensor, ReduceOp op) {
  std::vector<at::Tensor> one{tensor};
  all_reduce(one, op);
  return one[0];
}

std::vector<at::Tensor> Communicator::all_gather(const at::Tensor& tensor) {
  return all_gather(std::vector<at::Tensor>{tensor})[0];
}

std::vector<std::vector<at::Tensor>> Communicator::all_gather(const std::vector<at::Tensor>& tensors) {
  const int k = static_cast<int>(tensors.size());
  const int ws = world_size_;
  // 1. Shape exchange: [k, then per tensor dtype, ndim, dims...]. Every rank learns every
  //    rank's shapes, so all ranks agree on the layout and on any mismatch.
  at::Tensor meta = at::zeros({1 + k * kMetaPerTensor}, at::kLong);
  auto m = meta.accessor<std::int64_t, 1>();
  m[0] = k;
  for (int i = 0; i < k; ++i) {
    const at::Tensor& t = tensors[i];
    if (!t.defined() || t.dim() < 1 || t.dim() > kMaxDims) {
      throw ConfigError("all_gather: tensor " + std::to_string(i) + " on rank " + std::to_string(rank_) +
                        " must have 1 to " + std::to_string(kMaxDims) + " dimensions");
    }
    m[1 + i * kMetaPerTensor] = static_cast<std::int64_t>(t.scalar_type());
    m[2 + i * kMetaPerTensor] = t.dim();
    for (int d = 0; d < t.dim(); ++d) m[3 + i * kMetaPerTensor + d] = t.size(d);
  }
  at::Tensor meta_dev = meta.to(device_);
  at::Tensor all_meta_dev = at::empty({ws * meta.numel()}, meta_dev.options());
  CollectiveScope meta_scope(*this, "all_gather(shapes)", &meta_dev);
  meta_scope.run([&](const Deadline& deadline) { all_gather_flat(meta_dev, all_meta_dev, deadline); });
  at::Tensor all_meta = all_meta_dev.to(at::kCPU).view({ws, meta.numel()});
  auto am = all_meta.accessor<std::int64_t, 2>();

  auto entry = [&](int r, int i, int field) { return am[r][1 + i * kMetaPerTensor + field]; };
  for (int r = 0; r < ws; ++r) {
    if (am[r][0] != k) {
      meta_scope.mismatch("rank " + std::to_string(r) + " gathers " + std::to_string(am[r][0]) +
                          " tensors, rank " + std::to_string(rank_) + " gathers " + std::to_string(k));
    }
  }
  for (int i = 0; i < k; ++i) {
    for (int r = 0; r < ws; ++r) {
      bool same = entry(r, i, 0) == entry(0, i, 0) && entry(r, i, 1) == entry(0, i, 1);
      for (int d = 1; same && d < entry(0, i, 1); ++d) same = entry(r, i, 2 + d) == entry(0, i, 2 + d);
      if (!same) {
        auto describe = [&](int rr) {
          std::ostringstream o;
          o << dtype_name(static_cast<at::ScalarType>(entry(rr, i, 0))) << " [";
          for (int d = 0; d < entry(rr, i, 1); ++d) o << (d ? ", " : "") << entry(rr, i, 2 + d);
          return o.str() + "]";
        };
        meta_scope.mismatch("tensor " + std::to_string(i) + ": rank 0 has " + describe(0) + ", rank " +
                            std::to_string(r) + " has " + describe(r) +
                            " (only dim 0 may differ between ranks)");
      }
    }
  }

  // 2. One gather of every tensor's bytes, whatever its dtype (every backend moves bytes): each
  //    rank's tensors one after the other (each aligned for its dtype), padded to the longest
  //    rank. Skipped when no rank holds any element. The parts come back as views of the receive
  //    buffer (no copy per part: a caller that concatenates them makes the one copy it needs).
  auto shape_of = [&](int r, int i) {
    std::vector<std::int64_t> s;
    for (int d = 0; d < entry(r, i, 1); ++d) s.push_back(entry(r, i, 2 + d));
    return s;
  };
  auto bytes_of = [&](int r, int i) {
    std::int64_t n = static_cast<std::int64_t>(c10::elementSize(static_cast<at::ScalarType>(entry(r, i, 0))));
    for (int d = 0; d < entry(r, i, 1); ++d) n *= entry(r, i, 2 + d);
    return n;
  };
  // Every part starts at a multiple of the widest element size, so that its view keeps its
  // dtype's alignment (no padding at all when the tensors share one dtype).
  std::int64_t align = 1;
  for (const at::Tensor& t : tensors) align = std::max<std::int64_t>(align, static_cast<std::int64_t>(t.element_size()));
  auto aligned = [align](std::int64_t n) { return (n + align - 1) / align * align; };
  std::int64_t longest = 0;
  for (int r = 0; r < ws; ++r) {
    std::int64_t total = 0;
    for (int i = 0; i < k; ++i) total += aligned(bytes_of(r, i));
    longest = std::max(longest, total);
  }
  std::vector<std::vector<at::Tensor>> result(k, std::vector<at::Tensor>(ws));
  if (longest == 0) {  // every rank holds nothing: no collective needed, all agree
    for (int i = 0; i < k; ++i)
      for (int r = 0; r < ws; ++r) result[i][r] = at::empty(shape_of(r, i), tensors[i].options());
    return result;
  }
  const auto bytes_options = at::TensorOptions().dtype(at::kByte).device(device_);
  at::Tensor send;
  const at::Tensor& only = tensors[0];
  if (k == 1 && only.device() == device_ && only.is_contiguous() && only.numel() * only.element_size() == longest) {
    send = only.view({-1}).view(at::kByte);  // this rank's tensor is the send buffer as it is
  } else {
    send = at::empty({longest}, bytes_options);
    std::int64_t offset = 0;
    for (int i = 0; i < k; ++i) {
      const std::int64_t n = bytes_of(rank_, i);
      if (n > 0) send.narrow(0, offset, n).copy_(tensors[i].to(device_).contiguous().view({-1}).view(at::kByte));
      if (aligned(n) > n) send.narrow(0, offset + n, aligned(n) - n).zero_();
      offset += aligned(n);
    }
    if (offset < longest) send.narrow(0, offset, longest - offset).zero_();  // no stray bytes on the wire
  }
  // The trace names the dtype when all tensors share one (counted in its elements), else bytes.
  bool one_dtype = true;
  for (int i = 1; i < k; ++i) one_dtype = one_dtype && tensors[i].scalar_type() == tensors[0].scalar_type();
  const at::Tensor described =
      one_dtype ? at::empty({longest / static_cast<std::int64_t>(tensors[0].element_size())},
                            at::TensorOptions().dtype(tensors[0].scalar_type()).device(at::kMeta))
                : at::empty({longest}, at::TensorOptions().dtype(at::kByte).device(at::kMeta));
  at::Tensor recv = at::empty({ws * longest}, bytes_options);
  CollectiveScope scope(*this, "all_gather", &described);
  scope.run([&](const Deadline& deadline) { all_gather_flat(send, recv, deadline); });
  for (int r = 0; r < ws; ++r) {
    std::int64_t off = r * longest;
    for (int i = 0; i < k; ++i) {
      const std::int64_t n = bytes_of(r, i);
      result[i][r] = recv.narrow(0, off, n).view(tensors[i].scalar_type()).view(shape_of(r, i)).to(tensors[i].device());
      off += aligned(n);
    }
  }
  return result;
}

void Communicator::broadcast(at::Tensor& tensor, int root) {
  if (root < 0 || root >= world_size_) {
    throw ConfigError("broadcast: root " + std::to_string(root) + " is not a rank of a world of " +
                      std::to_string(world_size_));
  }
  at::Tensor buffer = tensor.reshape(-1).to(device_).contiguous().clone();
  CollectiveScope scope(*this, "broadcast(root=" + std::to_string(root) + ")", &buffer);
  scope.run([&](const Deadline& deadline) { broadcast_flat(buffer, root, deadline); });
  tensor = buffer.view(tensor.sizes()).to(tensor.device());
}

void Communicator::barrier() {
  CollectiveScope scope(*this, "barrier", nullptr);
  scope.run([&](const Deadline& deadline) { barrier_flat(deadline); });
}

}  // namespace distmetrics::runtime
