#!/usr/bin/env bash
# The copying curriculum of docs/experiments/text-memory.md, section 6: a Transformer-XL that
# learns to read words back from its cache, then reads prose with it. Three stages, each
# starting from the last checkpoint of the one before (the optimizer starts fresh each time):
#   A  doubled passages (doubled_passages_corpus.py), 128-byte segments and a cache of 128,
#      1,000 steps of 24 windows of 256 bytes: the plateau before copying;
#   B  the same data, 1,500 more steps: an induction head forms (valid 4.34 -> 2.8 bits/byte);
#   C  the training addresses with made-up words written twice (random_repeats_corpus.py) and
#      passages repeated in half the windows (task.recur 0.5), 32-byte segments, the cache of
#      128, 1,500 steps of 16 windows of 512 bytes: prose.
# The held-out addresses (years ending in 0 and 5) are in no stage's corpus.
# Usage, from the repository root, with `mnemoscope` built and `bash .ci/fetch-data sotu` done:
#   SEED=1 OUT=runs/copy-s1 bash docs/experiments/copy_curriculum.sh
# OUT must be a new or empty folder (anything else is refused, exit 2, before anything is
# written). It receives the corpora and one session per stage (A, B, C); C's last checkpoint is
# the model. MNEMOSCOPE names the binary (default build/mnemoscope). About 45 minutes on one
# thread of the 2-core VM.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:?set OUT to a new or empty folder}
seed=${SEED:-0}
bin=${MNEMOSCOPE:-$root/build/mnemoscope}
if [[ -e $out && ( ! -d $out || -n $(ls -A "$out") ) ]]; then
  echo "copy_curriculum.sh: OUT=$out is not an empty folder; name a new or empty one (nothing was written)" >&2
  exit 2
fi
[[ -x $bin ]] || { echo "copy_curriculum.sh: no mnemoscope at $bin (build it, or set MNEMOSCOPE)" >&2; exit 2; }
mkdir -p "$out"
cfg=$root/sessions/text-trxl.json
python3 "$root/docs/experiments/doubled_passages_corpus.py" "$out/doubled"
python3 "$root/docs/experiments/random_repeats_corpus.py" "$out/prose-pairs"
stage() {  # NAME INIT(or -) DATA FLAGS...
  local name=$1 init=$2 data=$3; shift 3
  local from=(); [[ $init != - ]] && from=(--init-from "$init")
  echo "[$(date -u +%H:%M:%S)] stage $name"
  "$bin" --threads 1 train --config "$cfg" --out "$out/$name" "${from[@]}" --data "$data" \
    --set model.slots=128 --set train.warmup=100 --set train.lr=0.001 --set train.eval_every=250 \
    --set train.save_every=250 --set train.seed="$seed" "$@" > "$out/$name.log" 2>&1
  grep '^final' "$out/$name.log" || true
}
long=(--set model.segment_len=128 --set task.length=256 --set task.segments=2 --set train.batch=24)
stage A - "$out/doubled" "${long[@]}" --set train.steps=1000
stage B "$out/A" "$out/doubled" "${long[@]}" --set train.steps=1500
stage C "$out/B" "$out/prose-pairs" --set task.recur=0.5 --set train.steps=1500
echo "[$(date -u +%H:%M:%S)] done: the model is $out/C"
