// The communicator: the one way distmetrics code (and the reference metrics) talks across ranks.
//
// Backends implement four primitives on flat, contiguous buffers that already sit on the
// communicator's device; this class does everything else once: coalescing several tensors into
// one buffer per dtype, moving tensors to the backend's device and back, exchanging shapes so
// that gathers of different lengths (zero included) come back exactly, sequence numbers, the
// per-rank collective trace, deadlines, and error messages that name rank, operation, sequence
// number, dtype and shape.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/util/intrusive_ptr.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "distmetrics/runtime/deadline.h"

namespace distmetrics::runtime {

enum class ReduceOp { Sum, Max, Min, Prod };
const char* to_string(ReduceOp op);

// The name distmetrics gives a dtype in traces, errors and reports: "float64", "int64", "bool"...
std::string dtype_name(at::ScalarType type);

// One backend collective as issued by this rank. Ranks that agree issue identical sequences
// of (op, dtype) records; the first difference between two ranks' traces names a desync.
struct CollectiveRecord {
  std::uint64_t seq = 0;            // 0-based, counted per communicator
  std::string op;                   // "all_reduce(sum)", "all_gather", "broadcast(root=0)", "barrier"
  std::string dtype;                // "float64", "int64", ...; empty for barrier
  std::vector<std::int64_t> shape;  // this rank's contribution; empty for barrier
  // What issued it, as the task declared (Communicator::set_issuer): 0-based script step and
  // compute number; -1 when not declared. Two ranks' records with the same seq but different
  // computes are collectives of different computes paired with each other (a desync).
  int step = -1;
  int compute = -1;

  std::string describe() const;     // "all_reduce(sum) #3 (float64 [4])"
  std::string issuer() const;       // "compute 3 (script step 5)", or "" when not declared
};

// Told about every collective before it may block and after it returns: lets a worker tell its
// supervisor where it is, so a hang can be blamed on a rank and an operation.
class CollectiveObserver {
 public:
  virtual ~CollectiveObserver() = default;
  virtual void on_enter(const CollectiveRecord& record) = 0;
  virtual void on_exit(const CollectiveRecord& record, bool ok) = 0;
};

class Communicator {
 public:
  virtual ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  // Where collectives run: cuda:local_rank for NCCL, CPU or CUDA for Gloo, CPU for MPI.
  at::Device device() const { return device_; }
  virtual std::string backend() const = 0;  // "gloo", "nccl", "mpi", "single"

  // Replaces every entry of `tensors` with a new tensor holding its reduction across ranks; the
  // tensors passed in (and anything aliasing them, such as a metric's local state) are left
  // untouched. Tensors of one dtype travel in one collective; each comes back on the device (and
  // with the shape) it had.
  void all_reduce(std::vector<at::Tensor>& tensors, ReduceOp op);
  // Convenience for one tensor: returns the reduced copy, leaves `tensor` untouched.
  at::Tensor all_reduce_copy(const at::Tensor& tensor, ReduceOp op);

  // Every rank contributes a tensor of shape [n_r, rest...] (n_r may differ, 0 included; rest and
  // dtype must agree). Returns the world_size tensors in rank order, exactly, on the input's device.
  // On the communicator's device they are views of one receive buffer (written by nothing else).
  std::vector<at::Tensor> all_gather(const at::Tensor& tensor);
  // Coalesced: one shape exchange for all tensors, then one collective for all their bytes,
  // whatever their dtypes (none when no rank holds any element). result[i][r] is tensor i of rank r.
  std::vector<std::vector<at::Tensor>> all_gather(const std::vector<at::Tensor>& tensors);

  // Replaces `tensor` on every rank with root's (shape and dtype must agree).
  void broadcast(at::Tensor& tensor, int root);
  void barrier();

  // Each collective must finish within this time, or it throws CollectiveError (kind Timeout).
  void set_op_timeout(std::chrono::milliseconds timeout) { op_timeout_ = timeout; }
  std::chrono::milliseconds op_timeout() const { return op_timeout_; }
  void set_observer(std::shared_ptr<CollectiveObserver> observer) { observer_ = std::move(observer); }
  // Stamps every later collective with what issued it (CollectiveRecord::step, compute): the
  // scenario task sets it before each step, so a desync can be named by compute, not only by
  // sequence number. -1: not declared.
  void set_issuer(int step, int compute) {
    issuer_step_ = step;
    issuer_compute_ = compute;
  }

  // The c10d process group collectives run on, when the backend has one (c10d::ProcessGroupGloo
  // for gloo, c10d::ProcessGroupNCCL for nccl); null for mpi and single. Type-erased so that this
  // header stays light: distmetrics/plugin/process_group.h gives it its type, for metrics that
  // make their own c10d calls (which bypass this class's deadlines and trace).
  virtual c10::intrusive_ptr<c10::intrusive_ptr_target> process_group() const { return {}; }
  // The c10d::Store this job's process group met on (type-erased, like process_group()), for
  // code that builds a process group of its own for the same ranks, e.g. torch.distributed in a
  // Python metric (under a prefix of its own); null for mpi and single.
  virtual c10::intrusive_ptr<c10::intrusive_ptr_target> rendezvous_store() const { return {}; }

  // A collective issued outside this class on the same ranks (e.g. a Python metric's
  // torch.distributed call): numbered and traced like the communicator's own and told to the
  // observer, so that hang blame and desync diagnosis see it. Every enter_external() must be
  // followed by exit_external() with its record.
  CollectiveRecord enter_external(std::string op, std::string dtype, std::vector<std::int64_t> shape);
  void exit_external(const CollectiveRecord& record, bool ok);

  // Every backend collective this communicator issued, in order.
  const std::vector<CollectiveRecord>& trace() const { return trace_; }
  std::uint64_t collectives_issued() const { return trace_.size(); }

 protected:
  Communicator(int rank, int world_size, at::Device device);

  // Backend primitives. Buffers are contiguous and on device(); each call must return by the
  // deadline or throw (the base class turns any exception into a CollectiveError).
  virtual void all_reduce_flat(at::Tensor& buffer, ReduceOp op, const Deadline& deadline) = 0;
  // output has world_size * input.numel() elements; rank r's input lands at [r*n, (r+1)*n).
  virtual void all_gather_flat(const at::Tensor& input, at::Tensor& output, const Deadline& deadline) = 0;
  virtual void broadcast_flat(at::Tensor& buffer, int root, const Deadline& deadline) = 0;
  virtual void barrier_flat(const Deadline& deadline) = 0;

 private:
  friend class CollectiveScope;
  int rank_;
  int world_size_;
  at::Device device_;
  std::chrono::milliseconds op_timeout_{std::chrono::seconds(60)};
  std::shared_ptr<CollectiveObserver> observer_;
  std::vector<CollectiveRecord> trace_;
  int issuer_step_ = -1;
  int issuer_compute_ = -1;
  std::uint64_t external_sync_ = 0;  // the rank's phase clock inside an external collective ("sync")
};

// A communicator for one process (world size 1): every collective is the identity, but it is
// still traced, so collective counts are the same code path at every world size.
std::unique_ptr<Communicator> make_single_process_communicator(at::Device device = at::kCPU);

}  // namespace distmetrics::runtime
