# Small helpers so each part's CMakeLists.txt says only what is particular to it.

set(DISTMETRICS_WARNINGS -Wall -Wextra -Wno-unused-parameter)

# The precompiled LibTorch headers are made twice per build, not once per target: once for
# libraries (-fPIC) and once for executables (-fPIE), each by a host target of its own that
# compiles nothing else. GCC takes a precompiled header only where -fpic/-fpie match, hence two.
# Every target reuses its kind's (REUSE_FROM): one precompiled header is ~25 s of CPU, and ~30
# targets made their own (a third of a cold build). CMake compiles with -Winvalid-pch: a target whose
# flags do not fit its kind's header warns (and compiles the headers in full).
function(_distmetrics_pch_host kind out_var)
  set(host distmetrics_pch_${kind})
  if(NOT TARGET ${host})
    set(source "${CMAKE_BINARY_DIR}/generated/pch_host.cpp")
    if(NOT EXISTS "${source}")
      file(WRITE "${source}" "// Compiles only the precompiled header (cmake/DistmetricsHelpers.cmake).\n")
    endif()
    add_library(${host} OBJECT "${source}")
    target_link_libraries(${host} PRIVATE ${DISTMETRICS_TORCH_LINK} distmetrics_dep_json)
    target_compile_options(${host} PRIVATE ${DISTMETRICS_WARNINGS})
    if(kind STREQUAL "executable")  # what CMake gives an executable under POSITION_INDEPENDENT_CODE
      set_target_properties(${host} PROPERTIES POSITION_INDEPENDENT_CODE OFF)
      target_compile_options(${host} PRIVATE -fPIE)
    endif()
    target_precompile_headers(${host} PRIVATE <ATen/ATen.h> <nlohmann/json.hpp>
                              <string> <vector> <memory> <map> <sstream>)
  endif()
  set(${out_var} ${host} PARENT_SCOPE)
endfunction()

# Unity builds of the libraries (CMake's UNITY_BUILD): their sources compiled a batch at a time,
# as one translation unit. Each source pays ~2.2 s of CPU to load the precompiled LibTorch header
# (415 MB on torch 2.x) before a line of its own, and a library's sources instantiate the same
# LibTorch and JSON templates: the runtime's 23 sources took 144 s of CPU one by one, 35 s as one
# unit. A source in a batch shares the batch's file-local names (anonymous namespaces, statics):
# two sources must not define the same one, or they keep theirs in a namespace of their own
# (DISTMETRICS_UNITY_ID, harness/src/unity_id.h: the descriptor files, each with its check() or
# make()), or the source is kept out of the batches with SKIP_UNITY_BUILD_INCLUSION, saying why.
# The test executables of distmetrics_test() are batched the same way. OFF compiles one source at
# a time (editing one file recompiles only it).
option(DISTMETRICS_UNITY_BUILD "Compile the libraries' sources in batches (unity build): a cold build in less CPU" ON)
set(DISTMETRICS_UNITY_BATCH_SIZE 8 CACHE STRING "Sources per unity batch (DISTMETRICS_UNITY_BUILD)")

# Compile options and precompiled LibTorch headers shared by every distmetrics target, and for
# a library, its unity batches. NO_PCH: an executable of a few light sources that is built without
# the tests (the command): making the executables' precompiled header (~29 s of CPU) costs more
# than its sources save with it (~18 s).
function(distmetrics_target_defaults target)
  cmake_parse_arguments(ARG "NO_PCH" "" "" ${ARGN})
  target_compile_options(${target} PRIVATE ${DISTMETRICS_WARNINGS})
  get_target_property(type ${target} TYPE)
  if(DISTMETRICS_UNITY_BUILD AND type MATCHES "^(SHARED|STATIC)_LIBRARY$")
    # UNITY_BUILD_UNIQUE_ID: a name per source, for the descriptor files' own names (harness/src/unity_id.h).
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${DISTMETRICS_UNITY_BATCH_SIZE}
                                               UNITY_BUILD_UNIQUE_ID DISTMETRICS_UNITY_ID)
    # GCC takes a batch's later sources for headers, and warns of a class there with a member of
    # an anonymous-namespace type (RankPool::Impl), which is right in a source of its own.
    target_compile_options(${target} PRIVATE $<$<CXX_COMPILER_ID:GNU>:-Wno-subobject-linkage>)
  endif()
  if(DISTMETRICS_USE_PCH AND NOT ARG_NO_PCH)
    if(type STREQUAL "EXECUTABLE")
      _distmetrics_pch_host(executable host)
    else()
      _distmetrics_pch_host(library host)
    endif()
    target_precompile_headers(${target} REUSE_FROM ${host})
  endif()
