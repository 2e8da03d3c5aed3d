# install(EXPORT) and a package config that finds what users of a static library also need.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
install(TARGETS coalesce EXPORT coalesceTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY include/coalesce DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# How this libcoalesce.a was built, next to config.hpp: plain nvcc and make builds read it too.
install(FILES ${coalesce_generated_include}/coalesce/detail/build_config.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/coalesce/detail)
set(coalesce_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/coalesce)
install(EXPORT coalesceTargets NAMESPACE coalesce:: DESTINATION ${coalesce_cmake_dir})
# coalesce::mpi in an export set of its own: the package config loads it only where MPI is found,
# so a project without MPI still finds coalesce.
if(COALESCE_WITH_MPI)
  set_target_properties(coalesce_mpi PROPERTIES EXPORT_NAME mpi)
  install(TARGETS coalesce_mpi EXPORT coalesceMpiTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(EXPORT coalesceMpiTargets NAMESPACE coalesce:: DESTINATION ${coalesce_cmake_dir})
endif()
configure_package_config_file(cmake/coalesceConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/coalesceConfig.cmake
                              INSTALL_DESTINATION ${coalesce_cmake_dir})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/coalesceConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/coalesceConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/coalesceConfigVersion.cmake
              cmake/coalesce_consumer.cmake
        DESTINATION ${coalesce_cmake_dir})
