# Finds what distmetrics builds against and says in the configure output what was found.
#   LibTorch (required): Debian's 1.13 CPU build, or an official CUDA LibTorch 2.x given by
#     Torch_DIR / CMAKE_PREFIX_PATH.
#   Gloo, NCCL, Open MPI backends: built only when present (DISTMETRICS_WITH_* = AUTO), or
#     required (ON), or left out (OFF).
#   Header-only: nlohmann/json, toml++ and CLI11. GoogleTest: the package, or built from source.

include(CheckIncludeFileCXX)

function(_distmetrics_backend_wanted option found reason)
  if(${option} STREQUAL "ON" AND NOT ${found})
    message(FATAL_ERROR "distmetrics: ${option}=ON but ${reason}")
  endif()
endfunction()

# --- LibTorch -------------------------------------------------------------------------------
# DISTMETRICS_TORCH: "system" (find_package(Torch) as CMake finds it: Debian's 1.13 in /usr, or a
# LibTorch given by Torch_DIR / CMAKE_PREFIX_PATH), or "pip": the torch package of
# DISTMETRICS_PYTHON (a venv from ci/torch2-venv.sh), found through torch.utils.cmake_prefix_path.
set(DISTMETRICS_TORCH "system" CACHE STRING "Which LibTorch: system (Debian's, or Torch_DIR) or pip (DISTMETRICS_PYTHON's torch)")
set_property(CACHE DISTMETRICS_TORCH PROPERTY STRINGS system pip)
option(DISTMETRICS_ALLOW_UNTESTED_TORCH "Configure against a torch version outside the tested ones (cmake/DistmetricsTorchVersion.cmake)" OFF)
# A build folder holds one LibTorch: its cache (Torch_DIR, the libraries found) would mix two.
if(DEFINED CACHE{DISTMETRICS_TORCH_OF_THIS_FOLDER} AND NOT DISTMETRICS_TORCH_OF_THIS_FOLDER STREQUAL DISTMETRICS_TORCH)
  message(FATAL_ERROR "distmetrics: ${CMAKE_BINARY_DIR} was configured with DISTMETRICS_TORCH=${DISTMETRICS_TORCH_OF_THIS_FOLDER} "
                      "(${DISTMETRICS_TORCH_VERSION_OF_THIS_FOLDER}), now DISTMETRICS_TORCH=${DISTMETRICS_TORCH}: a build folder "
                      "holds one LibTorch. Use another folder (the ci/ scripts: build for torch 2, build-torch1.13 for "
                      "1.13), or remove this one.")
endif()
set(DISTMETRICS_TORCH_OF_THIS_FOLDER "${DISTMETRICS_TORCH}" CACHE INTERNAL "the DISTMETRICS_TORCH this folder was configured with")
set(DISTMETRICS_TORCH_FROM_PIP OFF)
if(DISTMETRICS_TORCH STREQUAL "pip")
  set(_torch_hint "make the venv with `bash ci/torch2-venv.sh` and pass -DDISTMETRICS_PYTHON=<its bin/python>")
  if(NOT DISTMETRICS_PYTHON)
    message(FATAL_ERROR "distmetrics: DISTMETRICS_TORCH=pip needs DISTMETRICS_PYTHON, the Python whose torch to build against: ${_torch_hint}")
  endif()
  execute_process(COMMAND "${DISTMETRICS_PYTHON}" -c "import torch.utils; print(torch.utils.cmake_prefix_path)"
                  RESULT_VARIABLE _rc OUTPUT_VARIABLE _torch_prefix ERROR_VARIABLE _err OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "distmetrics: DISTMETRICS_TORCH=pip but ${DISTMETRICS_PYTHON} cannot import torch: ${_err}\n"
                        "Install it (pip install -r ci/requirements-torch2.txt), or ${_torch_hint}")
  endif()
  list(PREPEND CMAKE_PREFIX_PATH "${_torch_prefix}")
  set(DISTMETRICS_TORCH_FROM_PIP ON)
  # TorchConfig.cmake looks for libtorch and libc10 with find_library, whose system paths come
  # before its hint: on a machine with Debian's libtorch-dev it would link /usr/lib's 1.13 beside
  # the wheel's headers. Name the wheel's own files first (checked again after find_package).
  get_filename_component(_torch_root "${_torch_prefix}/../.." ABSOLUTE)
  set(TORCH_LIBRARY "${_torch_root}/lib/libtorch.so" CACHE FILEPATH "libtorch of DISTMETRICS_TORCH" FORCE)
  set(c10_LIBRARY "${_torch_root}/lib/libc10.so" CACHE FILEPATH "libc10 of DISTMETRICS_TORCH" FORCE)
  # The CUDA wheel's CMake files look for the toolkit (nvcc): the machine's /usr/local/cuda. Its
  # libcudart may be an older minor than the wheel's (13.0 here, the wheel 13.2); programs must
  # load the one libtorch_cuda was built with, from the wheel's nvidia/cu13, as torch itself does.
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  # Linking resolves libtorch_cuda's own needs (libnccl.so.2, ...) through the programs' rpath,
  # where /usr/local/cuda/lib holds the machine's older NCCL: the wheel's nvidia/*/lib come first.
  file(GLOB _wheel_nvidia_libs "${_torch_root}/../nvidia/*/lib")
  foreach(_dir IN LISTS _wheel_nvidia_libs)
    string(APPEND CMAKE_EXE_LINKER_FLAGS " -Wl,-rpath-link,${_dir}")
    string(APPEND CMAKE_SHARED_LINKER_FLAGS " -Wl,-rpath-link,${_dir}")
  endforeach()
  foreach(_cuda_lib cudart nvrtc)
    file(GLOB _wheel_lib "${_torch_root}/../nvidia/cu*/lib/lib${_cuda_lib}.so.[0-9]*")
    if(_wheel_lib)
      list(GET _wheel_lib 0 _wheel_lib)
      set(CUDA_${_cuda_lib}_LIBRARY "${_wheel_lib}" CACHE FILEPATH "lib${_cuda_lib} of the torch wheel" FORCE)
    endif()
  endforeach()
