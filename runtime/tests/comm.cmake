# The communicator: the base on one process, and every collective on every CPU backend built at
# world sizes 1 to 4 (multi-rank GoogleTest bodies, run on rank pools of this binary).
distmetrics_test(comm_tests
  SOURCES comm_single_process_test.cpp comm_collectives_test.cpp comm_phases_test.cpp
          $<$<BOOL:${DISTMETRICS_HAVE_GLOO}>:$<$<NOT:$<BOOL:${DISTMETRICS_GLOO_THROUGH_PYTHON}>>:comm_gloo_test.cpp>>
  LINK distmetrics::runtime
  LABELS runtime)
target_compile_definitions(comm_tests PRIVATE DISTMETRICS_GLOO_INLINE=$<BOOL:${DISTMETRICS_GLOO_INLINE}>)

# LibTorch's CUDA side loaded on demand, and the nccl module: a program that links the runtime and
# no more of LibTorch (its CPU side), as the distmetrics command does; not a distmetrics_test(),
# which links the whole LibTorch.
add_executable(comm_cuda_side_tests comm_cuda_side_test.cpp)
target_link_libraries(comm_cuda_side_tests PRIVATE distmetrics::runtime GTest::gtest)
target_compile_definitions(comm_cuda_side_tests PRIVATE DISTMETRICS_TEST_TORCH_CUDA_LIBRARY="${DISTMETRICS_TORCH_CUDA_LIBRARY}")
distmetrics_target_defaults(comm_cuda_side_tests)
gtest_discover_tests(comm_cuda_side_tests DISCOVERY_TIMEOUT 120 DISCOVERY_MODE PRE_TEST PROPERTIES TIMEOUT 120 LABELS runtime)
