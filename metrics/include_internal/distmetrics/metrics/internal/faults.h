// Test hooks of the metrics layer: not installed, reached only through the target
// distmetrics::metrics_internal, which the tests that need them link (GoogleTest's split of
// public and internal headers). A user's build sees none of this.
#pragma once

#include <string>

#include "distmetrics/metrics/stateful_metric.h"

namespace distmetrics::metrics::internal {

struct StatefulMetricFaults {
  // For the tests that prove a scenario catches a wrong reduction (the scan of
  // harness/tests/engine_reduction_scan_test.cpp): from now on `state` is synced with `wrong`
  // instead of its declared reduction. Neither may be Gather (a gather has no same-shaped
  // alternative). Throws std::logic_error naming the metric and the state otherwise.
  static void inject_wrong_reduction(StatefulMetric& metric, const std::string& state, Reduction wrong);
};

}  // namespace distmetrics::metrics::internal
