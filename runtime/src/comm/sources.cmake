# Communicator sources; backends only where their libraries were found.
list(APPEND DISTMETRICS_RUNTIME_SOURCES
  src/comm/communicator.cpp
  src/comm/single_process.cpp
  src/comm/backends.cpp)
if(DISTMETRICS_HAVE_GLOO)
  list(APPEND DISTMETRICS_RUNTIME_SOURCES src/comm/gloo.cpp)
  # gloo.cpp registers a descriptor on gloo's tcp transport directly: Debian's LibTorch links a
  # shared libgloo, other LibTorch builds carry gloo inside libtorch_cpu.
  find_library(DISTMETRICS_GLOO_LIBRARY gloo)
  if(DISTMETRICS_GLOO_LIBRARY)
    list(APPEND DISTMETRICS_RUNTIME_PRIVATE_LINK "${DISTMETRICS_GLOO_LIBRARY}")
  endif()
endif()
if(DISTMETRICS_HAVE_MPI)
  list(APPEND DISTMETRICS_RUNTIME_SOURCES src/comm/mpi.cpp)
  list(APPEND DISTMETRICS_RUNTIME_PRIVATE_LINK MPI::MPI_CXX)
endif()
if(DISTMETRICS_HAVE_NCCL)
  list(APPEND DISTMETRICS_RUNTIME_SOURCES src/comm/nccl.cpp)
  # c10d's NCCL headers include <nccl.h>, and their inline helpers call into libnccl.
  set_source_files_properties(src/comm/nccl.cpp PROPERTIES INCLUDE_DIRECTORIES "${DISTMETRICS_NCCL_INCLUDE_DIR}")
  if(DISTMETRICS_NCCL_LIBRARY)
    list(APPEND DISTMETRICS_RUNTIME_PRIVATE_LINK "${DISTMETRICS_NCCL_LIBRARY}")
  endif()
endif()
