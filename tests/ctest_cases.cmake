# Run after each build of mnemo_tests (tests/CMakeLists.txt): writes CTEST_FILE, which registers
# one ctest test per doctest case of the files in SOURCES (the files that can skip, so that a
# skip is reported per case), each run as `mnemo_tests --test-case=NAME`.
#   cmake -D EXE=... -D SOURCES=pattern,pattern -D CTEST_FILE=... -D WORKDIR=... -P ctest_cases.cmake
execute_process(COMMAND "${EXE}" "--source-file=${SOURCES}" --list-test-cases --no-version
                OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${EXE} --list-test-cases failed (${rc}): ${out}")
endif()
string(REPLACE ";" "\\;" out "${out}")  # a ';' in a name is caught by ctest test_case_names_run_under_ctest
string(REPLACE "\n" ";" lines "${out}")
set(script "")
foreach(name IN LISTS lines)
  if(name STREQUAL "" OR name MATCHES "^\\[doctest\\]" OR name MATCHES "^=+$")
    continue()
  endif()
  string(REPLACE "," "\\," filter "${name}")  # doctest splits filters at commas
  string(APPEND script "add_test([==[${name}]==] [==[${EXE}]==] [==[--test-case=${filter}]==])\n"
         "set_tests_properties([==[${name}]==] PROPERTIES WORKING_DIRECTORY [==[${WORKDIR}]==] TIMEOUT 600 "
         "SKIP_RETURN_CODE 77 ENVIRONMENT OMP_NUM_THREADS=1)\n")
endforeach()
file(WRITE "${CTEST_FILE}" "${script}")
