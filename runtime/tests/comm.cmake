# The communicator: the base on one process, and every collective on every CPU backend built at
# world sizes 1 to 4 (multi-rank GoogleTest bodies, run on rank pools of this binary).
distmetrics_test(comm_tests
  SOURCES comm_single_process_test.cpp comm_collectives_test.cpp
  LINK distmetrics::runtime
  LABELS runtime)
