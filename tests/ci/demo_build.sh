#!/usr/bin/env bash
# .ci/demo builds the program alone (`.ci/build --target mnemoscope`; the test suite is .ci/run's)
# and shows the build's progress; .ci/build still passes its other arguments to CMake. Both
# scripts run from a copy of .ci with stand-ins for cmake, .ci/setup and the program: nothing is
# built or installed.  bash tests/ci/demo_build.sh SOURCE_DIR
set -euo pipefail
src="$1"
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/repo/.ci" "$t/repo/build" "$t/bin"
cp "$src/.ci/demo" "$src/.ci/build" "$t/repo/.ci/"
printf '#!/bin/sh\necho "setup ran"\n' >"$t/repo/.ci/setup"
cat >"$t/bin/cmake" <<'X'
#!/bin/sh
echo "cmake $*" >>"$CALLS"
case "$*" in
  *--build*) echo "[1/2] Building CXX object app/CMakeFiles/mnemoscope.dir/main.cpp.o"; echo "[2/2] Linking CXX executable mnemoscope" ;;
  *) echo "-- Configuring done" ;;
esac
X
printf '#!/bin/sh\necho "mnemoscope $*"\n' >"$t/repo/build/mnemoscope"
chmod +x "$t/bin/cmake" "$t/repo/build/mnemoscope"
export CALLS="$t/calls" PATH="$t/bin:$PATH"
fail=0
check() {  # check DESCRIPTION COMMAND...
  if ! "${@:2}"; then echo "FAIL: $1"; fail=1; fi
}

out=$(bash "$t/repo/.ci/demo" --out somewhere 2>&1)
echo "$out"
check "the demo says the first build takes several minutes" grep -q "first build takes several minutes" <<<"$out"
check "the build's progress lines are shown" grep -q '^\[2/2\] Linking CXX executable mnemoscope' <<<"$out"
check "the demo runs the program with its arguments" grep -q '^mnemoscope demo --out somewhere$' <<<"$out"
check "the demo builds the mnemoscope target alone" grep -q -- '--build build .*--target mnemoscope' "$CALLS"
check "the demo builds nothing else" test "$(grep -c -- '--build' "$CALLS")" -eq 1

# .ci/build: CMake arguments pass through to the configure step; no --target builds everything.
: >"$CALLS"
bash "$t/repo/.ci/build" -DMNEMO_GUI=OFF >/dev/null
check "extra arguments reach cmake's configure step" grep -q -- '^cmake -S . -B build .*-DMNEMO_GUI=OFF' "$CALLS"
check "without --target the whole build runs" test -z "$(grep -- '--build' "$CALLS" | grep -- '--target' || true)"
if bash "$t/repo/.ci/build" --target >/dev/null 2>"$t/err"; then
  echo "FAIL: --target without a name was accepted"; fail=1
fi
check "--target without a name is named" grep -q -- "--target needs a target name" "$t/err"
exit "$fail"
