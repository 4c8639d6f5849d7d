# Communicator sources; backends only where their libraries were found.
list(APPEND DISTMETRICS_RUNTIME_SOURCES
  src/comm/communicator.cpp
  src/comm/single_process.cpp
  src/comm/backends.cpp)
if(DISTMETRICS_GLOO_THROUGH_PYTHON)
  # A pip torch (no gloo headers): torch's ProcessGroupGloo through its Python binding, with the
  # wheel's pybind11, libtorch_python and the embedded interpreter (docs/gpu.md).
  # Python's flags on this one file only (the rest of the runtime is compiled as on any build).
  list(APPEND DISTMETRICS_RUNTIME_SOURCES src/comm/gloo_through_python.cpp)
  get_target_property(_py_includes distmetrics_dep_python INTERFACE_INCLUDE_DIRECTORIES)
  get_target_property(_py_defines distmetrics_dep_python INTERFACE_COMPILE_DEFINITIONS)
  get_target_property(_py_libraries distmetrics_dep_python INTERFACE_LINK_LIBRARIES)
  set_source_files_properties(src/comm/gloo_through_python.cpp PROPERTIES
    INCLUDE_DIRECTORIES "${_py_includes}" COMPILE_DEFINITIONS "${_py_defines}"
    SKIP_PRECOMPILE_HEADERS ON)  # Python.h comes first
  list(APPEND DISTMETRICS_RUNTIME_PRIVATE_LINK ${_py_libraries})
elseif(DISTMETRICS_HAVE_GLOO)
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
