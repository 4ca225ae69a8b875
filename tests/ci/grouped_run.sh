#!/usr/bin/env bash
# grouped_run.sh MNEMO_TESTS CI_DIR: the per-case results of a grouped run (tests/main.cpp's
# MNEMO_CASE_RESULTS, run by CI_DIR/case_run.sh, read by CI_DIR/case_result.sh) report each case
# as it ended: a pass as passed, a failure as failed with the case's output, a skip as skipped
# with its reason, a case during which the process ended as failed, and later cases as not
# reached; the run itself fails only when it ended inside a case, naming it. It runs the fixture
# cases of tests/ci/test_grouped_cases.cpp (decorated skip: only --no-skip runs them).
set -uo pipefail
exe=$1 checker=$2/case_result.sh runner=$2/case_run.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAILED: $*"; fail=1; }
# expect NAME CODE TEXT...: the checker's exit code for NAME is CODE and its output holds each TEXT.
expect() {
  local name=$1 code=$2 out rc
  shift 2
  out=$(bash "$checker" "$tmp/r" "grouped run fixture: $name" "the fixture run" 2>&1)
  rc=$?
  [[ $rc == "$code" ]] || bad "'$name': exit $rc, expected $code; output: $out"
  for t in "$@"; do
    grep -qF -- "$t" <<<"$out" || bad "'$name': the output lacks '$t'; output: $out"
  done
}
mkdir -p "$tmp/r"
echo "an earlier run's log" >"$tmp/r/7.log"
echo "a file of the user's" >"$tmp/r/keep.txt"
# 1. A run to its end: exit 0 whatever its cases did, each case's outcome read back.
bash "$runner" "$tmp/r" "$exe" --no-skip --test-case='grouped run fixture: *' >"$tmp/run1.txt" 2>&1
rc=$?
[[ $rc == 0 ]] || bad "the run to its end exited $rc: $(cat "$tmp/run1.txt")"
grep -qF "5 test cases ran in this process: 3 passed, 1 failed, 1 skipped" "$tmp/run1.txt" ||
  bad "the run's summary: $(cat "$tmp/run1.txt")"
[[ -f "$tmp/r/complete" ]] || bad "no complete marker after a run to its end"
[[ ! -e "$tmp/r/7.log" ]] || bad "an earlier run's log was left to be read as this run's"
[[ -f "$tmp/r/keep.txt" ]] || bad "a file the run did not write was removed"
expect passes 0 "printed by the passing case"
expect fails 1 "printed before the failure" "written to stderr by the failing case" "CHECK( two == 3 )" "2 == 3"
expect skips 77 "SKIPPED: grouped run fixture: skips: the fixture's reason to skip"
expect "no such case" 1 "ran to its end without this case"
grep -qF "printed by the passing case" "$tmp/run1.txt" && bad "a case's output reached the run's own output"
# 2. A run that ends inside a case: that case failed with its output so far, later ones not reached.
MNEMO_GROUPED_FIXTURE_EXIT=1 bash "$runner" "$tmp/r" "$exe" --no-skip --test-case='grouped run fixture: *' >"$tmp/run2.txt" 2>&1
rc=$?
[[ $rc == 1 ]] || bad "a run that ended inside a case exited $rc: $(cat "$tmp/run2.txt")"
grep -qF "it ended inside the case 'grouped run fixture: ends the process', whose output so far was:" "$tmp/run2.txt" &&
  grep -qF "printed before the exit" "$tmp/run2.txt" || bad "the run that ended inside a case says: $(cat "$tmp/run2.txt")"
[[ ! -f "$tmp/r/complete" ]] || bad "a complete marker after a run that ended inside a case"
expect passes 0
expect "ends the process" 1 "printed before the exit" "started but did not end"
expect "after the end" 1 "ended before this case"
# 3. No run at all.
rm -rf "$tmp/r"
out=$(bash "$checker" "$tmp/r" "grouped run fixture: passes" "the fixture run" 2>&1)
[[ $? == 1 ]] && grep -qF "did not run" <<<"$out" || bad "with no results: $out"
((fail == 0)) && echo "grouped runs report each case as it ended"
exit $fail
