# Fails when a C++ file of the tree is not laid out as .clang-format says.
# Run as: cmake -DSOURCE_DIR=<repo> -P CheckFormat.cmake. Skips (printing SKIPPED) without
# clang-format 14, the version the layout was made with: other versions lay some lines out
# differently.
find_program(CLANG_FORMAT NAMES clang-format-14 clang-format)
if(NOT CLANG_FORMAT)
  message("SKIPPED: clang-format is not installed (scripts/setup installs it)")
  return()
endif()
execute_process(COMMAND ${CLANG_FORMAT} --version OUTPUT_VARIABLE version)
if(NOT version MATCHES "version 14\\.")
  message("SKIPPED: ${CLANG_FORMAT} is not clang-format 14: ${version}")
  return()
endif()
set(files "")
foreach(dir flowtrain tools examples bench tests fuzz)
  file(GLOB_RECURSE found ${SOURCE_DIR}/${dir}/*.cc ${SOURCE_DIR}/${dir}/*.h)
  list(APPEND files ${found})
endforeach()
execute_process(COMMAND ${CLANG_FORMAT} --style=file --dry-run --Werror ${files}
                WORKING_DIRECTORY ${SOURCE_DIR} RESULT_VARIABLE result ERROR_VARIABLE errors)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "Files not laid out as .clang-format says (fix: clang-format -i FILE):\n${errors}")
endif()
list(LENGTH files count)
message(STATUS "format ok: ${count} files")
