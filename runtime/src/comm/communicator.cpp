// The parts of Communicator every backend shares: tracing, device moves, coalescing and the
// shape exchange. Backends only move flat buffers.
#include "distmetrics/runtime/comm.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <map>
#include <optional>
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

// Whether the backend raised because a peer's connection closed (a peer that died or left, whose
// own outcome is the cause): the backend says it only in words, read here once into
// CollectiveError::peer_left.
bool backend_says_peer_left(CollectiveFailure kind, const std::string& detail) {
  return kind == CollectiveFailure::Failed &&
         mentions(detail, {"connection reset", "connection closed", "broken pipe", "end of file", "socket closed",
                           "connection refused", "peer"});
}

// The advice follows from what the backend said: a lost connection is a peer that died or
// left (its own outcome is the cause), not a tensor the backend cannot take.
std::string what_to_do(CollectiveFailure kind, const std::string& detail) {
  if (backend_says_peer_left(kind, detail)) return kPeerLeftAdvice;
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
      record_(std::move(record)),
      peer_left_(backend_says_peer_left(kind, detail)) {}

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

namespace {

// all_gather's shape exchange, as every rank sent it: [k, then per tensor dtype, ndim, dims...].
class GatheredShapes {
 public:
  explicit GatheredShapes(at::Tensor all_meta) : table_(std::move(all_meta)), at_(table_.accessor<std::int64_t, 2>()) {}

  std::int64_t count(int r) const { return at_[r][0]; }
  std::int64_t field(int r, int i, int field) const { return at_[r][1 + i * kMetaPerTensor + field]; }
  at::ScalarType dtype(int r, int i) const { return static_cast<at::ScalarType>(field(r, i, 0)); }
  std::int64_t dims(int r, int i) const { return field(r, i, 1); }
  std::int64_t dim(int r, int i, int d) const { return field(r, i, 2 + d); }

  std::vector<std::int64_t> shape(int r, int i) const {
    std::vector<std::int64_t> s;
    for (int d = 0; d < dims(r, i); ++d) s.push_back(dim(r, i, d));
    return s;
  }
  std::int64_t bytes(int r, int i) const {
    std::int64_t n = static_cast<std::int64_t>(c10::elementSize(dtype(r, i)));
    for (int d = 0; d < dims(r, i); ++d) n *= dim(r, i, d);
    return n;
  }
  // "float32 [3, 2]"
  std::string describe(int r, int i) const {
    std::ostringstream o;
    o << dtype_name(dtype(r, i)) << " [";
    for (int d = 0; d < dims(r, i); ++d) o << (d ? ", " : "") << dim(r, i, d);
    return o.str() + "]";
  }

 private:
  at::Tensor table_;
  at::TensorAccessor<std::int64_t, 2> at_;
};

// This rank's part of the shape exchange.
at::Tensor shape_message(const std::vector<at::Tensor>& tensors, int rank) {
  const int k = static_cast<int>(tensors.size());
  at::Tensor meta = at::zeros({1 + k * kMetaPerTensor}, at::kLong);
  auto m = meta.accessor<std::int64_t, 1>();
  m[0] = k;
  for (int i = 0; i < k; ++i) {
    const at::Tensor& t = tensors[i];
    if (!t.defined() || t.dim() < 1 || t.dim() > kMaxDims) {
      throw ConfigError("all_gather: tensor " + std::to_string(i) + " on rank " + std::to_string(rank) +
                        " must have 1 to " + std::to_string(kMaxDims) + " dimensions");
    }
    m[1 + i * kMetaPerTensor] = static_cast<std::int64_t>(t.scalar_type());
    m[2 + i * kMetaPerTensor] = t.dim();
    for (int d = 0; d < t.dim(); ++d) m[3 + i * kMetaPerTensor + d] = t.size(d);
  }
  return meta;
}

// Where the ranks' shapes disagree first (the number of tensors, then each tensor's dtype, rank
// and dims past the first), or nullopt.
std::optional<std::string> shapes_disagree(const GatheredShapes& shapes, int k, int ws, int rank) {
  for (int r = 0; r < ws; ++r) {
    if (shapes.count(r) != k)
      return "rank " + std::to_string(r) + " gathers " + std::to_string(shapes.count(r)) + " tensors, rank " +
             std::to_string(rank) + " gathers " + std::to_string(k);
  }
  for (int i = 0; i < k; ++i) {
    for (int r = 0; r < ws; ++r) {
      bool same = shapes.field(r, i, 0) == shapes.field(0, i, 0) && shapes.dims(r, i) == shapes.dims(0, i);
      for (int d = 1; same && d < shapes.dims(0, i); ++d) same = shapes.dim(r, i, d) == shapes.dim(0, i, d);
      if (!same)
        return "tensor " + std::to_string(i) + ": rank 0 has " + shapes.describe(0, i) + ", rank " + std::to_string(r) +
               " has " + shapes.describe(r, i) + " (only dim 0 may differ between ranks)";
    }
  }
  return std::nullopt;
}

// The gather's layout: each rank's tensors one after the other, every part starting at a
// multiple of the widest element size (so that its view keeps its dtype's alignment; no padding
// at all when the tensors share one dtype), padded to the longest rank.
struct GatherLayout {
  std::int64_t align = 1;
  std::int64_t longest = 0;
  std::int64_t aligned(std::int64_t n) const { return (n + align - 1) / align * align; }
};

GatherLayout gather_layout(const std::vector<at::Tensor>& tensors, const GatheredShapes& shapes, int ws) {
  GatherLayout layout;
  for (const at::Tensor& t : tensors)
    layout.align = std::max<std::int64_t>(layout.align, static_cast<std::int64_t>(t.element_size()));
  for (int r = 0; r < ws; ++r) {
    std::int64_t total = 0;
    for (int i = 0; i < static_cast<int>(tensors.size()); ++i) total += layout.aligned(shapes.bytes(r, i));
    layout.longest = std::max(layout.longest, total);
  }
  return layout;
}

// This rank's bytes as the layout places them (zeros between and after the parts: no stray
// bytes on the wire); its one tensor as it is when it already is the send buffer.
at::Tensor send_buffer(const std::vector<at::Tensor>& tensors, const GatheredShapes& shapes, const GatherLayout& layout,
                       int rank, const at::Device& device) {
  const int k = static_cast<int>(tensors.size());
  const at::Tensor& only = tensors[0];
  if (k == 1 && only.device() == device && only.is_contiguous() && only.numel() * only.element_size() == layout.longest)
    return only.view({-1}).view(at::kByte);
  at::Tensor send = at::empty({layout.longest}, at::TensorOptions().dtype(at::kByte).device(device));
  std::int64_t offset = 0;
  for (int i = 0; i < k; ++i) {
    const std::int64_t n = shapes.bytes(rank, i);
    if (n > 0) send.narrow(0, offset, n).copy_(tensors[i].to(device).contiguous().view({-1}).view(at::kByte));
    if (layout.aligned(n) > n) send.narrow(0, offset + n, layout.aligned(n) - n).zero_();
    offset += layout.aligned(n);
  }
  if (offset < layout.longest) send.narrow(0, offset, layout.longest - offset).zero_();
  return send;
}

// What the trace records of the gather: the dtype when all tensors share one (counted in its
// elements), else bytes.
at::Tensor traced_gather(const std::vector<at::Tensor>& tensors, std::int64_t longest) {
  bool one_dtype = true;
  for (std::size_t i = 1; i < tensors.size(); ++i) one_dtype = one_dtype && tensors[i].scalar_type() == tensors[0].scalar_type();
  return one_dtype ? at::empty({longest / static_cast<std::int64_t>(tensors[0].element_size())},
                               at::TensorOptions().dtype(tensors[0].scalar_type()).device(at::kMeta))
                   : at::empty({longest}, at::TensorOptions().dtype(at::kByte).device(at::kMeta));
}

}  // namespace

std::vector<std::vector<at::Tensor>> Communicator::all_gather(const std::vector<at::Tensor>& tensors) {
  const int k = static_cast<int>(tensors.size());
  const int ws = world_size_;
  // 1. Shape exchange: every rank learns every rank's shapes, so all ranks agree on the layout
  //    and on any mismatch.
  const at::Tensor meta = shape_message(tensors, rank_);
  at::Tensor meta_dev = meta.to(device_);
  at::Tensor all_meta_dev = at::empty({ws * meta.numel()}, meta_dev.options());
  CollectiveScope meta_scope(*this, "all_gather(shapes)", &meta_dev);
  meta_scope.run([&](const Deadline& deadline) { all_gather_flat(meta_dev, all_meta_dev, deadline); });
  const GatheredShapes shapes(all_meta_dev.to(at::kCPU).view({ws, meta.numel()}));
  if (const auto disagreement = shapes_disagree(shapes, k, ws, rank_)) meta_scope.mismatch(*disagreement);

  // 2. One gather of every tensor's bytes, whatever its dtype (every backend moves bytes), in
  //    the layout above. Skipped when no rank holds any element. The parts come back as views of
  //    the receive buffer (no copy per part: a caller that concatenates them makes the one copy
  //    it needs).
  const GatherLayout layout = gather_layout(tensors, shapes, ws);
  std::vector<std::vector<at::Tensor>> result(k, std::vector<at::Tensor>(ws));
  if (layout.longest == 0) {  // every rank holds nothing: no collective needed, all agree
    for (int i = 0; i < k; ++i)
      for (int r = 0; r < ws; ++r) result[i][r] = at::empty(shapes.shape(r, i), tensors[i].options());
    return result;
  }
  at::Tensor send = send_buffer(tensors, shapes, layout, rank_, device_);
  const at::Tensor described = traced_gather(tensors, layout.longest);
  at::Tensor recv = at::empty({ws * layout.longest}, at::TensorOptions().dtype(at::kByte).device(device_));
  CollectiveScope scope(*this, "all_gather", &described);
  scope.run([&](const Deadline& deadline) { all_gather_flat(send, recv, deadline); });
  for (int r = 0; r < ws; ++r) {
    std::int64_t off = r * layout.longest;
    for (int i = 0; i < k; ++i) {
      const std::int64_t n = shapes.bytes(r, i);
      result[i][r] = recv.narrow(0, off, n).view(tensors[i].scalar_type()).view(shapes.shape(r, i)).to(tensors[i].device());
      off += layout.aligned(n);
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
