# SPDX-License-Identifier: BSD-3-Clause
# Run after a test executable is linked (finecast_gtest_batches in tests/CMakeLists.txt): lists its
# GoogleTest tests and writes OUT, which sets `batch_names` and `batch_filters` for ctest, one
# batch per test suite, or per BATCH consecutive tests of a suite when BATCH > 0.
#   cmake -D EXE=<test executable> -D OUT=<file> -D BATCH=<n> -P gtest_batches.cmake
foreach(var EXE OUT BATCH)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "gtest_batches.cmake: -D ${var}=... is required")
  endif()
endforeach()

execute_process(COMMAND "${EXE}" --gtest_list_tests OUTPUT_VARIABLE listing ERROR_VARIABLE errors
                RESULT_VARIABLE status TIMEOUT 60)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "gtest_batches.cmake: '${EXE} --gtest_list_tests' failed (${status}):\n${errors}")
endif()

# GoogleTest's listing: "Suite." lines, each followed by its "  Test" lines; a parameterised
# suite or test carries a "  # GetParam() = ..." comment, dropped here (it may hold brackets,
# which a CMake list does not split inside).
string(REGEX REPLACE " *#[^\n]*" "" listing "${listing}")
string(REPLACE ";" "" listing "${listing}")
string(REPLACE "\n" ";" lines "${listing}")
set(suites "")
foreach(line IN LISTS lines)
  if(line MATCHES "^([^ ].*)\\.$")
    set(suite "${CMAKE_MATCH_1}")
    list(APPEND suites "${suite}")
    set("tests_${suite}" "")
  elseif(line MATCHES "^  ([^ ]+)$")
    set(test "${suite}.${CMAKE_MATCH_1}")
    # A batch names its tests in --gtest_filter, where ':' separates patterns and '-' starts the
    # negative ones: a test whose name holds either would be run by no batch, or by a wrong one.
    if(test MATCHES "[:-]")
      message(FATAL_ERROR "gtest_batches.cmake: test '${test}' of ${EXE} has ':' or '-' in its name, which "
                          "--gtest_filter cannot name; rename it")
    endif()
    list(APPEND "tests_${suite}" "${test}")
  endif()
endforeach()

set(text "# Written by tests/support/gtest_batches.cmake from '${EXE} --gtest_list_tests'.\n")
string(APPEND text "set(batch_names \"\")\nset(batch_filters \"\")\n")
foreach(suite IN LISTS suites)
  list(LENGTH "tests_${suite}" count)
  if(BATCH LESS_EQUAL 0 OR count LESS_EQUAL BATCH)
    string(APPEND text "list(APPEND batch_names [==[${suite}]==])\n")
    string(APPEND text "list(APPEND batch_filters [==[${suite}.*]==])\n")
    continue()
  endif()
  math(EXPR parts "(${count} + ${BATCH} - 1) / ${BATCH}")
  foreach(part RANGE 1 ${parts})
    math(EXPR first "(${part} - 1) * ${BATCH}")
    math(EXPR last "${first} + ${BATCH} - 1")
    if(last GREATER_EQUAL count)
      math(EXPR last "${count} - 1")
    endif()
    set(filter "")
    foreach(i RANGE ${first} ${last})
      list(GET "tests_${suite}" ${i} name)
      if(filter)
        string(APPEND filter ":")
      endif()
      string(APPEND filter "${name}")
    endforeach()
    string(APPEND text "list(APPEND batch_names [==[${suite}-${part}of${parts}]==])\n")
    string(APPEND text "list(APPEND batch_filters [==[${filter}]==])\n")
  endforeach()
endforeach()
file(WRITE "${OUT}" "${text}")
