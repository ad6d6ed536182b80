# QsInstall.cmake: what `cmake --install build --prefix P` puts under P, so
# that a program outside qs's tree can use it (docs/api.md, "Using qs in a
# program"):
#
#   include/qs/...                the public headers (and the few of common/
#                                 they include)
#   lib/libqs-hardware.a, libqs-software.a and the libraries of common/
#                                 they link (static, as in the tree)
#   bin/qs-pageserver, qs-evolve, qs-inspect (and qs-inspect-software), qs-schema-gen
#   share/qs/schema-gen/          the schema generator (qs_schema_gen.py)
#   lib/cmake/qs/                 the CMake package: find_package(qs CONFIG)
#                                 gives qs::qs (hardware mode), qs::software
#                                 and qs_add_schema(<target>)
#   lib/pkgconfig/qs.pc           for builds without CMake (hardware mode)
include_guard(GLOBAL)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(QS_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/qs")
set(QS_INSTALL_SCHEMA_GEN_DIR "${CMAKE_INSTALL_DATADIR}/qs/schema-gen")

install(TARGETS qs-hardware qs-software qs_base qs_format qs_wire qs_bdb EXPORT qsTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT qsTargets NAMESPACE qs:: DESTINATION ${QS_INSTALL_CMAKEDIR})
install(TARGETS qs-pageserver qs-evolve qs-inspect qs-inspect-software RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

install(DIRECTORY ${PROJECT_SOURCE_DIR}/libqs/include/qs DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# The headers of common/ that the public ones include.
install(FILES ${PROJECT_SOURCE_DIR}/common/qs/base/error.hpp ${PROJECT_SOURCE_DIR}/common/qs/base/pause_point.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/qs/base)
install(FILES ${PROJECT_SOURCE_DIR}/common/qs/format/members.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/qs/format)

install(FILES ${PROJECT_SOURCE_DIR}/schema-gen/qs_schema_gen.py DESTINATION ${QS_INSTALL_SCHEMA_GEN_DIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/schema-gen/qs_schema DESTINATION ${QS_INSTALL_SCHEMA_GEN_DIR}
        FILES_MATCHING PATTERN "*.py")
install(FILES ${PROJECT_SOURCE_DIR}/schema-gen/cmake/QsSchema.cmake DESTINATION ${QS_INSTALL_CMAKEDIR})
# The generator from the command line (a build that does not use CMake).
configure_file(${PROJECT_SOURCE_DIR}/cmake/qs-schema-gen.in ${PROJECT_BINARY_DIR}/qs-schema-gen @ONLY)
install(PROGRAMS ${PROJECT_BINARY_DIR}/qs-schema-gen DESTINATION ${CMAKE_INSTALL_BINDIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/qsConfig.cmake.in ${PROJECT_BINARY_DIR}/qsConfig.cmake
                              INSTALL_DESTINATION ${QS_INSTALL_CMAKEDIR}
                              PATH_VARS CMAKE_INSTALL_INCLUDEDIR QS_INSTALL_SCHEMA_GEN_DIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/qsConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/qsConfig.cmake ${PROJECT_BINARY_DIR}/qsConfigVersion.cmake
        DESTINATION ${QS_INSTALL_CMAKEDIR})

get_filename_component(QS_BDB_LIBRARY_DIR "${BDB_CXX_LIBRARY}" DIRECTORY)
get_filename_component(QS_BDB_LIBRARY_NAME "${BDB_CXX_LIBRARY}" NAME_WLE)
string(REGEX REPLACE "^lib" "" QS_BDB_LIBRARY_NAME "${QS_BDB_LIBRARY_NAME}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/qs.pc.in ${PROJECT_BINARY_DIR}/qs.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/qs.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
