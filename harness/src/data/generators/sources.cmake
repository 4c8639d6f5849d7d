# The data generators (harness/data.h): one file per descriptor, the table that lists them
# (table.cpp) and what they share (making.cpp). Globbed, so that a new generator is its file, its
# line in table.cpp and its row of docs/scenarios.md, and no line here.
file(GLOB _distmetrics_generator_sources CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/src/data/generators/*.cpp")
list(APPEND DISTMETRICS_HARNESS_SOURCES ${_distmetrics_generator_sources})
# Not in unity batches (cmake/DistmetricsHelpers.cmake): each generator's file defines its own
# make() and elements() in an anonymous namespace, as a new one will.
set_source_files_properties(${_distmetrics_generator_sources} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
