#!/usr/bin/env bash
# ctest hashed_counts_tool: kernels/tools/hashed_counts.cpp (the packed forward without LibTorch,
# for docs/experiments/hashed_cachesim.sh) computes what the kernels compute on every path this
# CPU runs - AVX2 and AVX-512 bit for bit (kernels/hashed_lookup_cpu.h) - refuses bad flags with
# exit 2 naming the flag, times the forward's phases (--phases: the same checksum, a median line)
# and the table gradient's write pattern (--write-runs), and the cache-count script runs on it
# (skipped, exit 77, without valgrind).
# Usage: hashed_counts.sh TOOL SOURCE_DIR BUILD_DIR
set -u
tool=$1 root=$2 build=$3
fail=0
sum() { "$tool" --tokens 96 --dim 60 --bits 6 --calls 2 --tables "$1" --cpu-kernels "$2" | sed -n 's/^checksum sum(y) = //p'; }
for t in fp32 bf16; do
  s2=$(sum $t avx2 2>/dev/null) s5=$(sum $t avx512 2>/dev/null) sp=$(sum $t portable)
  echo "$t: avx2 ${s2:-n/a} avx512 ${s5:-n/a} portable $sp"
  [[ -n $sp ]] || { echo "FAILED: no checksum on the portable path"; fail=1; }
  if [[ -n $s2 && -n $s5 && $s2 != "$s5" ]]; then echo "FAILED: avx2 and avx512 differ"; fail=1; fi
  # The portable path rounds differently (separate multiply and add): equal to 6 digits.
  if [[ -n $s2 ]] && ! awk -v a="$s2" -v b="$sp" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-5 * (1 + (a < 0 ? -a : a))) }'; then
    echo "FAILED: avx2 $s2 vs portable $sp"; fail=1
  fi
done
for bad in "--tables fp64:--tables fp64 is unknown" "--dim 0:--dim 0 is not a whole number" "--bits:--bits needs a value" \
           "--frobnicate 1:unknown flag --frobnicate" "--dim 4 --bits 8:--dim must be at least --bits"; do
  args=${bad%%:*} msg=${bad#*:}
  # shellcheck disable=SC2086
  out=$("$tool" $args 2>&1); code=$?
  if [[ $code != 2 || $out != *"$msg"* ]]; then echo "FAILED: '$args' gave exit $code: $out"; fail=1; else echo "ok: '$args' -> exit 2"; fi
done
# --phases: the same y, and a line of medians with the three phases and the probe's share.
plain=$("$tool" --tokens 512 --dim 512 --bits 8 --calls 2 | sed -n 's/^checksum sum(y) = //p')
ph=$("$tool" --tokens 512 --dim 512 --bits 8 --calls 3 --phases --probe)
echo "$ph" | tail -2
[[ $(sed -n 's/^checksum sum(y) = //p' <<<"$ph") == "$plain" ]] || { echo "FAILED: --phases changed y"; fail=1; }
if [[ -n ${s5:-}${s2:-} ]] &&
  ! grep -Eq '^phases, median of 2 calls: codes [0-9.]+ ms .*fetch [0-9.]+ ms \(32\.0 MiB of slabs.*gathers [0-9.]+ ms \(64\.0 MiB of table pieces, [0-9.]+ GB/s, [0-9]+ % of the probe\)$' <<<"$ph"; then
  echo "FAILED: no phases line"; fail=1
fi
wr=$("$tool" --tokens 8 --dim 64 --bits 8 --calls 1 --write-runs)
if [[ $(uname -m) == x86_64 ]] && [[ $(grep -Ec '^non-temporal writes, runs of +[0-9]+ bytes 2 KiB apart: [0-9.]+ GB/s$' <<<"$wr") != 4 ]]; then
  echo "FAILED: --write-runs: $wr"; fail=1
fi
if ((fail)); then exit 1; fi
if ! command -v valgrind >/dev/null; then echo "hashed_counts_tool: cache counts skipped: valgrind is not installed"; exit 77; fi
# The script's scratch is its own mktemp folder, removed on exit: run it with TMPDIR at a folder
# holding a user's file, which must be all that is left there afterwards. That folder is this
# test's own mktemp folder, removed when the test exits.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "mine" >"$tmp/user-file.txt"
out=$(TMPDIR=$tmp bash "$root/docs/experiments/hashed_cachesim.sh" "$build" 256 64 4) ||
  { echo "FAILED: hashed_cachesim.sh: $out"; exit 1; }
echo "$out"
left=$(ls -A "$tmp")
if [[ $left != user-file.txt || $(cat "$tmp/user-file.txt") != mine ]]; then
  echo "FAILED: after hashed_cachesim.sh, TMPDIR holds: $left"; exit 1
fi
# Two rows, fp32 and bf16, each with lines brought to L1; bf16 moves half the table bytes, so fewer.
awk '$1 == "fp32" { f = $3 } $1 == "bf16" { b = $3 } END { exit !(f > 0 && b > 0 && b < f) }' <<<"$out" ||
  { echo "FAILED: expected fp32 and bf16 rows with L1 fills, fewer for bf16"; exit 1; }
