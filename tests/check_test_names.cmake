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
# Each discovered command line must be the binary, one spec and
# `--warn NoTests`; the binary then reports, in one start, what each spec
# selects (tests/main.cc, --select-each: Catch2's own parser and filter).
# A command of another shape is reported once and its answer not read.
if(ncaptured GREATER 0)
  # (named after the include files: two checks may run at once)
  string(MD5 specs_id "${INCLUDE}")
  set(specs_file "${CMAKE_CURRENT_BINARY_DIR}/check_test_names-${specs_id}.specs")
  file(WRITE "${specs_file}" "")
  math(EXPR last "${ncaptured} - 1")
  foreach(i RANGE ${last})
    set(cmd ${cmd_${i}})
    list(LENGTH cmd n)
    set(shape_ok_${i} FALSE)
    set(spec "")
    if(n EQUAL 4)
      list(GET cmd 0 exe)
      list(GET cmd 1 spec)
      list(GET cmd 2 a2)
      list(GET cmd 3 a3)
      if(exe STREQUAL EXE AND a2 STREQUAL "--warn" AND a3 STREQUAL "NoTests"
         AND NOT spec MATCHES "\n")
        set(shape_ok_${i} TRUE)
      endif()
    endif()
    if(NOT shape_ok_${i})
      message(SEND_ERROR "ctest '${name_${i}}' runs '${cmd}', not '${EXE} <spec> --warn NoTests' "
                         "with a spec on one line")
      math(EXPR bad "${bad} + 1")
      set(spec "")
    endif()
    file(APPEND "${specs_file}" "${spec}\n")
  endforeach()
  execute_process(COMMAND "${EXE}" --select-each "${specs_file}"
                  OUTPUT_VARIABLE selected RESULT_VARIABLE rc)
  file(REMOVE "${specs_file}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "check_test_names: '${EXE} --select-each' failed (${rc})")
  endif()
  string(REPLACE ";" "<SEMICOLON>" selected "${selected}")
  string(REGEX REPLACE "\n$" "" selected "${selected}")
  string(REPLACE "\n" ";" selected "${selected}")
  list(LENGTH selected nselected)
  if(NOT nselected EQUAL ncaptured)
    message(FATAL_ERROR "check_test_names: ${ncaptured} specs, ${nselected} answers")
  endif()
  foreach(i RANGE ${last})
    if(NOT shape_ok_${i})
      continue()
    endif()
    list(GET selected ${i} got)
    string(REPLACE "<SEMICOLON>" ";" got "${got}")
    string(REPLACE "\t" " | " got "${got}")
    if(NOT got STREQUAL "1 | ${name_${i}}")
      message(SEND_ERROR "ctest '${name_${i}}' selects: '${got}'")
      math(EXPR bad "${bad} + 1")
    endif()
  endforeach()
endif()

if(bad GREATER 0)
  message(FATAL_ERROR "check_test_names: ${bad} problem(s) in ${nnames} test names")
endif()
message(STATUS "check_test_names: ${nnames} test cases, each run by exactly one ctest")
