# The rank pool (hangs, crashes, errors, clean-up) and the peer launch modes.
distmetrics_test(launch_tests
  SOURCES launch_rank_pool_test.cpp launch_diagnosis_test.cpp launch_pool_store_test.cpp launch_zygote_test.cpp
  LINK distmetrics::runtime
  LABELS runtime)

# A program whose libraries carry a large static TLS (a CUDA torch 2.x rank: ~330 KiB): its ranks'
# progress flusher must still get a stack.
add_library(launch_static_tls_block SHARED launch_static_tls_block.cpp)
target_compile_options(launch_static_tls_block PRIVATE ${DISTMETRICS_WARNINGS})
distmetrics_test(launch_static_tls_tests
  SOURCES launch_static_tls_test.cpp
  LINK distmetrics::runtime launch_static_tls_block
  LABELS runtime)

# A program started by mpirun or with torchrun-style variables, for the peer-mode tests.
add_executable(launch_peer_probe launch_peer_probe.cpp)
target_link_libraries(launch_peer_probe PRIVATE distmetrics::runtime)
distmetrics_target_defaults(launch_peer_probe)

distmetrics_test(launch_peer_tests
  SOURCES launch_peer_runner_test.cpp
  LINK distmetrics::runtime
  LABELS runtime)
target_compile_definitions(launch_peer_tests PRIVATE DISTMETRICS_PEER_PROBE="$<TARGET_FILE:launch_peer_probe>")
add_dependencies(launch_peer_tests launch_peer_probe)

# The launcher table; the peer launcher's parts: its environment, its store and check-in, the MPI agent's rank side,
# the gloo task's kept child, when rank 0 stops waiting (fixed inputs) and the held SIGTERM.
distmetrics_test(launch_peer_parts_tests
  SOURCES launch_peer_env_test.cpp launch_peer_store_test.cpp launch_peer_task_test.cpp launch_mpi_agent_test.cpp
          launch_peer_gather_test.cpp launch_launchers_test.cpp
  LINK distmetrics::runtime
  LABELS runtime)
# The launcher test reads docs/runtime.md and scans the sources for a launcher's name.
target_compile_definitions(launch_peer_parts_tests PRIVATE DISTMETRICS_SOURCE_DIR="${PROJECT_SOURCE_DIR}")

# Strangers, private rendezvous, process hygiene (issue 12).
distmetrics_test(launch_security_tests
  SOURCES launch_security_test.cpp
  LINK distmetrics::runtime
  TIMEOUT 120
  LABELS runtime)
target_compile_definitions(launch_security_tests PRIVATE
  DISTMETRICS_TEST_PYTHON="${DISTMETRICS_PYTHON}"
  DISTMETRICS_IMPOSTOR_SCRIPT="${CMAKE_CURRENT_SOURCE_DIR}/launch_impostor.py")

# Fault injection on the local pool (gloo and mpi): every fault of launch_faults.h (issue 12).
distmetrics_test(launch_fault_tests
  SOURCES launch_faults_test.cpp launch_child_call_test.cpp
  LINK distmetrics::runtime
  TIMEOUT 300
  LABELS runtime)

# Ranks on several hosts: network namespaces of ci/hosts.sh, the env launcher across them, faults
# across hosts (the fault table of docs/multi-host.md), the store's address and secret. Skipped
# (exit 77, with the reason) where network namespaces cannot be made.
add_test(NAME launch_multihost
         COMMAND "${DISTMETRICS_PYTHON}" "${CMAKE_CURRENT_SOURCE_DIR}/launch_multihost_test.py"
                 "${PROJECT_SOURCE_DIR}/ci/hosts.sh" $<TARGET_FILE:launch_peer_probe> $<TARGET_FILE:distmetrics>
                 "${PROJECT_SOURCE_DIR}/scenarios" "${MPIEXEC_EXECUTABLE}")
# 140-270 s a run on the 2-core machine loaded by builds and busy loops (docs/multi-host.md).
set_tests_properties(launch_multihost PROPERTIES TIMEOUT 900 LABELS "runtime;multihost" SKIP_RETURN_CODE 77
                     RUN_SERIAL TRUE)
