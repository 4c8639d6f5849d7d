# Run by `cmake --install` before it copies anything (install(SCRIPT) in the top CMakeLists.txt;
# DistmetricsPackage.cmake generates <build>/install_check.cmake, which sets the list and
# includes this file). Every file the install copies from the build must be built: ci/run_cpu.sh
# builds only the distmetrics command, and an install of that build used to stop half-way at
# "file INSTALL cannot find .../libdistmetrics_fixtures.a" without saying what to build.
#   DISTMETRICS_INSTALL_FILES  the built files the install copies (the targets' files)
#   DISTMETRICS_BUILD_DIR      the build folder, for the command to give
set(_distmetrics_missing "")
foreach(_distmetrics_file IN LISTS DISTMETRICS_INSTALL_FILES)
  if(NOT EXISTS "${_distmetrics_file}")
    list(APPEND _distmetrics_missing "${_distmetrics_file}")
  endif()
endforeach()
if(_distmetrics_missing)
  list(JOIN _distmetrics_missing "\n  " _distmetrics_missing)
  message(FATAL_ERROR
    "distmetrics: nothing was installed: the install copies files that are not built yet:\n"
    "  ${_distmetrics_missing}\n"
    "Build what the install needs first (ci/run_cpu.sh builds only the distmetrics command), then install:\n"
    "  cmake --build ${DISTMETRICS_BUILD_DIR} --target installable\n"
    "  cmake --install ${DISTMETRICS_BUILD_DIR} --prefix PREFIX\n")
endif()
