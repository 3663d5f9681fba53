include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS arlab EXPORT arlabTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY include/arlab DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT arlabTargets NAMESPACE arlab:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/arlab)
configure_package_config_file(cmake/arlabConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/arlabConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/arlab)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/arlabConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/arlabConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/arlabConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/arlab)
if(TARGET arlab-bench)
  install(TARGETS arlab-bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
