# install() rules and the exported CMake package: an outside project does
#   find_package(distmetrics REQUIRED)   target_link_libraries(app PRIVATE distmetrics::metrics)
include(CMakePackageConfigHelpers)

get_property(_targets GLOBAL PROPERTY DISTMETRICS_INSTALL_TARGETS)
install(TARGETS ${_targets} EXPORT distmetricsTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES "${CMAKE_BINARY_DIR}/generated/include/distmetrics/build_config.h"
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/distmetrics)
install(EXPORT distmetricsTargets NAMESPACE distmetrics::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/distmetrics)

# Dependencies of optional exported targets (e.g. the fixtures need GoogleTest).
get_property(_distmetrics_config_dependencies GLOBAL PROPERTY DISTMETRICS_CONFIG_DEPENDENCIES)
list(JOIN _distmetrics_config_dependencies "\n" DISTMETRICS_CONFIG_EXTRA)

# A pip wheel's LibTorch: its own libtorch and libc10 (TorchConfig.cmake's find_library would take
# a system LibTorch's first, e.g. Debian's /usr/lib 1.13; as DistmetricsDependencies.cmake does
# here), and its nvidia/*/lib first when linking (the machine's CUDA may hold older ones).
set(DISTMETRICS_CONFIG_TORCH "")
if(DISTMETRICS_TORCH_FROM_PIP)
  string(CONCAT DISTMETRICS_CONFIG_TORCH
    "if(NOT DEFINED TORCH_LIBRARY AND \"\${Torch_DIR}\" STREQUAL \"\${distmetrics_TORCH_DIR}\" AND EXISTS \"${TORCH_LIBRARY}\")\n"
    "  set(TORCH_LIBRARY \"${TORCH_LIBRARY}\")\n  set(c10_LIBRARY \"${c10_LIBRARY}\")\n"
    "  foreach(_dir IN ITEMS ${_wheel_nvidia_libs})\n"
    "    string(APPEND CMAKE_EXE_LINKER_FLAGS \" -Wl,-rpath-link,\${_dir}\")\n"
    "    string(APPEND CMAKE_SHARED_LINKER_FLAGS \" -Wl,-rpath-link,\${_dir}\")\n"
    "  endforeach()\nendif()")
endif()
configure_package_config_file("${CMAKE_CURRENT_LIST_DIR}/distmetricsConfig.cmake.in"
  "${CMAKE_BINARY_DIR}/distmetricsConfig.cmake"
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/distmetrics)
write_basic_package_version_file("${CMAKE_BINARY_DIR}/distmetricsConfigVersion.cmake"
  COMPATIBILITY SameMinorVersion)
install(FILES "${CMAKE_BINARY_DIR}/distmetricsConfig.cmake"
              "${CMAKE_BINARY_DIR}/distmetricsConfigVersion.cmake"
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/distmetrics)

# `cmake --build <build> --target installable`: what the install copies (the libraries, the
# fixtures, the command), no test. The install checks the same files first (install_check.cmake).
set(_installed "")
foreach(_target IN LISTS _targets)
  get_target_property(_type ${_target} TYPE)
  if(NOT _type STREQUAL "INTERFACE_LIBRARY")  # headers only: nothing to build
    list(APPEND _installed ${_target})
  endif()
endforeach()
if(TARGET distmetrics)
  list(APPEND _installed distmetrics)
endif()
# What the command and the runtime load on demand (the command proper, the runtime's modules).
get_property(_modules GLOBAL PROPERTY DISTMETRICS_INSTALL_MODULES)
list(APPEND _installed ${_modules})
add_custom_target(installable)
add_dependencies(installable ${_installed})
set(_installed_files "")
foreach(_target IN LISTS _installed)
  list(APPEND _installed_files "$<TARGET_FILE:${_target}>")
endforeach()
string(CONCAT _install_check
  "set(DISTMETRICS_INSTALL_FILES \"${_installed_files}\")\nset(DISTMETRICS_BUILD_DIR \"${CMAKE_BINARY_DIR}\")\n"
  "if(NOT DISTMETRICS_INSTALL_FILES_ONLY)\n  include(\"${PROJECT_SOURCE_DIR}/cmake/install_check.cmake\")\nendif()\n")
file(GENERATE OUTPUT "${CMAKE_BINARY_DIR}/install_check.cmake" CONTENT "${_install_check}")

if(DISTMETRICS_BUILD_TESTS)
  # The check names what to build; and it checks every built file the install copies.
  add_test(NAME install_check_says_what_to_build_first
           COMMAND "${CMAKE_COMMAND}" "-DDISTMETRICS_INSTALL_FILES=${CMAKE_BINARY_DIR}/nowhere/libdistmetrics_fixtures.a"
                   "-DDISTMETRICS_BUILD_DIR=${CMAKE_BINARY_DIR}" -P "${PROJECT_SOURCE_DIR}/cmake/install_check.cmake")
  set_tests_properties(install_check_says_what_to_build_first PROPERTIES LABELS install WILL_FAIL ON)
  add_test(NAME install_check_names_the_command
           COMMAND "${CMAKE_COMMAND}" "-DDISTMETRICS_INSTALL_FILES=${CMAKE_BINARY_DIR}/nowhere/libdistmetrics_fixtures.a"
                   "-DDISTMETRICS_BUILD_DIR=${CMAKE_BINARY_DIR}" -P "${PROJECT_SOURCE_DIR}/cmake/install_check.cmake")
  set_tests_properties(install_check_names_the_command PROPERTIES LABELS install
    PASS_REGULAR_EXPRESSION "nothing was installed: the install copies files.*\n  [^\n]*/nowhere/libdistmetrics_fixtures.a\n.*\n +cmake --build [^\n]* --target installable\n")
  add_test(NAME install_check_covers_every_built_file_the_install_copies
           COMMAND "${CMAKE_COMMAND}" "-DBUILD_DIR=${CMAKE_BINARY_DIR}"
                   -P "${PROJECT_SOURCE_DIR}/cmake/tests/install_check_coverage.cmake")
  set_tests_properties(install_check_covers_every_built_file_the_install_copies PROPERTIES LABELS install)
endif()
