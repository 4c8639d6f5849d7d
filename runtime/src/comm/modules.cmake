# The runtime's modules (modules.h): shared objects built and installed beside
# libdistmetrics_runtime.so, which the backend table loads with a backend's first communicator,
# so that a process that never uses that backend never loads what it links.
#   libdistmetrics_gloo_python.so  gloo through torch's Python binding (a pip torch without gloo
#                                  headers): libpython, libtorch_python, and through it libtorch_cuda
#   libdistmetrics_nccl.so         the nccl backend: libtorch_cuda, NCCL
# A module does not link the runtime: it is only ever loaded into a process that has it, and takes
# the runtime's symbols from there. So the runtime can depend on its modules, and every program
# that links the runtime finds them built.
function(_distmetrics_runtime_module target source)
  add_library(${target} MODULE ${source})
  set_target_properties(${target} PROPERTIES OUTPUT_NAME ${target} PREFIX lib
                        LIBRARY_OUTPUT_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}")
  # The runtime's headers and flags, without linking it (its own target would depend on this one).
  target_include_directories(${target} PRIVATE "${CMAKE_CURRENT_SOURCE_DIR}/include" "${CMAKE_CURRENT_SOURCE_DIR}/src/comm"
                             "${CMAKE_BINARY_DIR}/generated/include")
  target_link_libraries(${target} PRIVATE distmetrics_dep_json ${ARGN})
  target_compile_options(${target} PRIVATE ${DISTMETRICS_WARNINGS})
  install(TARGETS ${target} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  set_property(GLOBAL APPEND PROPERTY DISTMETRICS_INSTALL_MODULES ${target})
  add_dependencies(distmetrics_runtime ${target})
endfunction()

if(DISTMETRICS_GLOO_THROUGH_PYTHON)
  # Python.h first and the wheel's pybind11 (the one libtorch_python registered torch's types with).
  _distmetrics_runtime_module(distmetrics_gloo_python src/comm/gloo_through_python.cpp
                              distmetrics_dep_python ${DISTMETRICS_TORCH_LINK})
endif()
if(DISTMETRICS_HAVE_NCCL)
  # c10d's NCCL headers include <nccl.h>, and their inline helpers call into libnccl.
  _distmetrics_runtime_module(distmetrics_nccl src/comm/nccl.cpp torch_cuda_library ${DISTMETRICS_TORCH_LINK})
  target_include_directories(distmetrics_nccl PRIVATE "${DISTMETRICS_NCCL_INCLUDE_DIR}")
  if(DISTMETRICS_NCCL_LIBRARY)
    target_link_libraries(distmetrics_nccl PRIVATE "${DISTMETRICS_NCCL_LIBRARY}")
  endif()
endif()