elseif(NOT DISTMETRICS_TORCH STREQUAL "system")
  message(FATAL_ERROR "distmetrics: DISTMETRICS_TORCH='${DISTMETRICS_TORCH}': expected system or pip")
endif()
find_package(Torch REQUIRED)
if(DISTMETRICS_TORCH_FROM_PIP)
  foreach(_lib IN LISTS TORCH_LIBRARIES)
    if(IS_ABSOLUTE "${_lib}" AND _lib MATCHES "/lib(torch|c10)[^/]*\\.so$" AND NOT _lib MATCHES "^${_torch_root}/")
      message(FATAL_ERROR "distmetrics: DISTMETRICS_TORCH=pip found ${_lib}, which is not the wheel's (${_torch_root}/lib): "
                          "two LibTorch builds would be linked into one program")
    endif()
  endforeach()
endif()
include(DistmetricsTorchVersion)
distmetrics_check_torch_version("${Torch_VERSION}" "${Torch_DIR}" ${DISTMETRICS_ALLOW_UNTESTED_TORCH})
# TORCH_CXX_FLAGS carries the C++ ABI flag: everything linked with LibTorch (googletest too)
# must be compiled with it.
set(CMAKE_CXX_FLAGS "${CMAKE_CXX_FLAGS} ${TORCH_CXX_FLAGS}")
set(DISTMETRICS_TORCH_VERSION "${Torch_VERSION}")
if(NOT DISTMETRICS_TORCH_VERSION)
  set(DISTMETRICS_TORCH_VERSION "unknown")
endif()
set(DISTMETRICS_TORCH_VERSION_OF_THIS_FOLDER "LibTorch ${DISTMETRICS_TORCH_VERSION} from ${Torch_DIR}" CACHE INTERNAL
    "the LibTorch this folder was configured with")
set(DISTMETRICS_TORCH_HAS_CUDA OFF)
if(TARGET torch_cuda)
  set(DISTMETRICS_TORCH_HAS_CUDA ON)
endif()
message(STATUS "distmetrics: LibTorch ${DISTMETRICS_TORCH_VERSION} (CUDA: ${DISTMETRICS_TORCH_HAS_CUDA}) from ${Torch_DIR}")

