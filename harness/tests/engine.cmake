# Tests of the scenario engine.
distmetrics_test(engine_unit_tests
  SOURCES engine_basics_test.cpp engine_check_test.cpp engine_scenario_test.cpp engine_tables_test.cpp
          scenario_fields_test.cpp
          engine_data_files_test.cpp engine_data_lazy_test.cpp judging_rules_test.cpp variant_plan_test.cpp
  LINK distmetrics::harness distmetrics::harness_internal
  LABELS engine)
target_compile_definitions(engine_unit_tests PRIVATE
  DISTMETRICS_TEST_SCENARIOS="${CMAKE_CURRENT_SOURCE_DIR}/scenarios"
  DISTMETRICS_DOCS_DIR="${PROJECT_SOURCE_DIR}/docs")

# End to end through the rank pool, with deliberately broken metrics registered in this binary
# (its own rank workers know them too).
distmetrics_test(engine_run_tests
  SOURCES engine_run_test.cpp engine_broken_metrics.cpp
  LINK distmetrics::harness
  TIMEOUT 240
  LABELS engine)
target_compile_definitions(engine_run_tests PRIVATE
  DISTMETRICS_TEST_SCENARIOS="${CMAKE_CURRENT_SOURCE_DIR}/scenarios")

# The scenario library through the GoogleTest scenario fixtures: one ctest entry per backend and
# world size (scenarios/gloo/ws2, ...), each one process with one reused rank pool.
add_executable(scenario_library_tests engine_library_test.cpp)
target_link_libraries(scenario_library_tests PRIVATE distmetrics::test_main distmetrics::fixtures GTest::gtest)
distmetrics_target_defaults(scenario_library_tests)
target_compile_definitions(scenario_library_tests PRIVATE DISTMETRICS_SCENARIO_DIR="${PROJECT_SOURCE_DIR}/scenarios")
set(_library_parts gloo:1 gloo:2 gloo:3 gloo:4 mpi:1 mpi:2 mpi:3 mpi:4 nccl:1 nccl:2)
foreach(_part ${_library_parts})
  string(REPLACE ":" ";" _pair "${_part}")
  list(GET _pair 0 _backend)
  list(GET _pair 1 _ws)
  if((_backend STREQUAL "mpi" AND NOT DISTMETRICS_HAVE_MPI) OR (_backend STREQUAL "nccl" AND NOT DISTMETRICS_HAVE_NCCL)
     OR (_backend STREQUAL "gloo" AND NOT DISTMETRICS_HAVE_GLOO))
    continue()
  endif()
  add_test(NAME scenarios/${_backend}/ws${_ws}
           COMMAND scenario_library_tests --gtest_filter=${_backend}_ws${_ws}/*)
  set_tests_properties(scenarios/${_backend}/ws${_ws} PROPERTIES TIMEOUT 900 LABELS "engine;scenarios")
endforeach()

# Large generated data (docs/scenarios.md, "Large data"): 2^25 + 1 samples made batch by batch.
# Outside the default library (scenarios/), which the per-backend entries above, the peer run and
# the equivalence check run several times over: here once, at world sizes 1 and 2 on gloo.
if(DISTMETRICS_HAVE_GLOO)
  add_test(NAME scenarios_large
           COMMAND distmetrics run "${PROJECT_SOURCE_DIR}/scenarios_large" --backend gloo --world-sizes 1,2)
  set_tests_properties(scenarios_large PROPERTIES TIMEOUT 600 LABELS "engine;scenarios")
endif()

# Golden values in the scenario library against an independent source: the data generators
# re-implemented in Python and the metrics from scikit-learn.
if(DISTMETRICS_PYTHON)
  add_test(NAME engine_golden_values
           COMMAND "${DISTMETRICS_PYTHON}" "${CMAKE_CURRENT_SOURCE_DIR}/golden_values.py" check
                   "${PROJECT_SOURCE_DIR}/scenarios/core/accuracy_multiclass.toml"
                   "${PROJECT_SOURCE_DIR}/scenarios/core/mean_squared_error.toml"
                   "${PROJECT_SOURCE_DIR}/scenarios/core/roc_auc.toml")
  set_tests_properties(engine_golden_values PROPERTIES TIMEOUT 120 LABELS engine)
endif()

# distmetrics run under mpirun and torchrun-style launchers.
add_test(NAME engine_launchers
         COMMAND bash "${CMAKE_CURRENT_SOURCE_DIR}/engine_launchers_test.sh" $<TARGET_FILE:distmetrics>
                 "${PROJECT_SOURCE_DIR}/scenarios" "${DISTMETRICS_PYTHON}")
set_tests_properties(engine_launchers PROPERTIES TIMEOUT 240 LABELS engine)

# The scenario parser under random and structure-aware mutations (bounded here; longer runs:
# tools/fuzz_scenarios.sh), after every kept crasher in scenarios/fuzz/.
add_executable(scenario_fuzz scenario_fuzz.cpp)
target_link_libraries(scenario_fuzz PRIVATE distmetrics::harness)
distmetrics_target_defaults(scenario_fuzz)
add_test(NAME engine_scenario_fuzz
         COMMAND scenario_fuzz --corpus "${PROJECT_SOURCE_DIR}/scenarios" --corpus "${CMAKE_CURRENT_SOURCE_DIR}/scenarios/bad"
                 --regressions "${CMAKE_CURRENT_SOURCE_DIR}/scenarios/fuzz" --seconds 20 --seed 12)
set_tests_properties(engine_scenario_fuzz PROPERTIES TIMEOUT 90 LABELS engine)

# The reduction scan: every reference metric's every state, reduced wrongly, fails some scenario
# of the library (test-only wrong metrics registered in this binary; its rank workers know them).
distmetrics_test(engine_reduction_scan_tests
  SOURCES engine_reduction_scan_test.cpp
  LINK distmetrics::harness distmetrics::metrics_internal
  TIMEOUT 300
  LABELS engine)
target_compile_definitions(engine_reduction_scan_tests PRIVATE
  DISTMETRICS_LIBRARY_SCENARIOS="${PROJECT_SOURCE_DIR}/scenarios")
