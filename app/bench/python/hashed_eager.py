"""The MemoryFormer Memory Layer in PyTorch ops, for `mnemoscope bench hashed-linear --against-python`.

The layer is the Python package's (mnemoscope.models.HashedProjection: codes from the sign bits,
p(z) as a product of sigmoids, one embedding_bag over the tables laid end to end; autograd for the
backward), the formulation a PyTorch user trains with. Each input file (safetensors, written by
the C++ bench) holds the bench's own tables [K, 2^tau, d_out], input x [N, d_in], output gradient
dy [N, d_out] and the C++ kernel's output y; this script times the layer on them (forward under
no_grad; forward + backward into the tables and the input), and a dense torch Linear d_in -> d_out
beside it, and prints one JSON line: per file and pass the median wall and CPU milliseconds, and
the largest |y_python - y_c++|.

    /usr/bin/python3 hashed_eager.py --inputs A.safetensors,B.safetensors --repeats R --threads T \
        --passes forward,fwd+bwd --temperature 1

Needs Debian's python3-torch; exits 77 (skipped) without it.
"""

import argparse
import json
import os
import statistics
import sys
import time

# Bound the BLAS's own threads as `mnemoscope --threads N` does (read when it loads, with torch).
if "--threads" in sys.argv[:-1] and sys.argv[sys.argv.index("--threads") + 1] not in ("", "0"):
    os.environ["OPENBLAS_NUM_THREADS"] = sys.argv[sys.argv.index("--threads") + 1]

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("hashed_eager.py: PyTorch is not installed for this python3 (Debian: python3-torch)", file=sys.stderr)
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))
from mnemoscope.models import HashedProjection  # noqa: E402
from mnemoscope.safetensors import load_safetensors  # noqa: E402


def timed(fn):
    t0, c0 = time.perf_counter(), time.process_time()
    fn()
    return 1000.0 * (time.perf_counter() - t0), 1000.0 * (time.process_time() - c0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--inputs", required=True)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--passes", default="forward,fwd+bwd")
    ap.add_argument("--temperature", type=float, default=1.0)
    a = ap.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    cases = []
    for path in a.inputs.split(","):
        f = load_safetensors(path)
        tables = torch.from_numpy(f["tables"].copy())
        x, dy, y_cpp = (torch.from_numpy(f[k].copy()) for k in ("x", "dy", "y"))
        k, rows, d_out = tables.shape
        bits = rows.bit_length() - 1
        layer = HashedProjection(k * bits, d_out, bits, a.temperature)
        with torch.no_grad():
            layer.tables.copy_(tables)
            y_py = layer(x)
        diff = float((y_py - y_cpp).abs().max())
        w = (torch.rand(d_out, k * bits) * 2 - 1) / (k * bits) ** 0.5
        b = torch.zeros(d_out)
        wl, bl = w.clone().requires_grad_(True), b.clone().requires_grad_(True)
        for p in a.passes.split(","):
            hw, hc, dw, dc = [], [], [], []
            for rep in range(-1, a.repeats):  # rep -1 warms up; the two interleaved as in C++
                if p == "forward":
                    with torch.no_grad():
                        h = timed(lambda: layer(x))
                        d = timed(lambda: F.linear(x, w, b))
                else:
                    xl = x.clone().requires_grad_(True)
                    layer.zero_grad(set_to_none=True)
                    h = timed(lambda: layer(xl).backward(dy))
                    xl.grad = None
                    wl.grad = bl.grad = None
                    d = timed(lambda: F.linear(xl, wl, bl).backward(dy))
                if rep >= 0:
                    hw.append(h[0])
                    hc.append(h[1])
                    dw.append(d[0])
                    dc.append(d[1])
            cases.append({"tokens": int(x.shape[0]), "pass": p, "hashed_wall_ms": statistics.median(hw),
                          "hashed_cpu_ms": statistics.median(hc), "dense_wall_ms": statistics.median(dw),
                          "dense_cpu_ms": statistics.median(dc), "max_abs_diff": diff})
    print(json.dumps({"torch": torch.__version__, "threads": torch.get_num_threads(), "cases": cases}))


if __name__ == "__main__":
    main()
