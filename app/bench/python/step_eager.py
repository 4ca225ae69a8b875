"""A model's steps in plain PyTorch eager, for `mnemoscope bench step --against-python`.

The model is the Python package's (python/mnemoscope/models.py: mnemoscope.models, written from
docs/models.md and core/models), so the step benchmark's Python baseline is the modules a user
trains with. It loads the weights and the resolved config from a safetensors file written by
`mnemoscope export-weights` (metadata "model") with mnemoscope.models.load_weights, steps
through a document segment by segment as the engine does (mnemoscope.models.document_segments),
and prints one JSON line: the median milliseconds per segment, each segment's loss and the
memory after the last step ("slots" for Memformer, "memory" for the RMT kinds). Times: wall
clock and this process's CPU time (all threads), per segment, median over the passes after a
warm-up pass.

    /usr/bin/python3 step_eager.py --weights W.safetensors --doc D --segments N --repeats R --threads T

Needs Debian's python3-torch; exits 77 (skipped) without it.
"""

import argparse
import json
import math
import os
import statistics
import sys
import time

# As `mnemoscope --threads N` does, bound the BLAS's own threads too (OpenBLAS reads this when
# it loads, with torch): otherwise its idle threads spin on other cores and the CPU time
# compared is not the same work.
if "--threads" in sys.argv[:-1] and sys.argv[sys.argv.index("--threads") + 1] not in ("", "0"):
    os.environ["OPENBLAS_NUM_THREADS"] = sys.argv[sys.argv.index("--threads") + 1]

try:
    import torch
except ImportError:
    print("step_eager.py: PyTorch is not installed for this python3 (Debian: python3-torch)", file=sys.stderr)
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))
from mnemoscope.models import document_segments, load_weights  # noqa: E402

MEMORY_KEY = {"memformer": "slots", "rmt": "memory", "rmt-write-only": "memory", "trxl-rmt": "memory"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--weights", required=True)
    ap.add_argument("--doc", required=True)
    ap.add_argument("--segments", type=int, default=48)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--inference-mode", action="store_true",
                    help="torch.inference_mode() instead of torch.no_grad() (what the C++ engine uses)")
    a = ap.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    m = load_weights(a.weights)
    kind = m.config.model
    if kind not in MEMORY_KEY:
        raise SystemExit("step_eager.py: the weights are a '%s' model, which has no memory tensor to compare; this "
                         "baseline steps %s" % (kind, ", ".join(sorted(MEMORY_KEY))))
    with open(a.doc, "rb") as f:
        segments = document_segments(f.read(), m.config.segment_len)  # built once, outside the timed passes
    nseg = min(a.segments, len(segments))
    samples, cpu_samples, losses, mem = [], [], [], None
    with (torch.inference_mode() if a.inference_mode else torch.no_grad()):
        for r in range(-1, a.repeats):  # one warm-up pass
            mem = m.initial_memory(1)
            losses = []
            t0, c0 = time.perf_counter(), time.process_time()
            for i in range(nseg):
                out, mem, _ = m.step(segments[i], mem)
                # Memformer has no loss without a next segment (null in the JSON).
                losses.append(out.loss.item() if out.loss is not None else float("nan"))
            t1, c1 = time.perf_counter(), time.process_time()
            if r >= 0:
                samples.append(1000.0 * (t1 - t0) / nseg)
                cpu_samples.append(1000.0 * (c1 - c0) / nseg)
    mem = mem[MEMORY_KEY[kind]]
    print(json.dumps({"ms_per_segment": statistics.median(samples), "cpu_ms_per_segment": statistics.median(cpu_samples),
                      "samples": samples, "segments": nseg,
                      "threads": torch.get_num_threads(), "torch": torch.__version__,
                      "mode": "inference_mode" if a.inference_mode else "no_grad",
                      "losses": [x if math.isfinite(x) else None for x in losses],  # null: no next segment
                      "memory": mem.reshape(-1).tolist()}))


if __name__ == "__main__":
    main()
