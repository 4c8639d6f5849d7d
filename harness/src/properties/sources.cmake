# The properties: one file per descriptor, the table that lists them (table.cpp) and what their
# checkers share. Globbed, so that a new property is its file, its line in table.cpp and its row
# of docs/properties.md, and no line here.
file(GLOB _distmetrics_property_sources CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/src/properties/*.cpp")
list(APPEND DISTMETRICS_HARNESS_SOURCES ${_distmetrics_property_sources})
# Not in unity batches (cmake/DistmetricsHelpers.cmake): each property's file defines its own
# check(), kName and probe() in an anonymous namespace, as a new one will.
set_source_files_properties(${_distmetrics_property_sources} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
