#!/usr/bin/env bash
# Xvfb smoke test of the desktop app (ctest: gui_smoke_xvfb): the real program opens the
# sample document, steps 3 segments, takes a screenshot and quits; the screenshot is then
# checked (size, not blank, heatmap visible) by the doctest case "gui smoke: ...". The same
# for an RMT with hashed projections (Attention + Hash buckets) and an MTN (MTN memory + Attention).
# Usage: gui_smoke.sh MNEMOSCOPE MNEMO_TESTS SOURCE_DIR. Exit 77 (skipped) without xvfb-run.
set -u
bin="$1"; tests="$2"; src="$3"
if ! command -v xvfb-run >/dev/null 2>&1; then
  echo "SKIPPED: xvfb-run not found; install it with 'bash .ci/setup' (Debian package xvfb)"
  exit 77
fi
tmp=$(mktemp -d /tmp/mnemo-gui-smoke-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export XDG_CONFIG_HOME="$tmp/config"   # never touch the user's layout
size=1600x900
set -x
xvfb-run -a -s "-screen 0 1920x1080x24" "$bin" gui --doc "$src/assets/sample.txt" --steps 3 \
  --screenshot "$tmp/app.png" --size "$size" --quit || { echo "FAILED: mnemoscope gui exited $?"; exit 1; }
set +x
[[ -s "$tmp/app.png" ]] || { echo "FAILED: no screenshot at $tmp/app.png"; exit 1; }
if [[ -d "$tmp/config" ]]; then echo "FAILED: a --quit run wrote to the config dir"; exit 1; fi
MNEMO_SMOKE_PNG="$tmp/app.png" MNEMO_SMOKE_SIZE="$size" "$tests" -tc='gui smoke: screenshot*' || exit 1
for model in "rmt --linear hashed" "mtn"; do
  name=${model%% *}
  share=0.6
  [[ $name == mtn ]] && share=0.75
  set -x
  # shellcheck disable=SC2086
  xvfb-run -a -s "-screen 0 1920x1080x24" "$bin" gui --doc "$src/assets/sample.txt" --model $model --steps 3 \
    --screenshot "$tmp/app-$name.png" --size "$size" --quit || { echo "FAILED: mnemoscope gui --model $model exited $?"; exit 1; }
  set +x
  [[ -s "$tmp/app-$name.png" ]] || { echo "FAILED: no screenshot for --model $model"; exit 1; }
  MNEMO_SMOKE_PNG="$tmp/app-$name.png" MNEMO_SMOKE_SIZE="$size" MNEMO_SMOKE_MAX_SHARE=$share "$tests" \
    -tc='gui smoke: screenshot*' || exit 1
done
