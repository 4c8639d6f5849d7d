# Tests of the scenario engine.
distmetrics_test(engine_unit_tests
  SOURCES engine_basics_test.cpp engine_check_test.cpp engine_scenario_test.cpp
  LINK distmetrics::harness
  LABELS engine)
target_compile_definitions(engine_unit_tests PRIVATE
  DISTMETRICS_TEST_SCENARIOS="${CMAKE_CURRENT_SOURCE_DIR}/scenarios")
