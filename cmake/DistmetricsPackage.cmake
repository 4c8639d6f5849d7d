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

configure_package_config_file("${CMAKE_CURRENT_LIST_DIR}/distmetricsConfig.cmake.in"
  "${CMAKE_BINARY_DIR}/distmetricsConfig.cmake"
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/distmetrics)
write_basic_package_version_file("${CMAKE_BINARY_DIR}/distmetricsConfigVersion.cmake"
  COMPATIBILITY SameMinorVersion)
install(FILES "${CMAKE_BINARY_DIR}/distmetricsConfig.cmake"
              "${CMAKE_BINARY_DIR}/distmetricsConfigVersion.cmake"
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/distmetrics)
