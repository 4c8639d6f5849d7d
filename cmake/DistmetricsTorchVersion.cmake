# The LibTorch versions this code base is built and tested against (major.minor): Debian's 1.13,
# and a range of 2.x releases whose two ends are measured (docs/gpu.md, "The torch range": a
# build and a smoke run against each end). Another version stops the configure
# unless `allow_untested` (DISTMETRICS_ALLOW_UNTESTED_TORCH=ON): then it is tried.
# The version guards in the code: TORCH_VERSION_* in C++ (pool_store.h, pyhost/src/python_metric.cpp),
# torch.__version__ in python/distmetrics/_host.py.
if(CMAKE_SCRIPT_MODE_FILE)
  cmake_minimum_required(VERSION 3.22)  # script mode starts with no policies (IN_LIST)
endif()
set(DISTMETRICS_TORCH_1X 1.13)           # Debian bookworm's libtorch-dev
set(DISTMETRICS_TORCH_2X_OLDEST 2.8)     # ci/torch_range.sh on torch 2.8.0 (docs/gpu.md, "The torch range")
set(DISTMETRICS_TORCH_2X_NEWEST 2.15)    # ci/requirements-torch2.txt
set(DISTMETRICS_SUPPORTED_TORCH_TEXT "${DISTMETRICS_TORCH_1X}, ${DISTMETRICS_TORCH_2X_OLDEST} to ${DISTMETRICS_TORCH_2X_NEWEST}")

function(distmetrics_check_torch_version version torch_dir allow_untested)
  string(REGEX MATCH "^[0-9]+\\.[0-9]+" _mm "${version}")
  if(_mm VERSION_EQUAL DISTMETRICS_TORCH_1X OR
     (_mm VERSION_GREATER_EQUAL DISTMETRICS_TORCH_2X_OLDEST AND _mm VERSION_LESS_EQUAL DISTMETRICS_TORCH_2X_NEWEST))
    return()
  endif()
  if(allow_untested)
    message(WARNING "distmetrics: LibTorch ${version} (${torch_dir}) is not one of the tested versions "
                    "(${DISTMETRICS_SUPPORTED_TORCH_TEXT}); building anyway (DISTMETRICS_ALLOW_UNTESTED_TORCH=ON)")
    return()
  endif()
  message(FATAL_ERROR "distmetrics: LibTorch '${version}' from ${torch_dir} is not a supported version "
                      "(supported: ${DISTMETRICS_SUPPORTED_TORCH_TEXT}). Use Debian's (apt-get install libtorch-dev) or the pinned "
                      "pip torch (bash ci/torch2-venv.sh, then -DDISTMETRICS_TORCH=pip "
                      "-DDISTMETRICS_PYTHON=<venv>/bin/python), or -DDISTMETRICS_ALLOW_UNTESTED_TORCH=ON to try it")
endfunction()

# cmake -DCHECK_TORCH_VERSION=X.Y.Z -P DistmetricsTorchVersion.cmake: the check alone (its test).
if(CMAKE_SCRIPT_MODE_FILE AND DEFINED CHECK_TORCH_VERSION)
  distmetrics_check_torch_version("${CHECK_TORCH_VERSION}" "(test)" OFF)
  message(STATUS "distmetrics: LibTorch ${CHECK_TORCH_VERSION} is supported")
endif()
