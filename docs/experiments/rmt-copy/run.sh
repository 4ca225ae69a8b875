#!/usr/bin/env bash
# Reproduces the table of docs/experiments/rmt-copy.md: copy and reverse (source 24) over
# 1..4 segments for the no-memory baseline, Transformer-XL (cache = segment length) and RMT
# (memory tokens = segment length); then evaluates every final checkpoint on the test split
# (and with memory zeroed between segments for trxl/rmt).
#
#   MNEMO=path/to/mnemoscope RUNS=/tmp/rmt-copy-runs bash docs/experiments/rmt-copy/run.sh
#
# One thread, one run at a time (the machine is shared). Checkpoints stay in $RUNS (not in
# git); logs and results go to docs/experiments/rmt-copy/{logs,results.jsonl}.
set -euo pipefail
cd "$(dirname "$0")/../../.."
MNEMO=${MNEMO:-./build/mnemoscope}
RUNS=${RUNS:-/tmp/rmt-copy-runs}
HERE=docs/experiments/rmt-copy
STEPS=${STEPS:-300}
EVAL_BATCHES=${EVAL_BATCHES:-32}     # x batch 16 = 512 test examples
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
mkdir -p "$RUNS" "$HERE/logs"
RESULTS=$HERE/results.jsonl
: > "$RESULTS"
# Common training overrides (the shipped configs use batch 32, lr 1e-3, 1500 steps; this
# budget allows STEPS steps of batch 16 per run, so the peak lr is raised to 3e-3).
COMMON=(--set train.batch=16 --set train.lr=0.003 --set train.warmup=30 --set train.eval_every=50
        --set train.eval_batches=4 --set train.save_every=0)
for task in copy reverse; do
  case $task in copy) len=73 ;; reverse) len=49 ;; esac   # 3*24+1 and 2*24+1 tokens
  for seg in 1 2 3 4; do
    sl=$(( (len + seg - 1) / seg ))
    for model in transformer trxl rmt; do
      name=$task-$model-s$seg
      sets=(--set task.segments=$seg --set model.segment_len=$sl --set model.slots=$sl)
      rm -rf "${RUNS:?}/$name"
      start=$(date +%s.%N)
      /usr/bin/time -f "cpu_user_s %U cpu_sys_s %S wall_s %e" -o "$HERE/logs/$name.time" \
        nice -n 5 "$MNEMO" train --config sessions/$task-$model.json --out "$RUNS/$name" --steps "$STEPS" \
        "${COMMON[@]}" "${sets[@]}" > "$HERE/logs/$name.log" 2>&1
      ck=$(ls "$RUNS/$name"/checkpoints/*.safetensors | tail -1)
      for zero in "" --zero-memory; do
        [[ -n $zero && $model == transformer ]] && continue
        nice -n 5 "$MNEMO" eval --config sessions/$task-$model.json --checkpoint "$ck" --split test \
          --batches "$EVAL_BATCHES" --json "${COMMON[@]}" "${sets[@]}" $zero \
          | sed "s|\"checkpoint\":\"[^\"]*\"|\"run\":\"$name\"|" >> "$RESULTS"
      done
      echo "$name done: $(tail -1 "$HERE/logs/$name.time")"
    done
  done
done
