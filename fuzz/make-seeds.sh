#!/usr/bin/env bash
# Writes the fuzz seed corpora (fuzz/seeds/<target>/) from files the project itself writes:
# a tiny training session of the built `mnemoscope` (its metrics.log, manifest.json and
# checkpoints/latest, a checkpoint, a probe recording), `mnemoscope step`'s trace, the shipped
# configs and a slice of the sample document. Run after a build:
#   bash fuzz/make-seeds.sh [build/mnemoscope]
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${1:-build/mnemoscope}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/tiny.json" <<'JSON'
{"model": {"model": "rmt", "slots": 2, "segment_len": 6, "dim": 8, "heads": 2, "layers": 1, "ff": 8},
 "task": {"name": "copy", "source_len": 3, "symbols": 4, "segments": 2, "train_size": 16, "valid_size": 4, "test_size": 4},
 "train": {"steps": 4, "batch": 2, "lr": 1e-2, "warmup": 1, "eval_every": 2, "eval_batches": 1, "save_every": 2,
           "record_every": 2, "record_segments": 2, "seed": 1}}
JSON
"$bin" train --config "$tmp/tiny.json" --out "$tmp/run" >/dev/null
"$bin" step --doc assets/sample.txt --out "$tmp/step" --model rmt --slots 2 --segment-len 8 --dim 8 --heads 2 \
  --layers 1 --from 0 --to 0 --format csv >/dev/null
s=fuzz/seeds
rm -rf "$s"
mkdir -p "$s"/{safetensors,framed_log,config,session,recording,document,tour}
cp "$tmp/run/metrics.log" "$s/framed_log/metrics.log"
head -c 600 "$tmp/run/metrics.log" >"$s/framed_log/metrics-head.log"
{ cat "$tmp/run/manifest.json"; printf '\0'; cat "$tmp/run/checkpoints/latest"; } >"$s/session/manifest-latest"
cp "$tmp/run/checkpoints/step-000000004.safetensors" "$s/safetensors/checkpoint.safetensors"
cp "$tmp/step/step-0000/trace.safetensors" "$s/safetensors/trace.safetensors"
cp "$tmp/run/traces/step-000000002.safetensors" "$s/recording/recording.safetensors"
for f in sessions/demo-memformer.json sessions/copy-rmt-tiny.json sessions/mtn-demo.json sessions/hashed-lm-hashed.json; do
  cp "$f" "$s/config/$(basename "$f")"
done
head -c 2000 assets/sample.txt >"$s/document/sample-head.txt"
printf '\x00\x01\xfe\xff\x80 caf\xc3\xa9\n' >"$s/document/binary.bin"
# The shipped tours, their documents renamed to the target's in-memory zoo (fuzz_tour.cpp).
for f in assets/tours/*.json; do
  sed 's#"document": "rmt-copy.txt"#"document": "zoo/rmt-copy.txt"#' "$f" >"$s/tour/$(basename "$f")"
done
du -sh "$s"/*
