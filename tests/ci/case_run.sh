#!/usr/bin/env bash
# case_run.sh DIR COMMAND...: the ctest test that runs one file's doctest cases in one process
# (tests/CMakeLists.txt, ctest_cases.cmake): runs COMMAND (mnemo_tests --source-file=...) with
# MNEMO_CASE_RESULTS=DIR, which sends each case's output to DIR and its outcome to DIR/index
# (tests/main.cpp), read back by each case's own ctest test (tests/ci/case_result.sh). Passes when
# the run got through its cases, whatever they did; when it ended inside a case (a crash, an
# exit, a kill), fails naming that case, with the case's output so far.
dir=$1
shift
MNEMO_CASE_RESULTS="$dir" "$@"
rc=$?
[[ -f "$dir/complete" ]] && exit 0
echo "the run ended (exit $rc) before the end of its cases; no case after this point has a result"
last=$(tail -n 1 "$dir/index" 2>/dev/null)
if [[ "$last" == *$'\t'started$'\t'* ]]; then
  n=${last%%$'\t'*}
  echo "it ended inside the case '${last#*$'\t'started$'\t'}', whose output so far was:"
  cat -- "$dir/$n.log" 2>/dev/null
fi
exit 1
