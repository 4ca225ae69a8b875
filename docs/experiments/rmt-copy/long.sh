#!/usr/bin/env bash
# The follow-up runs of docs/experiments/rmt-copy.md: MODEL (default rmt) on copy with SEG
# segments (default 2), the same settings as run.sh but STEPS_LONG steps (is 300 steps simply
# too few?), evaluated on the test split with and without memory (without only for trxl/rmt).
#
#   MNEMO=path/to/mnemoscope RUNS=/tmp/rmt-copy-runs bash docs/experiments/rmt-copy/long.sh
#   ... SEG=3 bash docs/experiments/rmt-copy/long.sh     (3 segments -> results-long-s3.jsonl)
#   ... MODEL=trxl SEG=4 bash docs/experiments/rmt-copy/long.sh   (-> results-long-trxl-s4.jsonl)
set -euo pipefail
cd "$(dirname "$0")/../../.."
MNEMO=${MNEMO:-./build/mnemoscope}
RUNS=${RUNS:-/tmp/rmt-copy-runs}
HERE=docs/experiments/rmt-copy
STEPS_LONG=${STEPS_LONG:-1000}
SEG=${SEG:-2}
MODEL=${MODEL:-rmt}    # transformer | trxl | rmt
SL=$(( (73 + SEG - 1) / SEG ))
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
COMMON=(--set train.batch=16 --set train.lr=0.003 --set train.warmup=30 --set train.eval_every=100
        --set train.eval_batches=4 --set train.save_every=0
        --set task.segments=$SEG --set model.segment_len=$SL --set model.slots=$SL)
name=copy-$MODEL-s$SEG-long
OUTJ=$HERE/results-long.jsonl; [[ $SEG != 2 ]] && OUTJ=$HERE/results-long-s$SEG.jsonl
[[ $MODEL != rmt ]] && OUTJ=$HERE/results-long-$MODEL-s$SEG.jsonl
rm -rf "${RUNS:?}/$name"; mkdir -p "$HERE/logs"
/usr/bin/time -f "cpu_user_s %U cpu_sys_s %S wall_s %e" -o "$HERE/logs/$name.time" \
  nice -n 5 "$MNEMO" train --config sessions/copy-$MODEL.json --out "$RUNS/$name" --steps "$STEPS_LONG" "${COMMON[@]}" \
  > "$HERE/logs/$name.log" 2>&1
ck=$(ls "$RUNS/$name"/checkpoints/*.safetensors | tail -1)
: > "$OUTJ"
for zero in "" --zero-memory; do
  [[ -n $zero && $MODEL == transformer ]] && continue
  nice -n 5 "$MNEMO" eval --config sessions/copy-$MODEL.json --checkpoint "$ck" --split test --batches 32 --json \
    "${COMMON[@]}" $zero | sed "s|\"checkpoint\":\"[^\"]*\"|\"run\":\"$name\"|" >> "$OUTJ"
done
cat "$OUTJ"
