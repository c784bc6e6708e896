# Fails when a file in one layer includes a header of a layer listed after it (docs/design.md §1).
# Run as: cmake -DSOURCE_DIR=<repo> -DLAYERS=core,proto,... -P CheckLayering.cmake, LAYERS being
# FLOWTRAIN_LAYERS of the top CMakeLists.txt in order.
string(REPLACE "," ";" order "${LAYERS}")
if(NOT order)
  message(FATAL_ERROR "CheckLayering: pass -DLAYERS=<the layers, in order, comma separated>")
endif()
set(failures "")
foreach(layer IN LISTS order)
  list(FIND order ${layer} rank)
  file(GLOB_RECURSE files ${SOURCE_DIR}/flowtrain/${layer}/*.h ${SOURCE_DIR}/flowtrain/${layer}/*.cc
                  ${SOURCE_DIR}/flowtrain/${layer}/*.proto)
  foreach(file IN LISTS files)
    if(file MATCHES "_test\\.cc$")
      continue()  # Tests may use anything to build their inputs.
    endif()
    file(STRINGS ${file} lines REGEX "^[ \t]*(#include|import)[ \t]+\"flowtrain/")
    foreach(line IN LISTS lines)
      string(REGEX MATCH "flowtrain/([a-z_]+)/" _ "${line}")
      set(target_layer ${CMAKE_MATCH_1})
      list(FIND order "${target_layer}" target_rank)
      if(target_rank GREATER rank)
        list(APPEND failures "${file}: ${layer} must not include ${target_layer}: ${line}")
      endif()
      # Installed headers cannot include headers that are not installed.
      if(file MATCHES "\\.h$" AND NOT file MATCHES "/internal/" AND NOT file MATCHES "_test_[^/]*\\.h$"
         AND line MATCHES "/internal/")
        list(APPEND failures "${file}: a public header must not include an internal one: ${line}")
      endif()
    endforeach()
  endforeach()
endforeach()
if(failures)
  list(JOIN failures "\n" text)
  message(FATAL_ERROR "Layering violations:\n${text}")
endif()
message(STATUS "layering ok")
