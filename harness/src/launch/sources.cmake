# Tasks, the rank pool, workers and launch modes.
list(APPEND DISTMETRICS_RUNTIME_SOURCES
  src/launch/task_registry.cpp)
