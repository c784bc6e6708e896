# flowtrain_layer(NAME DEPS dep... [WHOLE])
#
# Builds flowtrain/NAME/**/*.cc (tests and benchmarks excepted) into the static library
# flowtrain_NAME that links only DEPS, so a layer that reaches upward fails to link instead of
# quietly depending on it. A DEPS entry naming a flowtrain layer must come before NAME in
# FLOWTRAIN_LAYERS. WHOLE marks layers holding static registrations (ops, kernels):
# whoever links them takes every object, so no registration is dropped by the linker.
# Tests named flowtrain/NAME/**/*_test.cc become the binary flowtrain_NAME_tests.
set(FLOWTRAIN_LAYER_TARGETS "")

function(flowtrain_layer name)
  cmake_parse_arguments(ARG "WHOLE" "" "DEPS" ${ARGN})
  list(FIND FLOWTRAIN_LAYERS ${name} rank)
  if(rank LESS 0)
    message(FATAL_ERROR "flowtrain_layer(${name}): not in FLOWTRAIN_LAYERS")
  endif()
  foreach(dep IN LISTS ARG_DEPS)
    if(dep MATCHES "^flowtrain_(.+)$")
      list(FIND FLOWTRAIN_LAYERS ${CMAKE_MATCH_1} dep_rank)
      if(dep_rank LESS 0 OR NOT dep_rank LESS rank)
        message(FATAL_ERROR "flowtrain_layer(${name}): ${dep} is not a layer before ${name}")
      endif()
    endif()
  endforeach()
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/flowtrain/${name}/*.cc)
  list(FILTER sources EXCLUDE REGEX "_(test|bench)\\.cc$")
  set(target flowtrain_${name})
  if(NOT sources)
    return()
  endif()
  add_library(${target} STATIC ${sources})
  flowtrain_precompile_headers(${target} LIBRARY)
  target_include_directories(${target} PUBLIC
      $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
      $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}>
      $<INSTALL_INTERFACE:include>)
  set(deps "")
  foreach(dep IN LISTS ARG_DEPS)
    if(TARGET ${dep})
      get_target_property(dep_whole ${dep} FLOWTRAIN_WHOLE)
      if(dep_whole)
        # The alias (flowtrain::NAME) is also the exported name, so the installed package's
        # link line names the installed library.
        string(REPLACE "flowtrain_" "flowtrain::" dep_alias ${dep})
        list(APPEND deps "$<LINK_LIBRARY:WHOLE_ARCHIVE,${dep_alias}>")
      else()
        list(APPEND deps ${dep})
      endif()
    elseif(NOT dep MATCHES "^flowtrain_")
      list(APPEND deps ${dep})
    endif()
  endforeach()
  target_link_libraries(${target} PUBLIC ${deps})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name} FLOWTRAIN_WHOLE "${ARG_WHOLE}")
  add_library(flowtrain::${name} ALIAS ${target})
  if(ARG_WHOLE)
    set(FLOWTRAIN_LAYER_TARGETS ${FLOWTRAIN_LAYER_TARGETS} "$<LINK_LIBRARY:WHOLE_ARCHIVE,flowtrain::${name}>" PARENT_SCOPE)
  else()
    set(FLOWTRAIN_LAYER_TARGETS ${FLOWTRAIN_LAYER_TARGETS} ${target} PARENT_SCOPE)
  endif()
  set(FLOWTRAIN_LAYERS_BUILT ${FLOWTRAIN_LAYERS_BUILT} ${name} PARENT_SCOPE)
endfunction()

define_property(TARGET PROPERTY FLOWTRAIN_WHOLE
    BRIEF_DOCS "layer holds static registrations" FULL_DOCS "see flowtrain_layer")
