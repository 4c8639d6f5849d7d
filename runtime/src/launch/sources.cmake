# Tasks, the rank pool, workers and launch modes.
list(APPEND DISTMETRICS_RUNTIME_SOURCES
  src/launch/task_registry.cpp
  src/launch/protocol.cpp
  src/launch/process.cpp
  src/launch/process_ending.cpp
  src/launch/wire.cpp
  src/launch/pool_store.cpp
  src/launch/pool_store_host.cpp
  src/launch/worker_args.cpp
  src/launch/phases.cpp
  src/launch/task_runner.cpp
  src/launch/worker.cpp
  src/launch/worker_abort.cpp
  src/launch/dying_report.cpp
  src/launch/thread_pools.cpp
  src/launch/zygote.cpp
  src/launch/rank_pool.cpp
  src/launch/pool_supervision.cpp
  src/launch/pool_recovery.cpp
  src/launch/peer_env.cpp
  src/launch/peer_store.cpp
  src/launch/peer_gather.cpp
  src/launch/peer_teardown.cpp
  src/launch/peer_task.cpp
  src/launch/mpi_agent.cpp
  src/launch/peer_runner.cpp
  src/launch/child_call.cpp)
