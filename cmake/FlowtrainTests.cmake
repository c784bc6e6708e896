# flowtrain_test_binary(BINARY LABEL label TIMEOUT seconds SOURCES file...)
#
# One GoogleTest binary linking the whole library (tests may use any layer to build their
# inputs) and tests/test_util.cc; its tests are registered with CTest under `label`.
# `flowtrain_tests` builds every test executable: these, and those tests/readme and tests/tf
# define themselves (a build of that target is enough to run the whole CTest suite).
set(FLOWTRAIN_FIXTURES_DIR ${PROJECT_SOURCE_DIR}/../shared/fixtures)
add_custom_target(flowtrain_tests)

# flowtrain_test_code(TARGET): how a test program's own files compile. In optimised builds at
# -O1: the code under test is the library, built as configured; a test file's compile took
# a third less than at -O2.
function(flowtrain_test_code target)
  target_compile_options(${target} PRIVATE $<$<CONFIG:Release,RelWithDebInfo,MinSizeRel>:-O1>)
endfunction()

function(flowtrain_test_binary binary)
  cmake_parse_arguments(ARG "" "LABEL;TIMEOUT" "SOURCES" ${ARGN})
  add_executable(${binary} ${ARG_SOURCES} ${PROJECT_SOURCE_DIR}/tests/test_util.cc)
  flowtrain_test_code(${binary})
  flowtrain_precompile_headers(${binary} TEST)
  target_link_libraries(${binary} PRIVATE flowtrain GTest::gtest GTest::gmock GTest::gtest_main)
  target_include_directories(${binary} PRIVATE ${PROJECT_SOURCE_DIR})
  target_compile_definitions(${binary} PRIVATE
      FLOWTRAIN_FIXTURES_DIR="${FLOWTRAIN_FIXTURES_DIR}"
      FLOWTRAIN_BINARY_DIR="${PROJECT_BINARY_DIR}")
  # One label each: a ";" list would be split into separate PROPERTIES arguments.
  gtest_discover_tests(${binary} DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 60
                       PROPERTIES LABELS ${ARG_LABEL} TIMEOUT ${ARG_TIMEOUT})
  add_dependencies(flowtrain_tests ${binary})
endfunction()
