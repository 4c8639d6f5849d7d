# The reference metric library: the base, one source per metric family, the registry.
list(APPEND DISTMETRICS_METRICS_SOURCES
  src/stateful_metric.cpp
  src/input_checks.cpp
  src/classification_inputs.cpp
  src/classification.cpp
  src/registry.cpp
  src/reference_metrics.cpp
  src/reference_classification.cpp)
