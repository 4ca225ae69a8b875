#!/usr/bin/env bash
# What one call of the hashed layer's packed CPU forward moves through the caches, counted by
# valgrind's cache simulator (callgrind --cache-sim=yes) on build/kernels/mnemo_hashed_counts
# (kernels/tools/hashed_counts.cpp), for docs/benchmarks.md ("Counted").
#
#   bash docs/experiments/hashed_cachesim.sh BUILD_DIR [N] [D] [TAU]
#
# The simulator models one first-level data cache (D1) and one last-level cache (LL). Two runs
# per case give two levels of this CPU: LL = the 1 MiB L2 (its misses are the bytes fetched
# from beyond L2), and LL = a 32 MiB L3 (its misses are the bytes from DRAM). D1 misses are the
# 64-byte lines brought to L1 from L2 or beyond. Geometry: Zen 5 (family 26) core, L1d 48 KiB
# 12-way, L2 1 MiB 16-way, L3 32 MiB 16-way (per CCD; a VM shares it). valgrind does not decode
# AVX-512, so the AVX2 path is counted; it reads the same packed slabs in the same order as the
# AVX-512 path (kernels/hashed_lookup_cpu_simd.inc, one source for both), two 32-byte loads where
# AVX-512 makes one 64-byte load: the lines moved are the same. Software prefetches are not
# simulated as accesses: a line they would bring is counted as a miss at its first load.
# A call's counts are those of a steady-state call: (counts of 3 calls - counts of 1) / 2.
set -euo pipefail
build=${1:?usage: hashed_cachesim.sh BUILD_DIR [N] [D] [TAU]}
n=${2:-2048} d=${3:-512} tau=${4:-8}
exe=$build/kernels/mnemo_hashed_counts
[[ -x $exe ]] || { echo "no $exe: build the target mnemo_hashed_counts (ninja -C $build mnemo_hashed_counts)" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "valgrind is not installed: apt-get install valgrind" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
d1=49152,12,64
declare -A ll=([L2]=1048576,16,64 [L3]=33554432,16,64)

# totals line of a callgrind run: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw
count() {  # tables level calls
  local out=$work/$1-$2-$3.out
  valgrind --tool=callgrind --cache-sim=yes --I1=32768,8,64 --D1=$d1 --LL="${ll[$2]}" --collect-atstart=no \
    --toggle-collect='mnemo::kernels::hashed_lookup_forward_packed_cpu*' --callgrind-out-file="$out" \
    "$exe" --cpu-kernels avx2 --tokens "$n" --dim "$d" --bits "$tau" --tables "$1" --calls "$3" >"$work/log" 2>&1 ||
    { cat "$work/log" >&2; exit 1; }
  awk '/^totals:/ {print $2, $3, $4, $5, $6, $7, $8, $9, $10}' "$out"
}

printf 'hashed forward, packed tables, N %s, d %s, tau %s; per steady-state call (AVX2 path, simulated caches)\n' "$n" "$d" "$tau"
printf '%-6s %14s %14s %14s %14s %14s %14s\n' tables "loads+stores" "L1 fills" "L1 fill MiB" "from beyond L2" "from DRAM" "DRAM MiB"
for t in fp32 bf16; do
  read -r -a a1 <<<"$(count $t L2 1)"
  read -r -a a3 <<<"$(count $t L2 3)"
  read -r -a b1 <<<"$(count $t L3 1)"
  read -r -a b3 <<<"$(count $t L3 3)"
  awk -v t=$t -v dr1="${a1[1]}" -v dw1="${a1[2]}" -v dr3="${a3[1]}" -v dw3="${a3[2]}" \
    -v m1="$((a1[4] + a1[5]))" -v m3="$((a3[4] + a3[5]))" -v l1="$((a1[7] + a1[8]))" -v l3="$((a3[7] + a3[8]))" \
    -v r1="$((b1[7] + b1[8]))" -v r3="$((b3[7] + b3[8]))" 'BEGIN {
      refs = (dr3 + dw3 - dr1 - dw1) / 2; fills = (m3 - m1) / 2; l2 = (l3 - l1) / 2; dram = (r3 - r1) / 2
      printf "%-6s %14d %14d %14.1f %14.1f %14d %14.1f\n", t, refs, fills, fills * 64 / 1048576, l2 * 64 / 1048576, dram, dram * 64 / 1048576
    }'
done
printf '(L1 fills = D1 read + write misses, lines of 64 bytes; "from beyond L2" = MiB the 1 MiB L2 missed; "from DRAM" = lines a 32 MiB L3 missed)\n'
