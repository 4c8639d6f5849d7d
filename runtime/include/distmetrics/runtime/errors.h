// Errors raised by the distributed runtime. Every message names the rank, the operation (with
// its sequence number, dtype and shape) and what to do about it.
#pragma once

#include <stdexcept>
#include <string>

#include "distmetrics/runtime/comm.h"

namespace distmetrics::runtime {

enum class CollectiveFailure {
  Timeout,   // the deadline passed: a peer never entered this collective, or entered another one
  Mismatch,  // ranks disagreed on dtype or trailing shape (found during the shape exchange)
  Failed,    // the backend raised (e.g. NCCL given a CPU tensor)
};
const char* to_string(CollectiveFailure kind);

// The advice of a collective that failed because a peer's connection closed (the backend said
// "connection reset", "closed by peer", ...). The diagnosis decides from CollectiveError::peer_left
// (RankOutcome::peer_left), never from this text.
inline constexpr const char* kPeerLeftAdvice =
    "A peer's connection went away: that rank crashed or left the collective; its outcome is the cause.";

class CollectiveError : public std::runtime_error {
 public:
  CollectiveError(int rank, CollectiveFailure kind, CollectiveRecord record, const std::string& detail);
  int rank() const { return rank_; }
  CollectiveFailure kind() const { return kind_; }
  const CollectiveRecord& record() const { return record_; }
  // The backend raised (kind Failed) because a peer's connection closed: that rank crashed or left
  // the collective, and its outcome is the cause. Decided once, from what the backend said.
  bool peer_left() const { return peer_left_; }

 private:
  int rank_;
  CollectiveFailure kind_;
  CollectiveRecord record_;
  bool peer_left_ = false;
};

// Misuse of the runtime or bad configuration (unknown backend, NCCL without CUDA, ...).
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace distmetrics::runtime

namespace distmetrics::runtime {

// Thrown by a backend primitive when its deadline passes; the Communicator turns it into a
// CollectiveError of kind Timeout with the full record.
class BackendTimeout : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace distmetrics::runtime

namespace distmetrics::runtime {

// An allocation that failed (std::bad_alloc, or LibTorch's "can't allocate memory"): in a rank
// worker, the rank went past its memory limit. Tasks that catch errors let these through, so that
// the rank's outcome says so (error type RankMemoryExceeded, naming the rank and its limit).
bool is_allocation_failure(const std::exception& e);
// The error type of a rank past its memory limit (RankOutcome::error_type); the harness reports
// it as the outcome memory_exceeded.
inline constexpr const char* kRankMemoryExceeded = "RankMemoryExceeded";

}  // namespace distmetrics::runtime
