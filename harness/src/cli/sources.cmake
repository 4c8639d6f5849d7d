# The distmetrics command-line tool: the commands live in the harness library (so tests can run
# them in-process), the executable is main() only.
target_sources(distmetrics_harness PRIVATE src/cli/cli.cpp)
target_link_libraries(distmetrics_harness PRIVATE distmetrics_dep_cli11)
target_compile_definitions(distmetrics_harness PRIVATE
  DISTMETRICS_INSTALLED_SCENARIOS="${CMAKE_INSTALL_FULL_DATADIR}/distmetrics/scenarios")

add_executable(distmetrics src/cli/main.cpp)
target_link_libraries(distmetrics PRIVATE distmetrics::harness distmetrics_plugin_host)  # plugin/: `conform`
distmetrics_target_defaults(distmetrics)
install(TARGETS distmetrics RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY "${PROJECT_SOURCE_DIR}/scenarios/" DESTINATION "${CMAKE_INSTALL_DATADIR}/distmetrics/scenarios"
        FILES_MATCHING PATTERN "*.toml")
