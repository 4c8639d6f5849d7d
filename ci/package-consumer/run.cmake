# The package-consumer test (cmake -P): installs this build into a prefix under the build tree,
# configures and builds ci/package-consumer against it with find_package(distmetrics), runs it
# and checks what it prints. Everything it writes stays under WORK_DIR.
#   -D BUILD_DIR=... -D SOURCE_DIR=... -D WORK_DIR=... -D GENERATOR=... -D CXX_COMPILER=...
#   -D TORCH_DIR=... -D BUILD_TYPE=...
foreach(var BUILD_DIR SOURCE_DIR WORK_DIR GENERATOR CXX_COMPILER TORCH_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "package consumer: ${var} is not set")
  endif()
endforeach()

function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "package consumer: ${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")
step("installing the build into ${prefix}" "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${prefix}")
foreach(file include/distmetrics/runtime/rank_pool.h include/distmetrics/metrics/registry.h
             include/distmetrics/build_config.h)
  if(NOT EXISTS "${prefix}/${file}")
    message(FATAL_ERROR "package consumer: the install has no ${file}")
  endif()
endforeach()

step("configuring the consumer" "${CMAKE_COMMAND}" -S "${SOURCE_DIR}/ci/package-consumer" -B "${WORK_DIR}/build"
     -G "${GENERATOR}" "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}" "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}"
     "-DCMAKE_PREFIX_PATH=${prefix}" "-DTorch_DIR=${TORCH_DIR}")
string(REGEX MATCH "consumer: distmetrics [^\n]*" found "${step_output}")
message(STATUS "${found}")
step("building the consumer" "${CMAKE_COMMAND}" --build "${WORK_DIR}/build")
step("running the consumer" "${WORK_DIR}/build/consumer")
message(STATUS "${step_output}")
if(NOT step_output MATCHES "MeanAbsoluteError on one process = 2.25")
  message(FATAL_ERROR "package consumer: unexpected output:\n${step_output}")
endif()

# The user's multi-rank GoogleTest, when the install has the fixtures.
if(EXISTS "${WORK_DIR}/build/consumer_rank_tests")
  step("running the consumer's multi-rank tests" "${WORK_DIR}/build/consumer_rank_tests")
  if(NOT step_output MATCHES "Consumer.RanksAgreeOnTheirSum/gloo/ws2" OR NOT step_output MATCHES "PASSED  \\] 4 tests")
    message(FATAL_ERROR "package consumer: unexpected output of the rank tests:\n${step_output}")
  endif()
  # The same tests as ctest registered them (gtest_discover_tests): one per backend and size.
  step("running the consumer's tests with ctest" "${CMAKE_CTEST_COMMAND}" --test-dir "${WORK_DIR}/build")
  if(NOT step_output MATCHES "100% tests passed, 0 tests failed out of 4"
     OR NOT step_output MATCHES "Consumer.MeanSquaredErrorOnUnevenShards/gloo/ws2")
    message(FATAL_ERROR "package consumer: unexpected ctest output:\n${step_output}")
  endif()
  message(STATUS "consumer: the multi-rank GoogleTests passed on the installed fixtures")
elseif(EXISTS "${prefix}/include/distmetrics/fixtures/rank_test.h")
  message(FATAL_ERROR "package consumer: the fixtures are installed but consumer_rank_tests was not built")
endif()


# Another LibTorch than the one the install was built with (OTHER_TORCH_DIR: Debian's 1.13 beside
# a pip-torch build): the package refuses it, naming both, before anything is built.
if(DEFINED OTHER_TORCH_DIR AND EXISTS "${OTHER_TORCH_DIR}")
  execute_process(COMMAND "${CMAKE_COMMAND}" -S "${SOURCE_DIR}/ci/package-consumer" -B "${WORK_DIR}/build-other-torch"
                          -G "${GENERATOR}" "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}" "-DCMAKE_PREFIX_PATH=${prefix}"
                          "-DTorch_DIR=${OTHER_TORCH_DIR}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(REPLACE "\n" " " said "${out} ${err}")
  string(REGEX REPLACE " +" " " said "${said}")
  if(rc EQUAL 0 OR NOT said MATCHES "distmetrics was built against LibTorch [0-9.]+ \\([^)]*\\), but this project found LibTorch")
    message(FATAL_ERROR "package consumer: a consumer on another LibTorch (${OTHER_TORCH_DIR}) was not refused "
                        "(exit ${rc}):\n${out}\n${err}")
  endif()
  message(STATUS "consumer: another LibTorch (${OTHER_TORCH_DIR}) is refused with what to set")
endif()
