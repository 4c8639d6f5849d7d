# Tests of the scenario engine.
distmetrics_test(engine_unit_tests
  SOURCES engine_basics_test.cpp engine_check_test.cpp engine_scenario_test.cpp
  LINK distmetrics::harness
  LABELS engine)
target_compile_definitions(engine_unit_tests PRIVATE
  DISTMETRICS_TEST_SCENARIOS="${CMAKE_CURRENT_SOURCE_DIR}/scenarios")

# End to end through the rank pool, with deliberately broken metrics registered in this binary
# (its own rank workers know them too).
distmetrics_test(engine_run_tests
  SOURCES engine_run_test.cpp engine_broken_metrics.cpp
  LINK distmetrics::harness
  TIMEOUT 240
  LABELS engine)
target_compile_definitions(engine_run_tests PRIVATE
  DISTMETRICS_TEST_SCENARIOS="${CMAKE_CURRENT_SOURCE_DIR}/scenarios")
