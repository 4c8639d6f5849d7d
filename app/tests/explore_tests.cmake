# `distmetrics explore` (docs/explore.md): the scenario TOML writer and the generator against the
# loader, in-process; and a seeded search that finds and shrinks the bug of a broken example
# plugin, whose shrunk scenario validates and reproduces with `distmetrics conform`.
distmetrics_add_plugin(explore_sum_for_max "${PROJECT_SOURCE_DIR}/examples/plugins/broken/sum_for_max.cpp")
distmetrics_test(explore_unit_tests
  SOURCES explore_test.cpp
  LINK distmetrics_app
  TIMEOUT 120
  LABELS "app;explore")
target_compile_definitions(explore_unit_tests PRIVATE DISTMETRICS_SCENARIO_ROOT="${PROJECT_SOURCE_DIR}/scenarios")
add_test(NAME explore_cli
         COMMAND bash "${CMAKE_CURRENT_SOURCE_DIR}/explore_cli_test.sh" $<TARGET_FILE:distmetrics>
                 $<TARGET_FILE:explore_sum_for_max> $<TARGET_FILE:example_regression_metrics>)
set_tests_properties(explore_cli PROPERTIES TIMEOUT 400 LABELS "app;explore")

# The other example plugins, for ci/bench_explore.sh only (not built by default).
foreach(_example no_sync overwrite_state raises_alone state_not_saved)
  distmetrics_add_plugin(explore_${_example} "${PROJECT_SOURCE_DIR}/examples/plugins/broken/${_example}.cpp")
  set_target_properties(explore_${_example} PROPERTIES EXCLUDE_FROM_ALL TRUE)
endforeach()