# What distmetrics' own libraries and the command link of LibTorch (DISTMETRICS_TORCH_LINK). A CUDA
# LibTorch has two halves: libtorch_cpu (ATen, the dispatcher, c10d, gloo) and libtorch_cuda (its
# CUDA kernels, and with them cuBLAS, cuDNN, NCCL, ...: ~0.15 s of CPU and ~150 MB to load).
# TORCH_LIBRARIES links both into every program (--no-as-needed). Ours link the CPU half, compiled
# exactly as with TORCH_LIBRARIES (the same definitions, options and include folders); the runtime
# loads the CUDA half into the process that is about to use a GPU (runtime/src/comm/cuda_side.cpp,
# DISTMETRICS_TORCH_CUDA_LIBRARY). Programs built on the installed package get TORCH_LIBRARIES, as
# before, and the test programs link it too (a CUDA test there finds CUDA loaded).
set(DISTMETRICS_TORCH_CUDA_LIBRARY "")
if(DISTMETRICS_TORCH_HAS_CUDA AND TARGET torch_cpu_library AND TARGET torch_cuda)
  add_library(distmetrics_torch_cpu INTERFACE)
  target_link_libraries(distmetrics_torch_cpu INTERFACE torch_cpu_library)
  foreach(_from torch torch_cuda)
    foreach(_prop INTERFACE_COMPILE_DEFINITIONS INTERFACE_COMPILE_OPTIONS INTERFACE_COMPILE_FEATURES
                  INTERFACE_INCLUDE_DIRECTORIES INTERFACE_SYSTEM_INCLUDE_DIRECTORIES)
      get_target_property(_value ${_from} ${_prop})
      if(_value)
        set_property(TARGET distmetrics_torch_cpu APPEND PROPERTY ${_prop} "${_value}")
      endif()
    endforeach()
  endforeach()
  set(DISTMETRICS_TORCH_LINK "$<BUILD_INTERFACE:distmetrics_torch_cpu>")
  foreach(_lib IN LISTS TORCH_LIBRARIES)
    list(APPEND DISTMETRICS_TORCH_LINK "$<INSTALL_INTERFACE:${_lib}>")
  endforeach()
  set(DISTMETRICS_TORCH_CUDA_LIBRARY "$<TARGET_FILE:torch_cuda>")
  message(STATUS "distmetrics: links LibTorch's CPU side; loads its CUDA side when a variant needs a GPU")
else()
  set(DISTMETRICS_TORCH_LINK ${TORCH_LIBRARIES})
endif()