endfunction()

# distmetrics_library(<target> EXPORT_NAME <name> INCLUDE_DIR <dir> SOURCES ...
#                     [PUBLIC_LINK ...] [PRIVATE_LINK ...])
# A shared library (shared, so that plugins loaded with dlopen see one copy of the registries),
# aliased and exported as distmetrics::<name>.
function(distmetrics_library target)
  cmake_parse_arguments(ARG "" "EXPORT_NAME;INCLUDE_DIR" "SOURCES;PUBLIC_LINK;PRIVATE_LINK" ${ARGN})
  add_library(${target} SHARED ${ARG_SOURCES})
  add_library(distmetrics::${ARG_EXPORT_NAME} ALIAS ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${ARG_EXPORT_NAME}
                        OUTPUT_NAME distmetrics_${ARG_EXPORT_NAME}
                        VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR})
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${ARG_INCLUDE_DIR}>
    $<BUILD_INTERFACE:${CMAKE_BINARY_DIR}/generated/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  distmetrics_link_json(${target})
  target_link_libraries(${target} PUBLIC ${DISTMETRICS_TORCH_LINK} ${ARG_PUBLIC_LINK} PRIVATE ${ARG_PRIVATE_LINK})
  distmetrics_target_defaults(${target})
  set_property(GLOBAL APPEND PROPERTY DISTMETRICS_INSTALL_TARGETS ${target})
  install(DIRECTORY "${ARG_INCLUDE_DIR}/" DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endfunction()

# nlohmann/json is part of the public headers. An installed consumer finds it where we did, or,
# when we took it from a folder inside the source or build tree (DISTMETRICS_DEPS_DIR on a GPU
# node), in our own include folder, where it is installed alongside our headers.
function(distmetrics_link_json target)
  get_target_property(_json_dir distmetrics_dep_json INTERFACE_INCLUDE_DIRECTORIES)
  target_link_libraries(${target} PUBLIC $<BUILD_INTERFACE:distmetrics_dep_json>)
  string(FIND "${_json_dir}/" "${CMAKE_SOURCE_DIR}/" _in_source)
  string(FIND "${_json_dir}/" "${CMAKE_BINARY_DIR}/" _in_build)
  if(_in_source EQUAL 0 OR _in_build EQUAL 0)
    install(DIRECTORY "${_json_dir}/nlohmann" DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  else()
    target_include_directories(${target} SYSTEM PUBLIC $<INSTALL_INTERFACE:${_json_dir}>)
  endif()
endfunction()

# distmetrics_test(<target> SOURCES ... [LINK ...] [TIMEOUT seconds] [LABELS ...])
# A GoogleTest executable on the rank-aware test main (so it can serve as its own rank workers),
# each test registered with CTest.
function(distmetrics_test target)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;LINK;LABELS" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  add_executable(${target} ${ARG_SOURCES})
  # The whole LibTorch, its CUDA side included (the libraries link its CPU side only:
  # DISTMETRICS_TORCH_LINK): a test on CUDA tensors finds CUDA loaded, as in any LibTorch program.
  target_link_libraries(${target} PRIVATE distmetrics::test_main GTest::gtest ${ARG_LINK} ${TORCH_LIBRARIES})
  # Its rank workers' gloo loops as the command's: the loop shim (runtime/src/comm/gloo_loop_shim.h).
  target_link_libraries(${target} PRIVATE distmetrics_gloo_loop_shim)
  distmetrics_target_defaults(${target})
  # Its sources a batch at a time too (DISTMETRICS_UNITY_BUILD): each test source pays the
  # precompiled header's load and GoogleTest's and LibTorch's templates again, about 40% of a
  # cold build's CPU when compiled one by one (docs/performance.md, stop 60).
  if(DISTMETRICS_UNITY_BUILD)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${DISTMETRICS_UNITY_BATCH_SIZE}
                                               UNITY_BUILD_UNIQUE_ID DISTMETRICS_UNITY_ID)
    target_compile_options(${target} PRIVATE $<$<CXX_COMPILER_ID:GNU>:-Wno-subobject-linkage>)
  endif()
  gtest_discover_tests(${target} DISCOVERY_TIMEOUT 120 DISCOVERY_MODE PRE_TEST
    PROPERTIES TIMEOUT ${ARG_TIMEOUT} LABELS "${ARG_LABELS}")
endfunction()
