# Scenario files: the TOML reader, the loader, what values mean, discovery, the script, the hooks
# through which a higher layer calls the Python a scenario names.
list(APPEND DISTMETRICS_HARNESS_SOURCES
  src/scenario/scenario_fields.cpp
  src/scenario/scenario_reader.cpp
  src/scenario/scenario_validation.cpp
  src/scenario/scenario.cpp
  src/scenario/scenario_files.cpp
  src/scenario/scenario_python.cpp
  src/scenario/script.cpp)
# toml++ (header-only) is used only inside the harness's sources.
list(APPEND DISTMETRICS_HARNESS_PRIVATE_LINK distmetrics_dep_toml)
# Where an installed distmetrics finds its scenario library when no path is given: relative to
# the installed executable (normally ../share/distmetrics/scenarios), found at run time from
# /proc/self/exe, so an installed tree keeps working when its prefix is moved.
file(RELATIVE_PATH _distmetrics_scenarios_from_bin "${CMAKE_INSTALL_FULL_BINDIR}"
     "${CMAKE_INSTALL_FULL_DATADIR}/distmetrics/scenarios")
set_source_files_properties(src/scenario/scenario_files.cpp PROPERTIES COMPILE_DEFINITIONS
  DISTMETRICS_SCENARIOS_FROM_BINDIR="${_distmetrics_scenarios_from_bin}")
