# Helpers shared by gcpstream's targets.

# Our own code is held to warnings-as-errors; generated code is not (see GoogleApis.cmake).
set(GCPSTREAM_WARNING_FLAGS -Wall -Wextra -Werror -Wno-missing-field-initializers)
set(GCPSTREAM_SANITIZER_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=undefined
                              -fno-omit-frame-pointer)

function(gcpstream_target_defaults target)
  target_compile_options(${target} PRIVATE ${GCPSTREAM_WARNING_FLAGS})
endfunction()

# Applies the sanitizer flags to a target (compile and link).
function(gcpstream_target_sanitize target)
  target_compile_options(${target} PRIVATE ${GCPSTREAM_SANITIZER_FLAGS})
  target_link_options(${target} PRIVATE ${GCPSTREAM_SANITIZER_FLAGS})
endfunction()

# Compiles the project's own .proto files under `dir` into a static library `target`.
# Imports are resolved against the source root, so a file is imported as
# "gcpstream/runtime/proto/x.proto".
function(gcpstream_proto_library target dir)
  file(GLOB_RECURSE _protos CONFIGURE_DEPENDS RELATIVE "${PROJECT_SOURCE_DIR}"
       "${PROJECT_SOURCE_DIR}/${dir}/*.proto")
  set(_gen_dir "${PROJECT_BINARY_DIR}/gen")
  set(_srcs "")
  foreach(_proto IN LISTS _protos)
    string(REGEX REPLACE "\\.proto$" "" _stem "${_proto}")
    add_custom_command(
      OUTPUT "${_gen_dir}/${_stem}.pb.cc" "${_gen_dir}/${_stem}.pb.h"
      COMMAND ${CMAKE_COMMAND} -E make_directory "${_gen_dir}"
      COMMAND protobuf::protoc "-I${GCPSTREAM_WKT_INCLUDE}" "-I${PROJECT_SOURCE_DIR}"
              "--cpp_out=${_gen_dir}" "${PROJECT_SOURCE_DIR}/${_proto}"
      DEPENDS "${PROJECT_SOURCE_DIR}/${_proto}" protobuf::protoc
      COMMENT "protoc ${_proto}"
      VERBATIM)
    list(APPEND _srcs "${_gen_dir}/${_stem}.pb.cc" "${_gen_dir}/${_stem}.pb.h")
  endforeach()
  if(NOT _srcs)
    add_library(${target} INTERFACE)
    return()
  endif()
  add_library(${target} STATIC ${_srcs})
  target_include_directories(${target} SYSTEM PUBLIC
      "$<BUILD_INTERFACE:${_gen_dir}>" "$<INSTALL_INTERFACE:include>")
  target_link_libraries(${target} PUBLIC protobuf::libprotobuf)
  target_compile_options(${target} PRIVATE -w -g0)
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
endfunction()
