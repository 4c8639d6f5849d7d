# How a variant's data and ranks are laid out: the shard policies and the placements.
list(APPEND DISTMETRICS_HARNESS_SOURCES
  src/sharding/shard.cpp
  src/sharding/placement.cpp)