# --- Gloo headers that are not the gloo inside LibTorch ---------------------------------------
# The pip wheel ships no gloo headers, but its libtorch_cpu exports its gloo and c10d's
# ProcessGroupGloo. gloo.cpp names gloo's types only behind pointers (every gloo object is made
# inside libtorch_cpu), so another revision's headers (Debian's libgloo-dev, 2022) serve as
# declarations: no layout or inline body of theirs runs, except gloo's option classes that
# runtime/src/comm/gloo_inline.cpp builds (the same layout in 2022 and on gloo's main branch). What
# would differ between revisions is checked, not assumed: cmake/checks/gloo_foreign_headers.cpp
# links against the wheel with --no-undefined (every symbol it names exported with that signature),
# runs a 2-rank group, and runs gloo_inline.cpp's collectives in a child (DISTMETRICS_GLOO_INLINE
# only where they gave the right values).
# The kept transport's loop hurry is off there: it subclasses gloo's tcp::Handler, whose virtual
# handleEvents changed signature after 2022 (the wheel's: handleEvents(Loop&, int)).
# DISTMETRICS_GLOO_ROUTE=PYTHON keeps the route through torch's Python binding instead.
set(DISTMETRICS_GLOO_ROUTE AUTO CACHE STRING "pip torch's gloo: AUTO (C++ with Debian's gloo headers where the check passes, else Python), HEADERS or PYTHON")
set_property(CACHE DISTMETRICS_GLOO_ROUTE PROPERTY STRINGS AUTO HEADERS PYTHON)
set(DISTMETRICS_GLOO_FOREIGN_HEADERS OFF)
function(_distmetrics_check_foreign_gloo_headers)
  find_path(_system_gloo gloo/algorithm.h NO_CACHE)
  if(NOT _system_gloo)
    return()
  endif()
  find_library(_torch_cpu torch_cpu PATHS "${TORCH_INSTALL_PREFIX}/lib" NO_DEFAULT_PATH NO_CACHE)
  find_library(_c10 c10 PATHS "${TORCH_INSTALL_PREFIX}/lib" NO_DEFAULT_PATH NO_CACHE)
  set(_check_hash "")
  foreach(_file cmake/checks/gloo_foreign_headers.cpp runtime/src/comm/gloo_inline.h runtime/src/comm/gloo_inline.cpp)
    file(SHA256 "${PROJECT_SOURCE_DIR}/${_file}" _file_hash)
    string(APPEND _check_hash "${_file_hash}")
  endforeach()
  set(_key "${Torch_DIR};${Torch_VERSION};${_system_gloo};${_check_hash}")  # a changed check runs again
  if(NOT "${_DISTMETRICS_GLOO_FOREIGN_KEY}" STREQUAL "${_key}")
    separate_arguments(_abi UNIX_COMMAND "${TORCH_CXX_FLAGS}")
    # With the inline collectives compiled in, and where they do not compile, once more without.
    foreach(_with_inline 1 0)
      try_run(_run_rc _compiled "${CMAKE_BINARY_DIR}/CMakeFiles/gloo_foreign_headers"
              "${PROJECT_SOURCE_DIR}/cmake/checks/gloo_foreign_headers.cpp"
              CMAKE_FLAGS "-DINCLUDE_DIRECTORIES=${TORCH_INCLUDE_DIRS};${PROJECT_SOURCE_DIR}/runtime/src/comm"
                          "-DCMAKE_BUILD_RPATH=${TORCH_INSTALL_PREFIX}/lib"
              COMPILE_DEFINITIONS ${_abi} -DDISTMETRICS_CHECK_INLINE=${_with_inline}
              LINK_OPTIONS "-Wl,--no-undefined" -pthread
              LINK_LIBRARIES "${_torch_cpu}" "${_c10}"
              CXX_STANDARD 20
              COMPILE_OUTPUT_VARIABLE _compile_out RUN_OUTPUT_VARIABLE _run_out)
      if(_compiled)
        break()
      endif()
    endforeach()
    set(_ok OFF)
    set(_inline OFF)
    if(_compiled AND "${_run_rc}" STREQUAL "0")
      set(_ok ON)
      if(_run_out MATCHES "inline collectives: works")
        set(_inline ON)
      else()
        string(REGEX MATCH "inline collectives: [^\n]*" _inline_why "${_run_out}")
        message(STATUS "distmetrics: gloo's collectives in the calling thread with ${_system_gloo}/gloo: "
                       "${_inline_why}; they stay on ProcessGroupGloo's worker threads")
      endif()
    elseif(NOT _compiled)
      string(REGEX MATCH "[^\n]*error[^\n]*" _why "${_compile_out}")
      set(_why "did not compile or link: ${_why}")
    else()
      set(_why "ran and failed (${_run_rc}): ${_run_out}")
    endif()
    set(_DISTMETRICS_GLOO_FOREIGN_KEY "${_key}" CACHE INTERNAL "")
    set(_DISTMETRICS_GLOO_FOREIGN_OK ${_ok} CACHE INTERNAL "")
    set(_DISTMETRICS_GLOO_FOREIGN_INLINE ${_inline} CACHE INTERNAL "")
    set(_DISTMETRICS_GLOO_FOREIGN_WHY "${_why}" CACHE INTERNAL "")
  endif()
  if(_DISTMETRICS_GLOO_FOREIGN_OK)
    set(DISTMETRICS_GLOO_HEADERS "${_system_gloo}" PARENT_SCOPE)
    set(DISTMETRICS_GLOO_FOREIGN_HEADERS ON PARENT_SCOPE)
    set(DISTMETRICS_GLOO_FOREIGN_INLINE ${_DISTMETRICS_GLOO_FOREIGN_INLINE} PARENT_SCOPE)
  else()
    message(STATUS "distmetrics: ${_system_gloo}/gloo with LibTorch ${Torch_VERSION}: ${_DISTMETRICS_GLOO_FOREIGN_WHY}")
    if(DISTMETRICS_GLOO_ROUTE STREQUAL "HEADERS")
      message(FATAL_ERROR "distmetrics: DISTMETRICS_GLOO_ROUTE=HEADERS but the check failed (above); "
                          "-DDISTMETRICS_GLOO_ROUTE=AUTO falls back to torch's Python binding")
    endif()
  endif()
endfunction()

# --- Gloo (through c10d) --------------------------------------------------------------------
set(DISTMETRICS_HAVE_GLOO OFF)
if(NOT DISTMETRICS_WITH_GLOO STREQUAL "OFF")
  find_file(DISTMETRICS_C10D_GLOO_HEADER torch/csrc/distributed/c10d/ProcessGroupGloo.hpp
            HINTS ${TORCH_INCLUDE_DIRS} NO_CACHE)
  if(Torch_VERSION VERSION_LESS 2)
    # Debian's LibTorch 1.13 was built against Debian's libgloo-dev: those headers match it.
    set(CMAKE_REQUIRED_INCLUDES ${TORCH_INCLUDE_DIRS})
    check_include_file_cxx("gloo/algorithm.h" DISTMETRICS_GLOO_HEADERS)
    unset(CMAKE_REQUIRED_INCLUDES)
    set(_gloo_missing "the gloo headers were not found (install libgloo-dev)")
  else()
    # A LibTorch 2.x carries its own gloo inside libtorch_cpu (and exports it). Headers shipped
    # with that LibTorch match it; the pip wheel ships none.
    find_path(DISTMETRICS_GLOO_HEADERS gloo/algorithm.h PATHS ${TORCH_INCLUDE_DIRS} NO_DEFAULT_PATH NO_CACHE)
    string(CONCAT _gloo_missing "LibTorch ${Torch_VERSION} ships no gloo headers (the pip wheel has none) and "
                  "Debian's libgloo-dev (install it) did not pass the check below: use a LibTorch whose "
                  "include/ has gloo/, or -DDISTMETRICS_WITH_GLOO=OFF")
    if(NOT DISTMETRICS_GLOO_HEADERS AND DISTMETRICS_C10D_GLOO_HEADER AND NOT DISTMETRICS_GLOO_ROUTE STREQUAL "PYTHON")
      _distmetrics_check_foreign_gloo_headers()
    endif()
  endif()
  if(DISTMETRICS_GLOO_HEADERS AND DISTMETRICS_C10D_GLOO_HEADER)
    set(DISTMETRICS_HAVE_GLOO ON)
  endif()
