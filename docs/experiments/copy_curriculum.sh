#!/usr/bin/env bash
# The copying curricula of docs/experiments/text-memory.md: a memory model that first learns to
# read words back, then reads prose with it. Each stage starts from the last checkpoint of the
# one before (the optimizer starts fresh each time). MODEL picks the model (default trxl).
#
# MODEL=trxl (section 6): a Transformer-XL with a cache of 128 bytes.
#   A  doubled passages (doubled_passages_corpus.py), 128-byte segments and a cache of 128,
#      1,000 steps of 24 windows of 256 bytes: the plateau before copying;
#   B  the same data, 1,500 more steps: an induction head forms (valid 4.34 -> 2.8 bits/byte);
#   C  the training addresses with made-up words written twice (random_repeats_corpus.py) and
#      passages repeated in half the windows (task.recur 0.5), 32-byte segments, the cache of
#      128, 1,500 steps of 16 windows of 512 bytes: prose.
# MODEL=memformer (section 7): the Memformer of sessions/text-memformer.json with 32 slots at
#   memory_scale sqrt_dim, 16 segments of 32 bytes throughout, 16 windows a step.
#   A  doubled passages, 2,500 steps: the slots learn to carry a passage to the next segments;
#   C  the made-up-word addresses of trxl's stage C and the doubled passages together (about half
#      the windows each; on prose alone the copying was gone within 250 steps), task.recur 0.5,
#      1,200 steps (there is no stage B).
# MODEL=rmt (section 8): the RMT of sessions/text-rmt.json (16 memory tokens, 16 segments of 32
#   bytes, 16 windows a step). RMT sees nothing of the previous segment but its memory, and
#   memformer's stage A alone (copies 41-61 bytes back: always in an earlier segment) left it
#   on the plateau (valid 4.437 bits/byte at step 1,500, zeroed 4.458; stopped at 1,681), so:
#   S  doubled passages of 8-24 bytes (most copies inside one segment), 1,000 steps;
#   A  the doubled passages of 40-60 bytes, 1,500 steps;
#   C  as for memformer.
#   This did not teach RMT to copy either (S ended at 4.433; A stopped at step 839 at 4.440):
#   section 8 records it, and what else was tried.
# The held-out addresses (years ending in 0 and 5) are in no stage's corpus.
# Usage, from the repository root, with `mnemoscope` built and `bash .ci/fetch-data sotu` done:
#   SEED=1 OUT=runs/copy-s1 bash docs/experiments/copy_curriculum.sh
#   MODEL=memformer SEED=1 OUT=runs/mf-s1 bash docs/experiments/copy_curriculum.sh
#   MODEL=rmt SEED=0 OUT=runs/rmt-s0 bash docs/experiments/copy_curriculum.sh
# OUT must be a new or empty folder (anything else is refused, exit 2, before anything is
# written). It receives the corpora and one session per stage (S, A, B, C); C's last checkpoint is
# the model. MNEMOSCOPE names the binary (default build/mnemoscope). On one thread of the 2-core
# VM: about 45 minutes (trxl), about 70 minutes (memformer).
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
case ${MODEL:-trxl} in
  trxl) cfg=$root/sessions/text-trxl.json; model_sets=(--set model.slots=128) ;;
  memformer) cfg=$root/sessions/text-memformer.json; model_sets=(--set model.slots=32 --set model.memory_scale=sqrt_dim) ;;
  rmt) cfg=$root/sessions/text-rmt.json; model_sets=() ;;
  *) echo "copy_curriculum.sh: MODEL=$MODEL is not trxl, memformer or rmt (nothing was written)" >&2; exit 2 ;;
esac
mkdir -p "$out"
python3 "$root/docs/experiments/doubled_passages_corpus.py" "$out/doubled"
python3 "$root/docs/experiments/random_repeats_corpus.py" "$out/prose-pairs"
[[ ${MODEL:-trxl} == rmt ]] && python3 "$root/docs/experiments/doubled_passages_corpus.py" "$out/doubled-short" --passage 8,24
stage() {  # NAME INIT(or -) DATA FLAGS...
  local name=$1 init=$2 data=$3; shift 3
  local from=(); [[ $init != - ]] && from=(--init-from "$init")
  echo "[$(date -u +%H:%M:%S)] stage $name"
  "$bin" --threads 1 train --config "$cfg" --out "$out/$name" "${from[@]}" --data "$data" "${model_sets[@]}" \
    --set train.warmup=100 --set train.lr=0.001 --set train.eval_every=250 \
    --set train.save_every=250 --set train.seed="$seed" "$@" > "$out/$name.log" 2>&1
  grep '^final' "$out/$name.log" || true
}
if [[ ${MODEL:-trxl} == trxl ]]; then
  long=(--set model.segment_len=128 --set task.length=256 --set task.segments=2 --set train.batch=24)
  stage A - "$out/doubled" "${long[@]}" --set train.steps=1000
  stage B "$out/A" "$out/doubled" "${long[@]}" --set train.steps=1500
  stage C "$out/B" "$out/prose-pairs" --set task.recur=0.5 --set train.steps=1500
elif [[ ${MODEL:-trxl} == rmt ]]; then
  stage S - "$out/doubled-short" --set train.steps=1000
  stage A "$out/S" "$out/doubled" --set train.steps=1500
  stage C "$out/A" "$out/prose-pairs" --data "$out/doubled" --set task.recur=0.5 --set train.steps=1200 \
    --set train.eval_every=200 --set train.save_every=200
else
  stage A - "$out/doubled" --set train.steps=2500
  stage C "$out/A" "$out/prose-pairs" --data "$out/doubled" --set task.recur=0.5 --set train.steps=1200 \
    --set train.eval_every=200 --set train.save_every=200
fi
echo "[$(date -u +%H:%M:%S)] done: the model is $out/C"
