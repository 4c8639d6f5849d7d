# The properties: one file per descriptor, the table that lists them (table.cpp) and what their
# checkers share. Globbed, so that a new property is its file, its line in table.cpp and its row
# of docs/properties.md, and no line here.
file(GLOB _distmetrics_property_sources CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/src/properties/*.cpp")
list(APPEND DISTMETRICS_HARNESS_SOURCES ${_distmetrics_property_sources})
# In unity batches: each file keeps its own names in namespace DISTMETRICS_UNITY_ID (src/unity_id.h).
