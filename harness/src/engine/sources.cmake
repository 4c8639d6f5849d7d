# The scenario engine (scenario files, data, shards, placements, checks, reports).
list(APPEND DISTMETRICS_HARNESS_SOURCES
  src/engine/data.cpp
  src/engine/data_files.cpp
  src/engine/scenario_python.cpp
  src/engine/shard.cpp
  src/engine/placement.cpp
  src/engine/script.cpp
  src/engine/metric_catalog.cpp
  src/engine/scenario_reader.cpp
  src/engine/scenario_validation.cpp
  src/engine/scenario.cpp
  src/engine/scenario_files.cpp
  src/engine/compare.cpp
  src/engine/observation.cpp
  src/engine/check.cpp
  src/engine/root_cause.cpp
  src/engine/variant.cpp
  src/engine/input_dtype.cpp
  src/engine/verdict.cpp
  src/engine/report.cpp
  src/engine/reference.cpp
  src/engine/scenario_task.cpp
  src/engine/engine.cpp
  src/engine/session.cpp)
# NumPy's savez_compressed files are deflated: read with zlib where it is found.
find_package(ZLIB QUIET)
if(ZLIB_FOUND)
  list(APPEND DISTMETRICS_HARNESS_PRIVATE_LINK ZLIB::ZLIB)
  set_source_files_properties(src/engine/data_files.cpp PROPERTIES COMPILE_DEFINITIONS DISTMETRICS_HAVE_ZLIB=1)
endif()
# toml++ (header-only) is used only inside the engine's sources.
list(APPEND DISTMETRICS_HARNESS_PRIVATE_LINK distmetrics_dep_toml)
# Where an installed distmetrics finds its scenario library when no path is given: relative to
# the installed executable (normally ../share/distmetrics/scenarios), found at run time from
# /proc/self/exe, so an installed tree keeps working when its prefix is moved.
file(RELATIVE_PATH _distmetrics_scenarios_from_bin "${CMAKE_INSTALL_FULL_BINDIR}"
     "${CMAKE_INSTALL_FULL_DATADIR}/distmetrics/scenarios")
set_source_files_properties(src/engine/scenario_files.cpp PROPERTIES COMPILE_DEFINITIONS
  DISTMETRICS_SCENARIOS_FROM_BINDIR="${_distmetrics_scenarios_from_bin}")
# Not in a unity batch (cmake/DistmetricsHelpers.cmake): it defines a file-local seconds_text()
# beside engine.cpp's (and report/junit.cpp's).
set_source_files_properties(src/engine/report.cpp PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
