# The rank pool (hangs, crashes, errors, clean-up) and the launch modes.
distmetrics_test(launch_tests
  SOURCES launch_rank_pool_test.cpp
  LINK distmetrics::runtime
  LABELS runtime)
