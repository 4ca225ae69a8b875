#!/usr/bin/env bash
# ctest function_length_fixture: check_function_length.sh itself fails where it should. Writes a
# fixture tree into a temporary folder (never compiled): TMP/app/long.cpp with Fixture::too_long
# (201 lines), just_fits (200 lines) and a 201-line lambda in a_lambda_host; TMP/app/bench/long_bench.cpp
# with a 201-line function (app/bench is not scanned). The check must name the first two long
# ones, and neither just_fits nor the bench function. Usage: function_length_fixture.sh CHECK_SCRIPT
set -u
check="$1"
t=$(mktemp -d) || exit 2
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/app/bench"
adds() { local i; for ((i = 0; i < $2; i++)); do printf '%ss += %d;\n' "$1" "$i"; done; }
{
  printf 'struct Fixture {\n  int too_long();\n};\n\nint Fixture::too_long() {\n  int s = 0;\n'
  adds '  ' 197
  printf '  return s;\n}\n\nint just_fits() {\n  int s = 0;\n'
  adds '  ' 196
  printf '  return s;\n}\n\nint a_lambda_host() {\n  auto f = [] {\n    int s = 0;\n'
  adds '    ' 197
  printf '    return s;\n  };\n  return f();\n}\n'
} >"$t/app/long.cpp"
{
  printf 'int bench_too_long() {\n  int s = 0;\n'
  adds '  ' 197
  printf '  return s;\n}\n'
} >"$t/app/bench/long_bench.cpp"
out=$(bash "$check" "$t" app)
rc=$?
echo "$out"
[[ $rc == 77 ]] && exit 77
[[ $rc == 1 ]] && grep -qx 'app/long.cpp:5: Fixture::too_long is 201 lines (over 200)' <<<"$out" &&
  grep -q 'a lambda in a_lambda_host is 201 lines' <<<"$out" && ! grep -qE 'just_fits|bench' <<<"$out"
