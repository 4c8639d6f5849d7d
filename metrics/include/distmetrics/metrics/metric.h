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

#include <string>

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
};

}  // namespace distmetrics::metrics
