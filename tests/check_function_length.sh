#!/usr/bin/env bash
# No function over 200 lines outside app/bench (docs/architecture.md, "Conventions"): a panel's
# draw is layout plus paint, a parser or a check a loop over named pieces. Measured with universal
# ctags (a function's first line to its closing brace, lambdas counted as functions of their own).
# Usage: check_function_length.sh ROOT [DIR...]  (DIRs relative to ROOT; default app core families viz kernels;
# app/bench and tests/ are not scanned). Exit 1 naming each function over the limit with its file,
# line and length; exit 77 (ctest SKIP_RETURN_CODE) when universal ctags is not installed (.ci/setup
# installs the Debian package universal-ctags); exit 2 on bad arguments.
set -u
max=200
root="${1:-.}"
cd "$root" 2>/dev/null || { echo "check_function_length: no such folder: $root (usage: check_function_length.sh ROOT [DIR...])" >&2; exit 2; }
shift $(( $# > 0 ? 1 : 0 ))
dirs=("$@")
((${#dirs[@]})) || dirs=(app core families viz kernels)
for d in "${dirs[@]}"; do
  [[ -d "$d" ]] || { echo "check_function_length: no folder $d under $root" >&2; exit 2; }
done
if ! command -v ctags >/dev/null 2>&1 || ! ctags --version 2>/dev/null | grep -q 'Universal Ctags'; then
  echo "check_function_length: skipped: universal ctags is not installed (apt-get install universal-ctags; .ci/setup does)"
  exit 77
fi

# Functions allowed over the limit for now (FILE QUALIFIED_NAME per line): none. A line here is
# a debt named in the output on every run.
allow=''

# One line per function, tab-separated (a free function's scope is empty): end line, first line,
# file, scope kind, scope, name. A function whose end ctags could not find is not measured.
tab=$'\t'
tags=$(ctags -R --languages=C++ --kinds-C++=f --fields=+neZ -x \
         --_xformat="%{end}${tab}%{line}${tab}%F${tab}%{scopeKind}${tab}%{scope}${tab}%N" "${dirs[@]}" 2>/dev/null) || {
  echo "check_function_length: ctags failed on ${dirs[*]}" >&2; exit 2; }
over=$(awk -F'\t' -v max="$max" -v allow="$allow" '
  BEGIN { n = split(allow, a, "\n"); for (i = 1; i <= n; i++) allowed[a[i]] = 1 }
  $1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ {
    end = $1; first = $2; file = $3; kind = $4; scope = $5; name = $6
    if (file ~ /^(\.\/)?app\/bench\// || file ~ /^(\.\/)?tests\//) next
    len = end - first + 1
    if (len <= max) next
    k = split(scope, part, "::"); owner = part[k]
    if (name ~ /^__anon/) qual = "a lambda in " owner
    else if (kind == "class" || kind == "struct") qual = owner "::" name
    else qual = name
    if ((file " " qual) in allowed) { printf "allowed for now: %s:%d: %s is %d lines\n", file, first, qual, len; next }
    printf "%s:%d: %s is %d lines (over %d)\n", file, first, qual, len, max
  }' <<<"$tags" | sort)
allowed=$(grep '^allowed for now: ' <<<"$over")
over=$(grep -v '^allowed for now: ' <<<"$over")
if [[ -n "$over" ]]; then
  echo "functions over $max lines (split them into named pieces; docs/architecture.md, Conventions):"
  echo "$over"
  [[ -n "$allowed" ]] && echo "$allowed"
  exit 1
fi
echo "check_function_length: no function over $max lines in ${dirs[*]} (app/bench and tests/ not scanned)${allowed:+, but those allowed for now:}"
[[ -n "$allowed" ]] && echo "$allowed"
exit 0
