# `cmake --install` rules and the exported CMake package, so that another project can write
#
#   find_package(gcpstream CONFIG REQUIRED)
#   target_link_libraries(app PRIVATE gcpstream::gcpstream)
#
# against an installed prefix. Installed: the static library and the two static libraries of
# generated protobuf/gRPC code it links publicly (gcpstream_googleapis, gcpstream_proto), every
# header under gcpstream/ and every generated header (google/..., gcpstream/.../proto/...), all
# under include/ with their paths kept, plus lib/cmake/gcpstream/ (config, version, targets).
# The third-party libraries are not installed: the package config finds them on the consumer's
# side (see gcpstream-config.cmake.in).

# The name a consumer links, whichever way it gets gcpstream: gcpstream::gcpstream is the
# exported name of an installed package and an alias under add_subdirectory.
add_library(gcpstream::gcpstream ALIAS gcpstream)
set_target_properties(gcpstream_googleapis PROPERTIES EXPORT_NAME googleapis)
set_target_properties(gcpstream_proto PROPERTIES EXPORT_NAME proto)
# The headers need C++20: part of the usage requirements, so a consumer compiles with it.
target_compile_features(gcpstream PUBLIC cxx_std_20)

# Install rules by default only when gcpstream is the top-level project (not when a parent
# project pulls it in with add_subdirectory).
option(GCPSTREAM_INSTALL "Generate gcpstream's install rules" ${PROJECT_IS_TOP_LEVEL})
if(NOT GCPSTREAM_INSTALL)
  return()
endif()

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(GCPSTREAM_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/gcpstream"
    CACHE STRING "Where the gcpstream CMake package files are installed (relative to the prefix)")

install(TARGETS gcpstream gcpstream_googleapis gcpstream_proto
        EXPORT gcpstream-targets
        ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
        LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}")

install(DIRECTORY "${PROJECT_SOURCE_DIR}/gcpstream/"
        DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/gcpstream"
        FILES_MATCHING PATTERN "*.h")
# Generated headers: google/... from the Google API protos and gcpstream/... from our own.
install(DIRECTORY "${PROJECT_BINARY_DIR}/gen/"
        DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}"
        FILES_MATCHING PATTERN "*.h")

install(EXPORT gcpstream-targets
        NAMESPACE gcpstream::
        FILE gcpstream-targets.cmake
        DESTINATION "${GCPSTREAM_INSTALL_CMAKEDIR}")

configure_package_config_file(
    "${CMAKE_CURRENT_LIST_DIR}/gcpstream-config.cmake.in"
    "${PROJECT_BINARY_DIR}/gcpstream-config.cmake"
    INSTALL_DESTINATION "${GCPSTREAM_INSTALL_CMAKEDIR}")
# 0.x: a minor version may break the API, so only the same minor version is compatible.
write_basic_package_version_file(
    "${PROJECT_BINARY_DIR}/gcpstream-config-version.cmake"
    COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/gcpstream-config.cmake"
              "${PROJECT_BINARY_DIR}/gcpstream-config-version.cmake"
        DESTINATION "${GCPSTREAM_INSTALL_CMAKEDIR}")
