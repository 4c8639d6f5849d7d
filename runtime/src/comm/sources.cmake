# Communicator sources; backends only where their libraries were found. The backends whose
# libraries a process should load only when it uses them are modules of their own (modules.cmake).
list(APPEND DISTMETRICS_RUNTIME_SOURCES
  src/comm/communicator.cpp
  src/comm/single_process.cpp
  src/comm/backends.cpp
  src/comm/cuda_side.cpp
  src/comm/gloo_loop_hurry.cpp
  src/comm/modules.cpp)
# LibTorch's CUDA side, which the runtime loads when a variant needs a GPU (empty: linked whole, or none).
set_source_files_properties(src/comm/cuda_side.cpp PROPERTIES
  COMPILE_DEFINITIONS "DISTMETRICS_TORCH_CUDA_LIBRARY=\"${DISTMETRICS_TORCH_CUDA_LIBRARY}\"")
list(APPEND DISTMETRICS_RUNTIME_PRIVATE_LINK ${CMAKE_DL_LIBS})
if(DISTMETRICS_HAVE_GLOO AND NOT DISTMETRICS_GLOO_THROUGH_PYTHON)
  list(APPEND DISTMETRICS_RUNTIME_SOURCES src/comm/gloo.cpp src/comm/gloo_loop_priority.cpp)
  set(_gloo_definitions "DISTMETRICS_GLOO_INLINE=$<BOOL:${DISTMETRICS_GLOO_INLINE}>")
  if(DISTMETRICS_GLOO_INLINE)
    list(APPEND DISTMETRICS_RUNTIME_SOURCES src/comm/gloo_inline.cpp)
  endif()
  if(DISTMETRICS_GLOO_FOREIGN_HEADERS)
    # Headers of another gloo as declarations (DistmetricsDependencies.cmake): every gloo symbol
    # comes from libtorch_cpu, never from a second gloo library, and the loop hurry (a subclass of
    # gloo's tcp::Handler, whose interface differs between the two) is off.
    list(APPEND _gloo_definitions "DISTMETRICS_GLOO_LOOP_HURRY=0")
  else()
    # gloo.cpp registers a descriptor on gloo's tcp transport directly: Debian's LibTorch links a
    # shared libgloo, other LibTorch builds carry gloo inside libtorch_cpu.
    find_library(DISTMETRICS_GLOO_LIBRARY gloo)
    if(DISTMETRICS_GLOO_LIBRARY)
      list(APPEND DISTMETRICS_RUNTIME_PRIVATE_LINK "${DISTMETRICS_GLOO_LIBRARY}")
    endif()
  endif()
  set_source_files_properties(src/comm/gloo.cpp PROPERTIES COMPILE_DEFINITIONS "${_gloo_definitions}")
endif()
if(DISTMETRICS_HAVE_MPI)
  list(APPEND DISTMETRICS_RUNTIME_SOURCES src/comm/mpi.cpp)
  list(APPEND DISTMETRICS_RUNTIME_PRIVATE_LINK MPI::MPI_CXX)
endif()
