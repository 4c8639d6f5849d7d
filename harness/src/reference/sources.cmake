# The single-process reference a variant is judged against.
list(APPEND DISTMETRICS_HARNESS_SOURCES
  src/reference/reference.cpp)
