#!/usr/bin/env bash
# Xvfb smoke test of the desktop app (ctest: gui_smoke_xvfb): the real program opens the
# sample document, steps 3 segments, takes a screenshot and quits; the screenshot is then
# checked (size, not blank, heatmap visible) by the doctest case "gui smoke: ...". The same
# for an RMT with hashed projections (Attention + Hash buckets) and an MTN (MTN memory + Attention).
# Usage: gui_smoke.sh MNEMOSCOPE MNEMO_TESTS SOURCE_DIR. Exit 77 (skipped) without Xvfb.
set -u
bin="$1"; tests="$2"; src="$3"
if ! command -v Xvfb >/dev/null 2>&1; then
  echo "SKIPPED: Xvfb not found; install it with 'bash .ci/setup' (Debian package xvfb)"
  exit 77
fi
tmp=$(mktemp -d /tmp/mnemo-gui-smoke-XXXXXX)
export XDG_CONFIG_HOME="$tmp/config"   # never touch the user's layout
size=1600x900
# One X server for the whole script, started here rather than by xvfb-run: with -displayfd
# the server picks a free display itself and writes its number only once it accepts
# connections, so the app never meets a display that is not ready. (xvfb-run -a on a loaded
# machine - ctest starting this beside the Python tests and the CUDA compile check - handed out
# displays the app could not open, three times in a row, and left those servers running.)
# -noreset: by default the server resets when its last client leaves, and an app that connects
# during the reset fails the same way (seen with one server serving the runs one after another).
Xvfb -displayfd 3 -noreset -screen 0 1920x1080x24 -nolisten tcp 3>"$tmp/display" 2>"$tmp/xvfb.log" &
xvfb_pid=$!
trap 'kill "$xvfb_pid" 2>/dev/null; wait "$xvfb_pid" 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 1 600); do
  [[ -s "$tmp/display" ]] && break
  kill -0 "$xvfb_pid" 2>/dev/null || { echo "FAILED: Xvfb exited:"; cat "$tmp/xvfb.log"; exit 1; }
  sleep 0.1
done
[[ -s "$tmp/display" ]] || { echo "FAILED: Xvfb gave no display in 60 s"; cat "$tmp/xvfb.log"; exit 1; }
export DISPLAY=":$(head -n1 "$tmp/display")"
unset WAYLAND_DISPLAY XAUTHORITY
xrun() { "$@"; }
set -x
xrun "$bin" gui --doc "$src/assets/sample.txt" --segments 3 \
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
  xrun "$bin" gui --doc "$src/assets/sample.txt" --model $model --segments 3 \
    --screenshot "$tmp/app-$name.png" --size "$size" --quit || { echo "FAILED: mnemoscope gui --model $model exited $?"; exit 1; }
  set +x
  [[ -s "$tmp/app-$name.png" ]] || { echo "FAILED: no screenshot for --model $model"; exit 1; }
  MNEMO_SMOKE_PNG="$tmp/app-$name.png" MNEMO_SMOKE_SIZE="$size" MNEMO_SMOKE_MAX_SHARE=$share "$tests" \
    -tc='gui smoke: screenshot*' || exit 1
done
# A recorded training session replayed with no model: the dashboard and the recorded maps.
cat > "$tmp/tiny.json" <<'EOF_CFG'
{"model": {"model": "rmt", "slots": 4, "segment_len": 13, "dim": 32, "heads": 2, "layers": 2, "ff": 64},
 "task": {"name": "copy", "source_len": 8, "symbols": 26, "segments": 2, "train_size": 256, "valid_size": 32, "test_size": 32},
 "train": {"steps": 30, "batch": 8, "lr": 0.003, "warmup": 5, "eval_every": 10, "eval_batches": 2, "record_every": 10}}
EOF_CFG
"$bin" train --config "$tmp/tiny.json" --out "$tmp/session" > "$tmp/train.log" 2>&1 || { cat "$tmp/train.log"; echo "FAILED: train"; exit 1; }
set -x
xrun "$bin" gui --session "$tmp/session" --segments 1 --screenshot "$tmp/app-session.png" --size "$size" --quit \
  || { echo "FAILED: mnemoscope gui --session exited $?"; exit 1; }
set +x
[[ -s "$tmp/app-session.png" ]] || { echo "FAILED: no screenshot for --session"; exit 1; }
MNEMO_SMOKE_PNG="$tmp/app-session.png" MNEMO_SMOKE_SIZE="$size" MNEMO_SMOKE_MAX_SHARE=0.75 "$tests" \
  -tc='gui smoke: screenshot*' || exit 1
# Out of memory in the app (docs/reliability.md#out-of-memory): under an address-space cap
# (setrlimit in the child, by prlimit) a segment of 65536 tokens cannot be allocated; the app
# names it in a popup (printed too, in a scripted run) and keeps running to the screenshot.
if command -v prlimit >/dev/null 2>&1; then
  # The cap: what the app needs for the sample document (VmPeak of the first smoke run's
  # size, measured here by a short run) plus 1 GiB.
  peak=$(xrun sh -c '"$0" gui --doc "$1" --segments 1 --size "$2" --quit --screenshot "$3" >/dev/null 2>&1 & p=$!
    peak=0
    while kill -0 $p 2>/dev/null; do
      v=$(awk "/VmPeak/{print \$2}" /proc/$p/status 2>/dev/null)
      [ -n "$v" ] && [ "$v" -gt "$peak" ] && peak=$v
      sleep 0.05
    done
    echo "PEAK=$peak"' "$bin" "$src/assets/sample.txt" "$size" "$tmp/peak.png" | grep -oE 'PEAK=[0-9]+' | cut -d= -f2)
  peak=${peak:-0}
  if ((peak > 0)); then
    cap=$(( (peak + 1048576) * 1024 ))
    set -x
    out=$(xrun prlimit --as=$cap "$bin" gui --doc "$src/assets/sample.txt" --segment-len 65536 --segments 1 \
      --screenshot "$tmp/app-oom.png" --size "$size" --quit 2>&1)
    set +x
    echo "$out"
    [[ -s "$tmp/app-oom.png" ]] || { echo "FAILED: the app did not keep running after out of memory"; exit 1; }
    grep -q "out of memory at segment 0 (memformer, 65536 tokens per segment), needed ~" <<<"$out" \
      || { echo "FAILED: no out-of-memory message naming the segment"; exit 1; }
    grep -q "internal error" <<<"$out" && { echo "FAILED: out of memory reported as an internal error"; exit 1; }
  fi
fi
exit 0
