// Metric: the interface every metric implements, the reference ones and third-party plugins
// alike. The harness judges behaviour through this interface only.
//
// Contract (docs/design.md, Metric):
// - update() is local: it never communicates.
// - compute() syncs *copies* of the state through the communicator and leaves the local state
//   untouched: compute(); compute(); agree, and update/compute/update/compute counts every
//   sample once.
// - when nothing can be computed ("no samples anywhere") every rank raises the same error,
//   decided from synced counts; a rank with no data never raises alone.
#pragma once

#include <c10/core/Device.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "distmetrics/metrics/batch.h"
#include "distmetrics/metrics/value.h"

namespace distmetrics::runtime {
class Communicator;
}

namespace distmetrics::metrics {

class Metric {
 public:
  virtual ~Metric() = default;

  virtual std::string name() const = 0;
  virtual void reset() = 0;
  virtual void update(const Batch& batch) = 0;
  virtual Value compute() = 0;

  // The communicator compute() syncs through; nullptr (the default) means single process.
  // Not owned: the harness builds a fresh one per variant and outlives the metric's use of it.
  virtual void set_communicator(runtime::Communicator* comm) = 0;

  // Where the metric keeps its state. Inputs on another device are moved to it.
  virtual void to(c10::Device device) = 0;
  virtual c10::Device device() const = 0;

  // A digest of the local (unsynced) state, equal iff the state is equal; used to check that
  // compute() leaves local state untouched. Empty when an implementation cannot tell.
  virtual std::string state_digest() const { return {}; }

  // Optional, for the state_roundtrip and merge_state properties (docs/properties.md): the
  // local (unsynced) state as bytes, which load_state() of a fresh instance of the same metric
  // with the same parameters restores. nullopt (the default): this metric cannot save its state,
  // and those properties are skipped with that reason. Local: never communicates.
  virtual std::optional<std::string> save_state() const { return std::nullopt; }
  // Replaces the local state with one that save_state() gave. The default throws
  // std::logic_error (only called on metrics whose save_state() gave bytes).
  virtual void load_state(const std::string& saved) {
    (void)saved;
    throw std::logic_error(name() + ": load_state: this metric cannot load a saved state");
  }
  // Optional (torcheval's merge_state): whether merge_state() works (false by default), and
  // merge_state(): combines the local states that other instances saved into this one's, as
  // compute()'s sync would combine them across ranks. The default throws std::logic_error.
  virtual bool can_merge_state() const { return false; }
  virtual void merge_state(const std::vector<std::string>& others_saved) {
    (void)others_saved;
    throw std::logic_error(name() + ": merge_state: this metric cannot merge saved states");
  }
};

}  // namespace distmetrics::metrics
