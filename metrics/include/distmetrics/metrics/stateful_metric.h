// StatefulMetric: the base of every reference metric. A metric declares its states, each with the
// reduction that combines it across ranks; the base does the rest of the Metric contract:
//
// - update() moves the batch to the metric's device and hands it to update_state(), which only
//   touches local state (it never communicates).
// - compute() syncs COPIES of the states and passes them to compute_from(); local state is never
//   overwritten, so compute(); compute(); agree and update/compute/update/compute counts every
//   sample once.
// - All states sharing a reduction travel in ONE runtime::Communicator::all_reduce call, which coalesces
//   them per dtype: a compute issues one collective per (reduction, dtype) group, plus, when the
//   metric has gather states, one shape exchange and one all_gather of all of their bytes.
// - Gather states hold any number of rows on each rank, zero included.
// - Without a communicator the metric is single process: sync() returns plain copies, the same
//   values a world-size-1 communicator returns.
//
// compute_from() sees only synced values, so a decision such as "no samples anywhere" taken
// there is the same on every rank: every rank raises NotComputableError together.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <map>
#include <string>
#include <vector>

#include "distmetrics/metrics/metric.h"

namespace distmetrics::metrics {

namespace internal {
struct StatefulMetricFaults;
}

// How a state combines across ranks. Gather concatenates every rank's rows (dim 0) in rank order.
enum class Reduction { Sum, Max, Min, Prod, Gather };
const char* to_string(Reduction reduction);

// Named state tensors as compute_from() sees them: synced copies (gather states are the rank-order
// concatenation of every rank's rows). Owned copies: changing them never touches the metric.
class StateValues {
 public:
  const at::Tensor& operator[](const std::string& name) const;  // throws std::out_of_range naming the state
  bool contains(const std::string& name) const { return values_.count(name) > 0; }
  void set(const std::string& name, at::Tensor value) { values_[name] = std::move(value); }
  void merge(const StateValues& other);

 private:
  std::map<std::string, at::Tensor> values_;
};

// The form save_state() gives: name -> tensor, pickled (torch::pickle_save). For metrics and tests
// that save or read states of their own.
std::string pack_states(const std::map<std::string, at::Tensor>& states);
std::map<std::string, at::Tensor> unpack_states(const std::string& saved);  // throws std::invalid_argument

// A declared state, as listed by StatefulMetric::states().
struct StateInfo {
  std::string name;
  Reduction reduction;
  at::ScalarType dtype;
  std::vector<std::int64_t> shape;  // for gather states: the row shape (without dim 0)
};

class StatefulMetric : public Metric {
 public:
  std::string name() const override { return name_; }
  void reset() override;
  void update(const Batch& batch) override;
  Value compute() override;

  void set_communicator(runtime::Communicator* comm) override { comm_ = comm; }
  runtime::Communicator* communicator() const { return comm_; }
  void to(c10::Device device) override;
  c10::Device device() const override { return device_; }

  // Hash (FNV-1a, hex) of every state's name, dtype, shape and bytes, local and unsynced.
  std::string state_digest() const override;

  // Every state's local value (a gather state: its rows) on the CPU, pickled as a dict of name to
  // tensor (torch.load reads it). load_state() checks names and dtypes (and a gather's row shape)
  // and names what differs; merge_state() combines each state with its reduction, as the sync does.
  std::optional<std::string> save_state() const override;
  void load_state(const std::string& saved) override;
  bool can_merge_state() const override { return true; }
  void merge_state(const std::vector<std::string>& others_saved) override;

  // Synced copies of every state. Collective: every rank must call it, in the same order of
  // compute() calls. Leaves local state untouched.
  StateValues sync() const;

  // The collectives one sync() issues, in order, as "op dtype" strings matching the
  // communicator's trace ("all_reduce(sum) int64", "all_gather(shapes) int64", "all_gather float64";
  // "all_gather uint8" when the gather states have several dtypes: it moves their bytes).
  // The communicator skips the gather of data when no rank holds any row.
  std::vector<std::string> sync_plan() const;

  std::vector<StateInfo> states() const;

 protected:
  explicit StatefulMetric(std::string name);

  // Declares a state. `initial` gives the dtype, the shape and the value reset() restores; for
  // a Gather state it is the empty [0, row...] tensor its rows are appended to. The state lives on
  // device(). Declare every state in the constructor, never lazily, so every rank holds the same
  // states whatever data it saw.
  void add_state(const std::string& name, const at::Tensor& initial, Reduction reduction);

  // The local value of a non-gather state, for update_state() to change in place or replace
  // (same dtype and shape, on device()).
  at::Tensor& state(const std::string& name);
  const at::Tensor& state(const std::string& name) const;
  // Appends rows ([n, row...], n may be 0) to a gather state (a copy: the caller's tensor may change later).
  void append(const std::string& name, const at::Tensor& rows);
  // The same for a tensor handed over (e.g. a fresh conversion): when nothing else holds it or its
  // storage it is kept as it is, without the copy.
  void append(const std::string& name, at::Tensor&& rows);
  // Appending without an allocation per batch: reserve_rows() hands out room for n rows of a
  // gather state ([n, row...], on device(), contiguous) in storage the state keeps across
  // reset() (its capacity grows by doubling and is reused by the next epoch); update_state()
  // writes the rows there, and commit_rows() appends them. Rows reserved and never committed
  // (a batch rejected after its rows were written) leave the state as it was.
  at::Tensor reserve_rows(const std::string& name, std::int64_t n);
  void commit_rows(const std::string& name, const at::Tensor& reserved);
  // The local rows of a gather state, concatenated.
  at::Tensor gathered_locally(const std::string& name) const;

  // Updates local state from a batch already on device(). Validate the whole batch before
  // changing any state, so a rejected batch leaves the metric as it was.
  virtual void update_state(const Batch& batch) = 0;
  // The result from synced states. Must not touch local state (it cannot: it is const).
  virtual Value compute_from(const StateValues& synced) const = 0;

  // Sync in phases: each phase's states are synced together, then check_phase() sees the synced
  // values so far and may throw (on every rank alike) before the next phase's collectives. Used
  // when a later state's shape is only valid once the ranks are known to agree on something
  // (RunningAverage: its per-step history needs the same number of steps everywhere).
  // Default: one phase holding every state.
  virtual std::vector<std::vector<std::string>> sync_phases() const;
  virtual void check_phase(std::size_t phase, const StateValues& synced_so_far) const {}

 private:
  // The test hooks (include_internal/, not installed): fault injection for the reduction scan.
  friend struct internal::StatefulMetricFaults;

  struct State {
    std::string name;
    Reduction reduction;
    at::Tensor initial;
    at::Tensor value;                // non-gather states
    std::vector<at::Tensor> chunks;  // gather states: rows appended by update_state()
    // Gather states: storage reserve_rows() hands out, kept across reset(): blocks[0..block]
    // are in use, `block` filled up to `filled` rows.
    std::vector<at::Tensor> blocks;
    std::size_t block = 0;
    std::int64_t filled = 0;
  };
  State& find(const std::string& name);
  const State& find(const std::string& name) const;
  StateValues sync_states(const std::vector<std::string>& names) const;

  std::string name_;
  c10::Device device_{c10::kCPU};
  runtime::Communicator* comm_ = nullptr;
  std::vector<State> states_;  // in declaration order
};

}  // namespace distmetrics::metrics
