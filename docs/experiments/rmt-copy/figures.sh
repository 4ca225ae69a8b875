#!/usr/bin/env bash
# The attention figures of docs/experiments/rmt-copy.md, from the checkpoints run.sh trained:
# RMT and Transformer-XL on copy with SEG segments, stepped through sample-copy.txt (one copy
# example: 24 source symbols, '>', the source twice; 73 tokens).
#
#   MNEMO=path/to/mnemoscope RUNS=/tmp/rmt-copy-runs SEG=2 bash docs/experiments/rmt-copy/figures.sh
#   ... RMT_RUN=copy-rmt-s2-long TAG=rmt-long bash docs/experiments/rmt-copy/figures.sh   (long.sh's model)
#
# Full exports (PNG, SVG, CSV for every layer and head, trace.safetensors) go to $FIGS; a
# selection of PNGs (palette-reduced with pngquant when it is installed) and the block-mass
# CSVs are copied to docs/experiments/rmt-copy/figures/.
set -euo pipefail
cd "$(dirname "$0")/../../.."
MNEMO=${MNEMO:-./build/mnemoscope}
RUNS=${RUNS:-/tmp/rmt-copy-runs}
SEG=${SEG:-2}
RMT_RUN=${RMT_RUN:-copy-rmt-s$SEG}   # the RMT run to show
TAG=${TAG:-rmt}                      # file name prefix of its figures
HEADS=${HEADS:-1}                    # 0: keep no per-head maps in the repo (they stay in $FIGS)
FIGS=${FIGS:-$RUNS/figures-$TAG-s$SEG}
HERE=docs/experiments/rmt-copy
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
sl=$(( (73 + SEG - 1) / SEG ))
last=$(( SEG - 1 ))
rm -rf "$FIGS"; mkdir -p "$FIGS" "$HERE/figures"
for model in rmt trxl; do
  run=copy-$model-s$SEG; [[ $model == rmt ]] && run=$RMT_RUN
  ck=$(ls "$RUNS/$run"/checkpoints/*.safetensors | tail -1)
  "$MNEMO" step --model $model --config sessions/copy-$model.json --slots $sl --segment-len $sl \
    --checkpoint "$ck" --doc $HERE/sample-copy.txt --out "$FIGS/$model" --from 0 --to $last --format png,svg,csv
done
keep() {  # keep SRC DST: copy one PNG into the repo, palette-reduced when possible
  if command -v pngquant >/dev/null; then pngquant 64 --speed 3 --force -o "$HERE/figures/$2" "$1"
  else cp "$1" "$HERE/figures/$2"; fi
}
rm -f "$HERE"/figures/$TAG-s$SEG-* "$HERE"/figures/trxl-s$SEG-*
for s in $(seq 0 $last); do
  d=$(printf step-%04d $s)
  for l in 0 1; do keep "$FIGS/rmt/$d/rmt_attention_l${l}_mean.png" "$TAG-s$SEG-seg$s-l$l-mean.png"; done
  keep "$FIGS/rmt/$d/rmt_block_mass.png" "$TAG-s$SEG-seg$s-block-mass.png"
  cp "$FIGS/rmt/$d/rmt_block_mass.csv" "$HERE/figures/$TAG-s$SEG-seg$s-block-mass.csv"
done
d=$(printf step-%04d $last)
for l in 0 1; do
  [[ $HEADS == 1 ]] && for h in 0 1 2 3; do keep "$FIGS/rmt/$d/rmt_attention_l${l}_head$h.png" "$TAG-s$SEG-seg$last-l$l-head$h.png"; done
  keep "$FIGS/trxl/$d/trxl_attention_l${l}_mean.png" "trxl-s$SEG-seg$last-l$l-mean.png"
done
du -sh "$HERE/figures"
