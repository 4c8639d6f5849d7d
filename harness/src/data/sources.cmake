# Scenario data: generated (the generator table, src/data/generators/), a team's .pt/.npz files,
# input dtypes.
list(APPEND DISTMETRICS_HARNESS_SOURCES
  src/data/data.cpp
  src/data/data_files.cpp
  src/data/input_dtype.cpp)
# NumPy's savez_compressed files are deflated: read with zlib where it is found.
find_package(ZLIB QUIET)
if(ZLIB_FOUND)
  list(APPEND DISTMETRICS_HARNESS_PRIVATE_LINK ZLIB::ZLIB)
  set_source_files_properties(src/data/data_files.cpp PROPERTIES COMPILE_DEFINITIONS DISTMETRICS_HAVE_ZLIB=1)
endif()
include(src/data/generators/sources.cmake)