endif()
# The common CPU collectives in the calling thread (runtime/src/comm/gloo_inline.h): torch 2.x's
# c10d::Work interface, with gloo headers that match the LibTorch or that passed the check above.
set(DISTMETRICS_GLOO_INLINE OFF)
if(DISTMETRICS_HAVE_GLOO AND Torch_VERSION VERSION_GREATER_EQUAL 2
   AND (NOT DISTMETRICS_GLOO_FOREIGN_HEADERS OR DISTMETRICS_GLOO_FOREIGN_INLINE))
  set(DISTMETRICS_GLOO_INLINE ON)
endif()
# Without the headers, a pip torch still gets gloo through its Python binding: decided after the
# Python metrics' dependencies below (it needs the same ones).

# --- NCCL (through c10d, CUDA LibTorch only) ---------------------------------------------------
set(DISTMETRICS_HAVE_NCCL OFF)
if(NOT DISTMETRICS_WITH_NCCL STREQUAL "OFF" AND DISTMETRICS_TORCH_HAS_CUDA)
  # pip wheels keep nccl.h in site-packages/nvidia/nccl next to site-packages/torch.
  find_path(DISTMETRICS_NCCL_INCLUDE_DIR nccl.h
    HINTS ${TORCH_INCLUDE_DIRS} $ENV{NCCL_HOME}/include ${Torch_DIR}/../../../../nvidia/nccl/include
          ${CUDAToolkit_INCLUDE_DIRS} ${CUDA_INCLUDE_DIRS})
  find_library(DISTMETRICS_NCCL_LIBRARY NAMES nccl libnccl.so.2
    HINTS $ENV{NCCL_HOME}/lib ${Torch_DIR}/../../../../nvidia/nccl/lib)
  if(DISTMETRICS_NCCL_INCLUDE_DIR)
    set(DISTMETRICS_HAVE_NCCL ON)
  endif()
endif()
if(DISTMETRICS_WITH_NCCL STREQUAL "ON" AND NOT DISTMETRICS_TORCH_HAS_CUDA)
  message(FATAL_ERROR "distmetrics: DISTMETRICS_WITH_NCCL=ON but LibTorch ${DISTMETRICS_TORCH_VERSION} (${Torch_DIR}) "
                      "is a CPU-only build: NCCL needs a CUDA LibTorch, e.g. the pip wheel of "
                      "ci/requirements-torch2.txt (bash ci/torch2-venv.sh; -DDISTMETRICS_TORCH=pip)")
endif()
if(NOT DISTMETRICS_WITH_NCCL STREQUAL "OFF")
  _distmetrics_backend_wanted(DISTMETRICS_WITH_NCCL DISTMETRICS_HAVE_NCCL
    "nccl.h was not found beside LibTorch, in the wheel's nvidia/nccl, or under NCCL_HOME (install libnccl-dev or set NCCL_HOME)")
endif()
message(STATUS "distmetrics: nccl backend: ${DISTMETRICS_HAVE_NCCL}")

# --- Open MPI ---------------------------------------------------------------------------------
set(DISTMETRICS_HAVE_MPI OFF)
if(NOT DISTMETRICS_WITH_MPI STREQUAL "OFF")
  # The C API through the CXX component (the project enables no C compiler); no C++ bindings.
  set(MPI_CXX_SKIP_MPICXX ON)
  find_package(MPI QUIET COMPONENTS CXX)
  if(MPI_CXX_FOUND AND MPIEXEC_EXECUTABLE)
    set(DISTMETRICS_HAVE_MPI ON)
  endif()
  _distmetrics_backend_wanted(DISTMETRICS_WITH_MPI DISTMETRICS_HAVE_MPI
    "Open MPI was not found (install libopenmpi-dev openmpi-bin)")
endif()
message(STATUS "distmetrics: mpi backend: ${DISTMETRICS_HAVE_MPI} ${MPIEXEC_EXECUTABLE}")

