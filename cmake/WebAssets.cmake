# The dashboard's static files (docs/dashboard.md): the page from web/ and the charting and
# graph-drawing libraries from the pinned npm packages scripts/setup.sh unpacks into .deps/,
# copied into ${CMAKE_BINARY_DIR}/web at build time. Nothing is fetched at run time.
set(GCPSTREAM_DEPS_DIR "${PROJECT_SOURCE_DIR}/.deps")
set(GCPSTREAM_WEB_DIR "${CMAKE_BINARY_DIR}/web" CACHE PATH
    "Where the build puts the dashboard's files (the library's default assets folder)")

file(GLOB GCPSTREAM_WEB_PAGE CONFIGURE_DEPENDS
     "${PROJECT_SOURCE_DIR}/web/*.html" "${PROJECT_SOURCE_DIR}/web/*.js"
     "${PROJECT_SOURCE_DIR}/web/*.css")
set(GCPSTREAM_WEB_VENDOR
    "${GCPSTREAM_DEPS_DIR}/uplot-1.6.32/dist/uPlot.iife.min.js"
    "${GCPSTREAM_DEPS_DIR}/uplot-1.6.32/dist/uPlot.min.css"
    "${GCPSTREAM_DEPS_DIR}/cytoscape-3.35.0/dist/cytoscape.min.js"
    "${GCPSTREAM_DEPS_DIR}/cytoscape-dagre-4.0.1/dist/cytoscape-dagre.js")
foreach(vendored IN LISTS GCPSTREAM_WEB_VENDOR)
  if(NOT EXISTS "${vendored}")
    message(FATAL_ERROR "${vendored} is missing: run scripts/setup.sh (or scripts/setup.sh --deps)")
  endif()
endforeach()

set(_web_outputs)
foreach(src IN LISTS GCPSTREAM_WEB_PAGE GCPSTREAM_WEB_VENDOR)
  get_filename_component(_name "${src}" NAME)
  set(_out "${GCPSTREAM_WEB_DIR}/${_name}")
  add_custom_command(OUTPUT "${_out}"
                     COMMAND ${CMAKE_COMMAND} -E copy_if_different "${src}" "${_out}"
                     DEPENDS "${src}" VERBATIM)
  list(APPEND _web_outputs "${_out}")
endforeach()
add_custom_target(gcpstream_web_assets ALL DEPENDS ${_web_outputs})
