#!/usr/bin/env bash
# ctest cuda_kernels_compile: every kernels/*.cu must compile with nvcc for sm_80 and sm_90,
# also on machines without a GPU or a CUDA LibTorch (docs/architecture.md#build). Exit 77 = skipped (no nvcc).
# Usage: compile_cuda_kernels.sh NVCC SOURCE_DIR OUT_DIR
set -u
nvcc="${1:-}"
root="${2:-.}"
out="${3:-/tmp/mnemo-cuda-compile}"
if [[ -z "$nvcc" || "$nvcc" == *NOTFOUND* || ! -x "$nvcc" ]]; then
  echo "cuda_kernels_compile: skipped: nvcc not found (install the CUDA toolkit or put nvcc on PATH)"
  exit 77
fi
mkdir -p "$out" || exit 2
fail=0
shopt -s nullglob
files=("$root"/kernels/*.cu)
if ((${#files[@]} == 0)); then echo "cuda_kernels_compile: no kernels/*.cu"; exit 0; fi
for cu in "${files[@]}"; do
  for arch in 80 90; do
    obj="$out/$(basename "$cu" .cu).sm_$arch.o"
    if "$nvcc" -std=c++17 -arch="sm_$arch" -I"$root" -Xcompiler -Wall,-Wextra -c "$cu" -o "$obj"; then
      echo "ok: $cu (sm_$arch)"
    else
      echo "FAILED: $cu (sm_$arch)"
      fail=1
    fi
  done
done
exit "$fail"
