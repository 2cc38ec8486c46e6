# Every Catch2 test case must reach ctest as exactly one test that runs it.
# catch_discover_tests() lists the names one per line and turns the list
# into a CMake list, so a name containing ';' becomes two ctest entries whose
# specs match nothing: they "pass" without running. This check fails on
#   - any test case name containing ';', and
#   - any discovered ctest whose own command line (as catch_discover_tests
#     wrote it) selects anything but exactly the test case of its name.
# Usage: cmake -DEXE=<simcache_tests> -DINCLUDE=<ctest include file>[|<another>]
#              -P check_test_names.cmake
# (one include file per catch_discover_tests() call: tests/CMakeLists.txt
# discovers the [slow] test cases, the [matrix] one, the [refits] ones and
# the rest apart)
cmake_minimum_required(VERSION 3.25)
if(NOT EXISTS "${EXE}")
  message(FATAL_ERROR "check_test_names: ${EXE} does not exist")
endif()

execute_process(COMMAND "${EXE}" --list-test-names-only
                OUTPUT_VARIABLE listing RESULT_VARIABLE rc)
# The exit status is the number of tests listed (capped at 255).
if(rc EQUAL 0 OR NOT rc MATCHES "^[0-9]+$")
  message(FATAL_ERROR "check_test_names: '${EXE} --list-test-names-only' listed no tests (${rc})")
endif()

# Work on the raw text: a ';' must not be read as a CMake list separator.
string(REPLACE ";" "<SEMICOLON>" listing "${listing}")
string(REPLACE "\n" ";" names "${listing}")
list(FILTER names EXCLUDE REGEX "^$")
set(bad 0)
foreach(n IN LISTS names)
  if(n MATCHES "<SEMICOLON>")
    string(REPLACE "<SEMICOLON>" ";" shown "${n}")
    message(SEND_ERROR "test name contains ';' (ctest would split it and run nothing): ${shown}")
    math(EXPR bad "${bad} + 1")
  endif()
endforeach()
list(LENGTH names nnames)

# Replay the discovered tests: capture each add_test() instead of adding it.
set(captured "")
set(ncaptured 0)
function(add_test name)
  math(EXPR i "${ncaptured}")
  set(cmd_${i} "${ARGN}" PARENT_SCOPE)
  set(name_${i} "${name}" PARENT_SCOPE)
  math(EXPR i "${i} + 1")
  set(ncaptured ${i} PARENT_SCOPE)
endfunction()
function(set_tests_properties)
endfunction()
string(REPLACE "|" ";" includes "${INCLUDE}")
foreach(f IN LISTS includes)
  include("${f}")
endforeach()

if(NOT ncaptured EQUAL nnames)
  message(SEND_ERROR "ctest has ${ncaptured} discovered tests, the binary ${nnames} test cases")
  math(EXPR bad "${bad} + 1")
endif()
if(ncaptured GREATER 0)
  math(EXPR last "${ncaptured} - 1")
  foreach(i RANGE ${last})
    set(cmd ${cmd_${i}})
    execute_process(COMMAND ${cmd} --list-test-names-only
                    OUTPUT_VARIABLE out RESULT_VARIABLE rc)
    string(REGEX REPLACE "\n$" "" out "${out}")
    if(NOT rc EQUAL 1 OR NOT out STREQUAL "${name_${i}}")
      string(REPLACE "\n" " | " out "${out}")
      message(SEND_ERROR "ctest '${name_${i}}' selects ${rc} test case(s): '${out}'")
      math(EXPR bad "${bad} + 1")
    endif()
  endforeach()
endif()

if(bad GREATER 0)
  message(FATAL_ERROR "check_test_names: ${bad} problem(s) in ${nnames} test names")
endif()
message(STATUS "check_test_names: ${nnames} test cases, each run by exactly one ctest")
