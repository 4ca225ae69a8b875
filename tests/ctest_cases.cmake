# Run after each build of mnemo_tests (tests/CMakeLists.txt): writes CTEST_FILE, which registers,
# for each file in SOURCES (the files that can skip), one ctest test that runs the file's doctest
# cases in one process with MNEMO_CASE_RESULTS (tests/main.cpp, through RUNNER: tests/ci/case_run.sh),
# and one ctest test per case, named as the case, that reports the case's outcome from that run (tests/ci/case_result.sh:
# passed, failed with its output, or skipped with its reason) and requires the run as a fixture,
# so `ctest -R 'NAME'` runs the file's process first. Each file's run gets a COST (ctest starts
# the costliest first): the sum of its cases' entries in COSTS (tests/ci/ctest_costs.txt).
#   cmake -D EXE=... -D SOURCES=pattern,pattern -D CTEST_FILE=... -D WORKDIR=...
#         -D RUNNER=... -D CHECKER=... -D COSTS=... -P ctest_cases.cmake
cmake_policy(VERSION 3.16)  # a script (-P) starts with old policies: IN_LIST
execute_process(COMMAND "${EXE}" "--source-file=${SOURCES}" --list-test-cases --reporters=xml --no-version
                OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${EXE} --list-test-cases failed (${rc}): ${out}")
endif()
# The measured seconds per test name (ctest's cost file: "NAME RUNS SECONDS" per line).
set(cost_names "")
set(cost_values "")
if(EXISTS "${COSTS}")
  file(STRINGS "${COSTS}" cost_lines)
  foreach(line IN LISTS cost_lines)
    if(line MATCHES "^(.*) [0-9]+ ([0-9.]+)$")
      list(APPEND cost_names "${CMAKE_MATCH_1}")
      list(APPEND cost_values "${CMAKE_MATCH_2}")
    endif()
  endforeach()
endif()
string(REPLACE ";" "\\;" out "${out}")  # a ';' in a name is caught by ctest test_case_names_run_under_ctest
string(REPLACE "\n" ";" lines "${out}")
set(files "")
foreach(line IN LISTS lines)
  # (a case decorated doctest::skip() runs only with --no-skip: tests/ci/test_grouped_cases.cpp)
  if(NOT line MATCHES "^ *<TestCase name=\"(.*)\" filename=\"([^\"]*)\" line=\"[0-9]+\" skipped=\"false\"")
    continue()
  endif()
  set(name "${CMAKE_MATCH_1}")
  set(file "${CMAKE_MATCH_2}")
  string(REPLACE "&quot;" "\"" name "${name}")  # doctest's XML escapes, &amp; last
  string(REPLACE "&lt;" "<" name "${name}")
  string(REPLACE "&gt;" ">" name "${name}")
  string(REPLACE "&amp;" "&" name "${name}")
  # The file as compiled: absolute in a unity batch, relative to the build folder alone.
  if(NOT file MATCHES "(^|/)tests/([^/]+/[^/]+)$")
    message(FATAL_ERROR "test case '${name}' is in ${file}, not in a folder of tests/")
  endif()
  set(rel "${CMAKE_MATCH_2}")
  string(MAKE_C_IDENTIFIER "${rel}" key)
  if(NOT key IN_LIST files)
    list(APPEND files "${key}")
    set(rel_${key} "${rel}")
    set(cases_${key} "")
    set(cost_${key} 0)
  endif()
  list(APPEND cases_${key} "${name}")
  list(FIND cost_names "${name}" i)
  if(NOT i EQUAL -1)
    list(GET cost_values ${i} c)
    string(REGEX REPLACE "[.].*" "" c "${c}")  # whole seconds are enough
    math(EXPR cost_${key} "${cost_${key}} + ${c}")
  endif()
endforeach()
set(script "")
foreach(key IN LISTS files)
  set(rel "${rel_${key}}")
  list(LENGTH cases_${key} n)
  set(run "${rel}: its ${n} test cases in one process, each reported by name")
  set(dir "${WORKDIR}/case-results/${key}")
  list(FIND cost_names "${run}" i)
  if(NOT i EQUAL -1)
    list(GET cost_values ${i} cost_${key})
  endif()
  string(APPEND script "add_test([==[${run}]==] bash [==[${RUNNER}]==] [==[${dir}]==] [==[${EXE}]==] "
         "[==[--source-file=*tests/${rel}]==])\n"
         "set_tests_properties([==[${run}]==] PROPERTIES WORKING_DIRECTORY [==[${WORKDIR}]==] TIMEOUT 1800 "
         "FIXTURES_SETUP [==[${key}]==] COST ${cost_${key}} ENVIRONMENT OMP_NUM_THREADS=1)\n")
  foreach(name IN LISTS cases_${key})
    string(APPEND script "add_test([==[${name}]==] bash [==[${CHECKER}]==] [==[${dir}]==] [==[${name}]==] [==[${run}]==])\n"
           "set_tests_properties([==[${name}]==] PROPERTIES FIXTURES_REQUIRED [==[${key}]==] SKIP_RETURN_CODE 77)\n")
  endforeach()
endforeach()
file(WRITE "${CTEST_FILE}" "${script}")
