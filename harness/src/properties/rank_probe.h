// A property's rank-side probe (property.h, Property::probe): what every rank does for it beside
// the script, told each step the metric takes. The scenario task (variants/scenario_task.cpp)
// creates one per property the scenario checks that has a probe, in table order, and calls them
// in that order on every rank alike, so that the collectives a probe issues pair up.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "distmetrics/harness/observation.h"
#include "distmetrics/harness/property.h"
#include "distmetrics/metrics/metric.h"
#include "distmetrics/runtime/comm.h"
#include "distmetrics/runtime/task.h"

namespace distmetrics::harness {

struct ProbeSetup {
  metrics::Metric& metric;  // the rank's metric, with its communicator set
  runtime::Communicator& comm;
  std::function<std::unique_ptr<metrics::Metric>()> make;  // a fresh instance, as the rank's was built
};

class RankProbe {
 public:
  virtual ~RankProbe() = default;
  // `where` is the script step ("script step 3 ('compute'): "): what a crash report names,
  // with the method the probe calls (runtime::set_task_context).
  // Before every compute of the original.
  virtual void before_compute(const std::string& where) {}
  // After the original took a batch (an empty one included, when it took it) or a reset.
  virtual void updated(const metrics::Batch& batch) {}
  virtual void reset() {}
  // After compute() number k of the original (in script step `step`), where it gave a value: the
  // probe's own result there, if any.
  virtual std::optional<ComputeResult> after_compute(int step, int k, const std::string& where) { return std::nullopt; }
  // Why the probe has nothing to judge on this rank (the metric cannot save its state), and an
  // error that fails the property outright; empty when none.
  std::string skipped, error;
};

// compute() as a result: the value, or the error it raised (a collective's error and an
// allocation failure are rethrown: the runtime records where the rank was blocked, its outcome
// says it ran out of memory).
ComputeResult computed_result(metrics::Metric& metric, int step);

}  // namespace distmetrics::harness
