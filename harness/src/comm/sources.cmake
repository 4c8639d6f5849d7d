# Communicator sources; backends only where their libraries were found.
list(APPEND DISTMETRICS_RUNTIME_SOURCES
  src/comm/communicator.cpp
  src/comm/single_process.cpp)
