# `distmetrics explore`'s engine-side parts (harness/explore.h, docs/explore.md).
list(APPEND DISTMETRICS_HARNESS_SOURCES
  src/explore/scenario_toml.cpp
  src/explore/space.cpp
  src/explore/shrink.cpp
  src/explore/cases.cpp
  src/explore/explorer.cpp)
