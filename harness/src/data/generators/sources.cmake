# The data generators (harness/data.h): one file per descriptor, the table that lists them
# (table.cpp) and what they share (making.cpp). Globbed, so that a new generator is its file, its
# line in table.cpp and its row of docs/scenarios.md, and no line here.
file(GLOB _distmetrics_generator_sources CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/src/data/generators/*.cpp")
list(APPEND DISTMETRICS_HARNESS_SOURCES ${_distmetrics_generator_sources})
# In unity batches: each file keeps its own names in namespace DISTMETRICS_UNITY_ID (src/unity_id.h).
