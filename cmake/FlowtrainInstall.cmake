# `cmake --install` puts the headers, the layer libraries and a package config in the prefix,
# so another project can `find_package(flowtrain)` and link `flowtrain::flowtrain`.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(install_targets flowtrain)
foreach(layer IN LISTS FLOWTRAIN_LAYERS_BUILT)
  list(APPEND install_targets flowtrain_${layer})
endforeach()
install(TARGETS ${install_targets} EXPORT flowtrainTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION include)
# Public headers only: not a layer's internal/ headers, nor the helpers of its tests.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/flowtrain/ DESTINATION include/flowtrain
        FILES_MATCHING PATTERN "*.h"
        PATTERN "internal" EXCLUDE
        PATTERN "*_test_*.h" EXCLUDE
        PATTERN "*_test_util.h" EXCLUDE)
install(EXPORT flowtrainTargets NAMESPACE flowtrain:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/flowtrain)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/flowtrainConfig.cmake.in
    ${PROJECT_BINARY_DIR}/flowtrainConfig.cmake
    INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/flowtrain)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/flowtrainConfigVersion.cmake
    COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/flowtrainConfig.cmake ${PROJECT_BINARY_DIR}/flowtrainConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/flowtrain)
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})
