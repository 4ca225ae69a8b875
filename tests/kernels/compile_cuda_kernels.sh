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
# One nvcc call per file builds the device code of both architectures (the host side is
# compiled once, not once per architecture), through ccache when it is installed (as the
# build uses it; CCACHE_BASEDIR makes the paths relative, so a clone elsewhere hits the same
# entry). ccache keeps no failed compilation: a kernel that no longer compiles fails here.
launcher=()
if command -v ccache >/dev/null; then
  launcher=(ccache)
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(cd "$root" && pwd)}"
fi
for cu in "${files[@]}"; do
  obj="$out/$(basename "$cu" .cu).sm_80_90.o"
  if "${launcher[@]}" "$nvcc" -std=c++17 -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
       -I"$root" -Xcompiler -Wall,-Wextra -c "$cu" -o "$obj"; then
    echo "ok: $cu (sm_80 and sm_90)"
  else
    echo "FAILED: $cu (sm_80 and sm_90)"
    fail=1
  fi
done
exit "$fail"
