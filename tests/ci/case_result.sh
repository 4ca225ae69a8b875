#!/usr/bin/env bash
# case_result.sh DIR NAME RUN: one doctest case's ctest test, for the files whose cases run in one
# process (tests/CMakeLists.txt): prints what the case printed in the run RUN (the ctest test that
# ran the file with MNEMO_CASE_RESULTS=DIR, tests/main.cpp) and exits as the case ended: 0 passed,
# 77 skipped (ctest: Skipped, with the "SKIPPED: reason" line), 1 failed, or 1 with a message
# when the run has no result for it (it died in this case or before it, or did not run).
dir=$1 name=$2 run=$3
if [[ ! -f "$dir/index" ]]; then
  echo "no results in $dir: the test '$run' did not run or did not start a case (ctest runs it first, as this test's FIXTURES_REQUIRED)"
  exit 1
fi
n="" outcome=""
while IFS=$'\t' read -r k o nm; do
  if [[ "$nm" == "$name" ]]; then n=$k outcome=$o; fi
done <"$dir/index"
[[ -n "$n" && -f "$dir/$n.log" ]] && cat -- "$dir/$n.log"
case "$outcome" in
  passed) exit 0 ;;
  skipped) exit 77 ;;
  failed) exit 1 ;;
  started)
    echo "the case started but did not end: the process of '$run' died in it (a crash, an exit or its TIMEOUT); its output so far is above"
    exit 1 ;;
  *)
    if [[ -f "$dir/complete" ]]; then
      echo "'$run' ran to its end without this case: re-run CMake (cmake -S . -B build) after renaming a test case"
    else
      echo "'$run' ended before this case: it died in an earlier case, which its own test reports"
    fi
    exit 1 ;;
esac
