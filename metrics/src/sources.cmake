# The reference metric library: the base, one source per metric family, the registry.
list(APPEND DISTMETRICS_METRICS_SOURCES
  src/stateful_metric.cpp
  src/input_checks.cpp
  src/classification_inputs.cpp
  src/classification.cpp
  src/confusion_matrix.cpp
  src/regression.cpp
  src/aggregation.cpp
  src/epoch.cpp
  src/image.cpp
  src/composite.cpp
  src/registry.cpp
  src/reference_metrics.cpp)
# Not in a unity batch: the public headers it implements, aggregation.h, names a metric class
# metrics::Average, and classification.h an enum metrics::Average (one translation unit cannot
# include both).
set_source_files_properties(src/aggregation.cpp PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
