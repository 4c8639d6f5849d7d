# The blame module: who is blamed for a stopped run, by which rule, and the diagnosis that says so
# (distmetrics/runtime/blame.h). The rank pool, the peer runner and the harness all go through it.
list(APPEND DISTMETRICS_RUNTIME_SOURCES
  src/blame/rules.cpp
  src/blame/divergence.cpp
  src/blame/describe_divergence.cpp
  src/blame/hang.cpp
  src/blame/diagnose.cpp
  src/blame/evidence.cpp)