if(NOT DISTMETRICS_HAVE_GLOO AND NOT DISTMETRICS_HAVE_NCCL AND NOT DISTMETRICS_HAVE_MPI)
  message(WARNING "distmetrics: no distributed backend found: only world size 1 will run")
endif()

# --- Header-only libraries --------------------------------------------------------------------
function(_distmetrics_header_only target header package_hint)
  find_path(_dir "${header}" HINTS "${DISTMETRICS_DEPS_DIR}/include" "${DISTMETRICS_DEPS_DIR}")
  if(NOT _dir)
    message(FATAL_ERROR "distmetrics: ${header} not found. Install ${package_hint}, or set "
                        "DISTMETRICS_DEPS_DIR to a prefix holding include/${header}")
  endif()
  add_library(${target} INTERFACE IMPORTED GLOBAL)
  set_target_properties(${target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_dir}")
  message(STATUS "distmetrics: ${header}: ${_dir}")
  unset(_dir CACHE)
endfunction()
_distmetrics_header_only(distmetrics_dep_json "nlohmann/json.hpp" "nlohmann-json3-dev")
_distmetrics_header_only(distmetrics_dep_toml "toml++/toml.h" "libtomlplusplus-dev")
_distmetrics_header_only(distmetrics_dep_cli11 "CLI/CLI.hpp" "libcli11-dev")
# toml++ is used header-only, so nothing needs its shared library at run time.
set_property(TARGET distmetrics_dep_toml PROPERTY INTERFACE_COMPILE_DEFINITIONS TOML_HEADER_ONLY=1)

# --- Python (pytest orchestration) ----------------------------------------------------------
# `python3` on PATH may be an interpreter that does not see Debian's packages: take the first
# one that imports pytest.
set(DISTMETRICS_PYTHON "" CACHE FILEPATH "Python interpreter with pytest")
if(NOT DISTMETRICS_PYTHON)
  find_package(Python3 QUIET COMPONENTS Interpreter)
  foreach(_py ${Python3_EXECUTABLE} /usr/bin/python3)
    if(EXISTS "${_py}")
      execute_process(COMMAND "${_py}" -c "import pytest" RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
      if(_rc EQUAL 0)
        set(DISTMETRICS_PYTHON "${_py}" CACHE FILEPATH "Python interpreter with pytest" FORCE)
        break()
      endif()
    endif()
  endforeach()
endif()
message(STATUS "distmetrics: python with pytest: ${DISTMETRICS_PYTHON}")

# --- Python metrics (pyhost): CPython embedded in the rank workers, with torch ------------------
# Needs the interpreter's headers and library (python3-dev), pybind11 (pybind11-dev) and a torch
# package of the same version as LibTorch with its libtorch_python (python3-torch). AUTO: built
# when all are found; ON: required; OFF: left out (`conform --python` then says why).
set(DISTMETRICS_HAVE_PYHOST OFF)
set(_pyhost_missing "no Python interpreter with pytest was found")
if(NOT DISTMETRICS_WITH_PYTHON STREQUAL "OFF" AND DISTMETRICS_PYTHON)
  execute_process(COMMAND "${DISTMETRICS_PYTHON}" -c
    "import sysconfig, torch, os; print(sysconfig.get_paths()['include']); print(sysconfig.get_config_var('LIBDIR')); print(sysconfig.get_config_var('LDLIBRARY')); print(torch.__version__.split('+')[0]); print(os.path.join(os.path.dirname(torch.__file__), 'lib')); print(','.join(getattr(torch._C, '_PYBIND11_' + n, None) or '' for n in ('COMPILER_TYPE', 'STDLIB', 'BUILD_ABI')))"
    RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _rc EQUAL 0)
    set(_pyhost_missing "${DISTMETRICS_PYTHON} cannot import torch (install python3-torch)")
  else()
    string(REPLACE "\n" ";" _out "${_out}")
    list(GET _out 0 _py_include)
    list(GET _out 1 _py_libdir)
    list(GET _out 2 _py_ldlibrary)
    list(GET _out 3 _py_torch_version)
    list(GET _out 4 _py_torch_libdir)
    list(GET _out 5 _py_pybind11_abi)
    if(Torch_VERSION VERSION_LESS 2)
      find_path(DISTMETRICS_PYBIND11_INCLUDE_DIR pybind11/embed.h HINTS "${DISTMETRICS_DEPS_DIR}/include")
    else()
      # torch 2.x registers its Python types with the pybind11 it ships (3.x, other internals than
      # Debian's 2.10): pyhost must be compiled against that copy, never /usr/include's.
      find_path(DISTMETRICS_PYBIND11_INCLUDE_DIR pybind11/embed.h PATHS ${TORCH_INCLUDE_DIRS} NO_DEFAULT_PATH)
    endif()
    find_library(DISTMETRICS_TORCH_PYTHON_LIBRARY torch_python HINTS "${_py_torch_libdir}" ${TORCH_INSTALL_PREFIX}/lib)
    string(REGEX MATCH "^[0-9]+\\.[0-9]+" _py_torch_mm "${_py_torch_version}")
    string(REGEX MATCH "^[0-9]+\\.[0-9]+" _lib_torch_mm "${DISTMETRICS_TORCH_VERSION}")
    if(NOT EXISTS "${_py_include}/Python.h")
      set(_pyhost_missing "no Python.h in ${_py_include} (install python3-dev)")
    elseif(NOT EXISTS "${_py_libdir}/${_py_ldlibrary}")
      set(_pyhost_missing "no ${_py_libdir}/${_py_ldlibrary} (install python3-dev)")
    elseif(NOT DISTMETRICS_PYBIND11_INCLUDE_DIR)
      set(_pyhost_missing "pybind11/embed.h was not found (install pybind11-dev)")
    elseif(NOT DISTMETRICS_TORCH_PYTHON_LIBRARY)
      set(_pyhost_missing "libtorch_python was not found next to the torch package")
    elseif(NOT _py_torch_mm STREQUAL _lib_torch_mm)
      set(_pyhost_missing "the torch package is ${_py_torch_version}, LibTorch is ${DISTMETRICS_TORCH_VERSION}")
    else()
      set(DISTMETRICS_HAVE_PYHOST ON)
      add_library(distmetrics_dep_python INTERFACE)
      target_include_directories(distmetrics_dep_python SYSTEM INTERFACE "${_py_include}" "${DISTMETRICS_PYBIND11_INCLUDE_DIR}")
      target_link_libraries(distmetrics_dep_python INTERFACE "${_py_libdir}/${_py_ldlibrary}" "${DISTMETRICS_TORCH_PYTHON_LIBRARY}")
      # pybind11 before 3 (torch up to 2.10) keys its type registry by compiler, C++ library and
      # ABI tag, and a type registered by libtorch_python (c10d::Store, for gloo through Python)
      # is found only by code of the same key: torch names its own (torch 2.8's wheel: "_gcc",
      # "_libstdcpp", "_cxxabi1018", where g++ 12 would say "_cxxabi1017"), as its
      # cpp_extension does. pybind11 3 keys by the C++ library alone and torch names none.
      string(REPLACE "," ";" _py_pybind11_abi "${_py_pybind11_abi}")
      list(GET _py_pybind11_abi 2 _abi)
      if(_abi)
        list(GET _py_pybind11_abi 0 _compiler)
        list(GET _py_pybind11_abi 1 _stdlib)
        target_compile_definitions(distmetrics_dep_python INTERFACE PYBIND11_COMPILER_TYPE="${_compiler}"
                                   PYBIND11_STDLIB="${_stdlib}" PYBIND11_BUILD_ABI="${_abi}")
        message(STATUS "distmetrics: pybind11 types shared with torch's as ${_compiler}${_stdlib}${_abi}")
      endif()
      if(DISTMETRICS_TORCH_FROM_PIP)
        # The embedded interpreter starts as the venv's python (runtime/embedded_python.h).
        target_compile_definitions(distmetrics_dep_python INTERFACE DISTMETRICS_EMBEDDED_PYTHON="${DISTMETRICS_PYTHON}")
      endif()
    endif()
  endif()
endif()
if(DISTMETRICS_WITH_PYTHON STREQUAL "ON" AND NOT DISTMETRICS_HAVE_PYHOST)
  message(FATAL_ERROR "distmetrics: DISTMETRICS_WITH_PYTHON=ON but ${_pyhost_missing}")
endif()
# A torch from pip is there to run Python metrics: AUTO means required (say what is missing now
# rather than a build without `conform --python`).
if(DISTMETRICS_TORCH_FROM_PIP AND DISTMETRICS_WITH_PYTHON STREQUAL "AUTO" AND NOT DISTMETRICS_HAVE_PYHOST)
  message(FATAL_ERROR "distmetrics: DISTMETRICS_TORCH=pip but the Python metrics cannot be built: ${_pyhost_missing}; "
                      "or -DDISTMETRICS_WITH_PYTHON=OFF to build without them")
endif()
if(DISTMETRICS_HAVE_PYHOST)
  message(STATUS "distmetrics: python metrics (pyhost): ON ${_py_libdir}/${_py_ldlibrary}, torch ${_py_torch_version}")
else()
  set(DISTMETRICS_PYHOST_MISSING "${_pyhost_missing}")
  message(STATUS "distmetrics: python metrics (pyhost): OFF (${_pyhost_missing})")
endif()

# --- Gloo without gloo headers: torch's own ProcessGroupGloo through its Python binding ---------
# A pip torch (the wheel ships no gloo headers) makes the group with torch._C._distributed_c10d in
# the rank's embedded interpreter (runtime/src/comm/gloo_through_python.cpp), compiled against the
# wheel's pybind11 and linked with the wheel's libtorch_python: the pyhost dependencies. Only for
# DISTMETRICS_TORCH=pip, where libtorch_python is the same build as the LibTorch linked.
set(DISTMETRICS_GLOO_THROUGH_PYTHON OFF)
if(NOT DISTMETRICS_HAVE_GLOO AND NOT DISTMETRICS_WITH_GLOO STREQUAL "OFF" AND DISTMETRICS_TORCH_FROM_PIP)
  if(NOT DISTMETRICS_HAVE_PYHOST)
    string(APPEND _gloo_missing "; through torch's Python binding it needs what Python metrics need: ${_pyhost_missing}")
  else()
    execute_process(COMMAND "${DISTMETRICS_PYTHON}" -c "import torch.distributed as d, sys; sys.exit(0 if d.is_gloo_available() else 1)"
                    RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
    if(_rc EQUAL 0)
      set(DISTMETRICS_HAVE_GLOO ON)
      set(DISTMETRICS_GLOO_THROUGH_PYTHON ON)
    else()
      string(APPEND _gloo_missing "; and ${DISTMETRICS_PYTHON}'s torch.distributed has no gloo either")
    endif()
  endif()
endif()
if(NOT DISTMETRICS_WITH_GLOO STREQUAL "OFF")
  _distmetrics_backend_wanted(DISTMETRICS_WITH_GLOO DISTMETRICS_HAVE_GLOO "${_gloo_missing}")
endif()
if(DISTMETRICS_GLOO_THROUGH_PYTHON)
  message(STATUS "distmetrics: gloo backend: ON, torch's ProcessGroupGloo through its Python binding "
                 "(LibTorch ${Torch_VERSION} ships no gloo headers; the kept transport is off)")
elseif(DISTMETRICS_GLOO_FOREIGN_HEADERS AND DISTMETRICS_HAVE_GLOO)
  message(STATUS "distmetrics: gloo backend: ON, LibTorch ${Torch_VERSION}'s ProcessGroupGloo from C++ with "
                 "the gloo headers in ${DISTMETRICS_GLOO_HEADERS} as declarations (checked; the loop hurry is off; "
                 "collectives in the calling thread: ${DISTMETRICS_GLOO_INLINE})")
elseif(DISTMETRICS_HAVE_GLOO OR DISTMETRICS_WITH_GLOO STREQUAL "OFF")
  message(STATUS "distmetrics: gloo backend: ${DISTMETRICS_HAVE_GLOO}")
else()
  message(STATUS "distmetrics: gloo backend: OFF (${_gloo_missing})")
endif()

# --- GoogleTest ---------------------------------------------------------------------------------
if(DISTMETRICS_BUILD_TESTS)
  find_package(GTest CONFIG QUIET)
  if(NOT TARGET GTest::gtest)
    # No package (e.g. a GPU node): build it from source, with LibTorch's ABI flags.
    find_path(DISTMETRICS_GTEST_SOURCE_DIR CMakeLists.txt
      HINTS "${DISTMETRICS_DEPS_DIR}/googletest" /usr/src/googletest NO_DEFAULT_PATH)
    if(NOT DISTMETRICS_GTEST_SOURCE_DIR)
      message(FATAL_ERROR "distmetrics: GoogleTest not found: install libgtest-dev, or put its "
                          "sources in DISTMETRICS_DEPS_DIR/googletest, or -DDISTMETRICS_BUILD_TESTS=OFF")
    endif()
    set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
    set(BUILD_GMOCK OFF CACHE BOOL "" FORCE)
    add_subdirectory("${DISTMETRICS_GTEST_SOURCE_DIR}" "${CMAKE_BINARY_DIR}/googletest" EXCLUDE_FROM_ALL)
    add_library(GTest::gtest ALIAS gtest)
    message(STATUS "distmetrics: GoogleTest built from ${DISTMETRICS_GTEST_SOURCE_DIR}")
  else()
    message(STATUS "distmetrics: GoogleTest ${GTest_VERSION} (package)")
  endif()
  include(GoogleTest)
endif()

configure_file("${CMAKE_CURRENT_LIST_DIR}/build_config.h.in"
               "${CMAKE_BINARY_DIR}/generated/include/distmetrics/build_config.h" @ONLY)
