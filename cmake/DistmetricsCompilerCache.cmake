# ccache, when present: a rebuild after touching one metric recompiles only that metric.
# The sloppiness settings let ccache cache translation units built with precompiled headers; the
# base directory (the source tree) makes its paths relative, so another clone or worktree of the
# project (CI's fresh clone, a branch) hits the same cache.
find_program(DISTMETRICS_CCACHE ccache)
if(DISTMETRICS_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(CMAKE_CXX_COMPILER_LAUNCHER
      "${CMAKE_COMMAND};-E;env;CCACHE_BASEDIR=${CMAKE_SOURCE_DIR};CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime;${DISTMETRICS_CCACHE}")
  message(STATUS "distmetrics: compiler cache: ${DISTMETRICS_CCACHE}")
else()
  message(STATUS "distmetrics: compiler cache: none")
endif()
