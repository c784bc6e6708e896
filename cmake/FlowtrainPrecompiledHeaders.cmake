# flowtrain_precompile_headers(TARGET LIBRARY|KIND)
#
# Gives TARGET a precompiled header of the standard and third-party headers most of its files
# include, so that each file compiles only its own code: parsing them was 1-2 s of a library
# file's compile and about 4 s of a test file's. A test program (KIND TEST for the layers'
# test binaries, TF_TEST for the TensorFlow suite's) also gets GoogleTest and GoogleMock, and
# reuses the header of the first program of its KIND (they are compiled alike, and most hold
# a file or two). Project headers stay out of it: a precompiled header is compiled before every
# file of the target, and a layer's files must not see headers of the layers above it.
# FLOWTRAIN_PRECOMPILE_HEADERS=OFF builds without, which also checks that every file includes
# what it uses.
option(FLOWTRAIN_PRECOMPILE_HEADERS "Precompile the common third-party headers of each library and test target" ON)

set(FLOWTRAIN_PRECOMPILED_LIBRARY_HEADERS
    <algorithm> <any> <atomic> <chrono> <cmath> <cstdint> <cstring> <filesystem> <functional>
    <map> <memory> <optional> <random> <set> <span> <string> <string_view> <thread>
    <unordered_map> <unordered_set> <utility> <vector>
    <Eigen/Core>
    <absl/container/flat_hash_map.h> <absl/container/inlined_vector.h>
    <absl/synchronization/mutex.h>
    <google/protobuf/arena.h> <google/protobuf/generated_message_reflection.h>
    <google/protobuf/map_field_inl.h> <google/protobuf/message.h> <google/protobuf/repeated_field.h>)
set(FLOWTRAIN_PRECOMPILED_TEST_HEADERS ${FLOWTRAIN_PRECOMPILED_LIBRARY_HEADERS}
    <gmock/gmock.h> <gtest/gtest.h>)

function(flowtrain_precompile_headers target kind)
  if(NOT FLOWTRAIN_PRECOMPILE_HEADERS)
    return()
  endif()
  if(kind STREQUAL "LIBRARY")
    target_precompile_headers(${target} PRIVATE ${FLOWTRAIN_PRECOMPILED_LIBRARY_HEADERS})
    return()
  endif()
  get_property(first GLOBAL PROPERTY FLOWTRAIN_PCH_${kind})
  if(first)
    target_precompile_headers(${target} REUSE_FROM ${first})
  else()
    set_property(GLOBAL PROPERTY FLOWTRAIN_PCH_${kind} ${target})
    target_precompile_headers(${target} PRIVATE ${FLOWTRAIN_PRECOMPILED_TEST_HEADERS})
  endif()
endfunction()
