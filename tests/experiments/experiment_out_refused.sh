#!/usr/bin/env bash
# ctests gpu_text_runs_out and copy_curriculum_out: an experiment script of docs/experiments
# (gpu_text_runs.sh, copy_curriculum.sh) writes only into a new or empty OUT (and its own mktemp
# folder). An OUT that holds a user's files (or is a file) is refused with exit 2 before
# anything runs or is written, and is left exactly as it was. The test's own scratch is its
# mktemp folder, removed by its trap.
# Usage: experiment_out_refused.sh SOURCE_DIR SCRIPT (a file name in docs/experiments)
set -u
root=$1
script=docs/experiments/$2
tmp=$(mktemp -d) || exit 1  # never run on (or delete) an empty path
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/out/logs"
echo "mine" >"$tmp/out/logs/notes.txt"
echo "mine too" >"$tmp/out/file.txt"
before=$(cd "$tmp/out" && find . -printf '%p %s\n' | sort)
msg=$(cd "$root" && OUT="$tmp/out" bash "$script" 2>&1); code=$?
after=$(cd "$tmp/out" && find . -printf '%p %s\n' | sort)
fail=0
[[ $code == 2 ]] || { echo "FAILED: exit $code, expected 2: $msg"; fail=1; }
[[ $msg == *"OUT=$tmp/out is not an empty folder"* ]] || { echo "FAILED: message: $msg"; fail=1; }
[[ $before == "$after" && $(cat "$tmp/out/logs/notes.txt") == mine ]] || { echo "FAILED: OUT changed: $after"; fail=1; }
# A file as OUT: refused the same way, left alone.
echo "data" >"$tmp/afile"
msg=$(cd "$root" && OUT="$tmp/afile" bash "$script" 2>&1); code=$?
[[ $code == 2 && $(cat "$tmp/afile") == data ]] || { echo "FAILED: a file as OUT gave exit $code: $msg"; fail=1; }
# gpu_text_runs.sh removes one folder, recursively: the mktemp folder it made. With TMPDIR at a
# folder holding a user's file and a new OUT, off a GPU machine it stops (exit 2) after making
# that folder: afterwards TMPDIR holds the user's file alone and OUT was not created. (On a GPU
# machine the script would build and train for real, so this part is left out there.)
if [[ $2 == gpu_text_runs.sh ]] && ! nvidia-smi -L >/dev/null 2>&1; then
  mkdir "$tmp/tmpdir"; echo "mine" >"$tmp/tmpdir/user-file.txt"
  msg=$(cd "$root" && TMPDIR="$tmp/tmpdir" OUT="$tmp/new-out" bash "$script" 2>&1); code=$?
  [[ $code == 2 && $msg == *"no NVIDIA GPU here"* ]] || { echo "FAILED: off a GPU, exit $code: $msg"; fail=1; }
  [[ $(ls -A "$tmp/tmpdir") == user-file.txt && $(cat "$tmp/tmpdir/user-file.txt") == mine ]] ||
    { echo "FAILED: TMPDIR holds: $(ls -A "$tmp/tmpdir")"; fail=1; }
  [[ ! -e $tmp/new-out ]] || { echo "FAILED: OUT was created off a GPU machine"; fail=1; }
fi
((fail)) && exit 1
echo "ok: $2: a non-empty OUT and a file as OUT are refused (exit 2) and left unchanged"
