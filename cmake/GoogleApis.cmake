# Generates C++ protobuf and gRPC code for the Google APIs gcpstream talks to.
#
# The .proto files come from the pinned npm package google-proto-files (fetched and verified by
# scripts/setup.sh into .deps/, never committed). We start from the API packages we need and
# follow `import` statements to compute the closure, so the list of files is never maintained by
# hand. The package also carries its own copies of google/protobuf/*.proto, some written in
# editions syntax that protoc 3.21 rejects: those are never compiled nor put on the include path
# ahead of the system's well-known types, which libprotobuf already contains.

set(GCPSTREAM_PROTO_ROOT "${PROJECT_SOURCE_DIR}/.deps/google-proto-files-6.0.1"
    CACHE PATH "Root of the google-proto-files package (holds google/...)")

set(_gcpstream_api_packages
    google/bigtable/v2
    google/bigtable/admin/v2
    google/pubsub/v1
    google/spanner/v1
    google/spanner/admin/database/v1
    google/spanner/admin/instance/v1
    google/cloud/bigquery/storage/v1
    google/cloud/tasks/v2)

if(NOT EXISTS "${GCPSTREAM_PROTO_ROOT}/google/pubsub/v1/pubsub.proto")
  message(FATAL_ERROR
    "Google API protos not found under ${GCPSTREAM_PROTO_ROOT}. Run scripts/setup.sh first.")
endif()

# Where the system's well-known types live (google/protobuf/*.proto).
find_path(GCPSTREAM_WKT_INCLUDE google/protobuf/descriptor.proto
          HINTS ${Protobuf_INCLUDE_DIRS} /usr/include REQUIRED)

# Breadth-first walk over imports. A file is "ours to compile" when it exists in the package and
# is not a well-known type.
set(_queue "")
foreach(pkg IN LISTS _gcpstream_api_packages)
  file(GLOB _protos RELATIVE "${GCPSTREAM_PROTO_ROOT}" "${GCPSTREAM_PROTO_ROOT}/${pkg}/*.proto")
  if(NOT _protos)
    message(FATAL_ERROR "no .proto files in ${GCPSTREAM_PROTO_ROOT}/${pkg}")
  endif()
  list(APPEND _queue ${_protos})
endforeach()

set(GCPSTREAM_GOOGLEAPIS_PROTOS "")
while(_queue)
  list(POP_FRONT _queue _proto)
  if(_proto IN_LIST GCPSTREAM_GOOGLEAPIS_PROTOS OR _proto MATCHES "^google/protobuf/")
    continue()
  endif()
  if(NOT EXISTS "${GCPSTREAM_PROTO_ROOT}/${_proto}")
    message(FATAL_ERROR "import ${_proto} not found under ${GCPSTREAM_PROTO_ROOT}")
  endif()
  list(APPEND GCPSTREAM_GOOGLEAPIS_PROTOS "${_proto}")
  file(STRINGS "${GCPSTREAM_PROTO_ROOT}/${_proto}" _imports REGEX "^import ")
  foreach(_line IN LISTS _imports)
    if(_line MATCHES "^import[ \t]+(public[ \t]+|weak[ \t]+)?\"([^\"]+)\"")
      list(APPEND _queue "${CMAKE_MATCH_2}")
    endif()
  endforeach()
endwhile()
list(SORT GCPSTREAM_GOOGLEAPIS_PROTOS)
list(LENGTH GCPSTREAM_GOOGLEAPIS_PROTOS _count)
message(STATUS "gcpstream: ${_count} Google API .proto files in the import closure")

set(_gen_dir "${PROJECT_BINARY_DIR}/gen")
set(_srcs "")
set(_hdrs "")
foreach(_proto IN LISTS GCPSTREAM_GOOGLEAPIS_PROTOS)
  string(REGEX REPLACE "\\.proto$" "" _stem "${_proto}")
  set(_outs "${_gen_dir}/${_stem}.pb.cc" "${_gen_dir}/${_stem}.pb.h")
  set(_plugin_args "")
  # Only files that declare a service get gRPC stubs.
  file(STRINGS "${GCPSTREAM_PROTO_ROOT}/${_proto}" _services REGEX "^service ")
  if(_services)
    list(APPEND _outs "${_gen_dir}/${_stem}.grpc.pb.cc" "${_gen_dir}/${_stem}.grpc.pb.h")
    set(_plugin_args "--grpc_out=${_gen_dir}"
                     "--plugin=protoc-gen-grpc=$<TARGET_FILE:gRPC::grpc_cpp_plugin>")
  endif()
  add_custom_command(
    OUTPUT ${_outs}
    COMMAND ${CMAKE_COMMAND} -E make_directory "${_gen_dir}"
    COMMAND protobuf::protoc
            "-I${GCPSTREAM_WKT_INCLUDE}" "-I${GCPSTREAM_PROTO_ROOT}"
            "--cpp_out=${_gen_dir}" ${_plugin_args}
            "${GCPSTREAM_PROTO_ROOT}/${_proto}"
    DEPENDS "${GCPSTREAM_PROTO_ROOT}/${_proto}" protobuf::protoc
    COMMENT "protoc ${_proto}"
    VERBATIM)
  foreach(_out IN LISTS _outs)
    if(_out MATCHES "\\.cc$")
      list(APPEND _srcs "${_out}")
    else()
      list(APPEND _hdrs "${_out}")
    endif()
  endforeach()
endforeach()

# Generate everything before compiling anything: generated files include one another.
add_custom_target(gcpstream_googleapis_gen DEPENDS ${_srcs} ${_hdrs})
add_library(gcpstream_googleapis STATIC ${_srcs} ${_hdrs})
add_dependencies(gcpstream_googleapis gcpstream_googleapis_gen)
target_include_directories(gcpstream_googleapis SYSTEM PUBLIC
    "$<BUILD_INTERFACE:${_gen_dir}>" "$<INSTALL_INTERFACE:include>")
target_link_libraries(gcpstream_googleapis PUBLIC gRPC::grpc++ protobuf::libprotobuf)
# Generated code: no warnings policy of ours, no debug info (it is large and never stepped into).
target_compile_options(gcpstream_googleapis PRIVATE -w -g0)
set_target_properties(gcpstream_googleapis PROPERTIES POSITION_INDEPENDENT_CODE ON)
