distmetrics_test(comm_tests
  SOURCES comm_single_process_test.cpp
  LINK distmetrics::runtime
  LABELS runtime)
