"""Training steps in plain PyTorch eager, for `mnemoscope bench train --against-python`.

The model is the Python package's (python/mnemoscope/models.py, written from docs/models.md),
loaded from the initial weights the C++ trainer starts from (a safetensors file with the "model"
metadata, as `mnemoscope export-weights` writes). It trains on the very batches the C++ trainer
drew (a safetensors file of "STEP.SEGMENT.tokens / valid / targets / target_valid / next_tokens /
next_valid" tensors) as docs/training.md describes the C++ trainer: the rollout objective with
full BPTT (sum of the segments' masked token losses over their token count), gradients clipped to
the global L2 norm `clip` (norm in float64, scale clip / (norm + 1e-6) when above), AdamW in two
groups (weight decay on 2-D ".weight" parameters whose name has no "emb", none on the rest),
betas (0.9, 0.999), eps 1e-8, and the C++ side's learning rate of each step.

It prints one JSON line: each step's loss, and the wall and CPU milliseconds of every step after
the `warmup_steps` first ones.

    /usr/bin/python3 train_eager.py --weights W.safetensors --batches B.safetensors --plan P.json

P.json: {"lrs": [lr of step 0, 1, ...], "weight_decay": w, "clip": c, "warmup_steps": n, "threads": t,
"device": "cpu" or "cuda", "precision": "fp32" or "bf16"}. "bf16": the forward passes (and the
loss) run under torch.autocast("cpu", dtype=torch.bfloat16), the backward and AdamW outside it, as
PyTorch's autocast recipe says. On "cuda" the model and batches live on the GPU and each step is timed
to its last kernel (torch.cuda.synchronize), as the C++ side times it.
Needs Debian's python3-torch; exits 77 (skipped) without it.
"""

import argparse
import contextlib
import json
import os
import sys
import time

# As `mnemoscope --threads N` does, bound the BLAS's own threads too (read when it loads).
if "--plan" in sys.argv[:-1]:
    try:
        with open(sys.argv[sys.argv.index("--plan") + 1]) as f:
            _t = int(json.load(f).get("threads", 0))
        if _t > 0:
            os.environ["OPENBLAS_NUM_THREADS"] = str(_t)
    except (OSError, ValueError):
        pass

try:
    import torch
except ImportError:
    print("train_eager.py: PyTorch is not installed for this python3 (Debian: python3-torch)", file=sys.stderr)
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))
from mnemoscope.models import Segment, load_weights  # noqa: E402
from mnemoscope.safetensors import load_safetensors  # noqa: E402

FIELDS = ("tokens", "valid", "targets", "target_valid", "next_tokens", "next_valid")


def read_batches(path, device):
    """{step: [Segment, ...]} from the C++ side's file, on `device`."""
    f = load_safetensors(path)
    steps = {}
    for name in f:
        s, k, field = name.split(".", 2)
        steps.setdefault(int(s), {}).setdefault(int(k), {})[field] = torch.from_numpy(f[name].copy())
    out = {}
    for s, segs in steps.items():
        out[s] = []
        for k in sorted(segs):
            d = segs[k]
            for field in ("valid", "target_valid", "next_valid"):
                if field in d:
                    d[field] = d[field].to(torch.bool)
            out[s].append(Segment(**{f: (d[f].to(device) if d.get(f) is not None else None) for f in FIELDS}))
    return [out[s] for s in sorted(out)]


def decays(name, p):
    return p.dim() == 2 and name.endswith(".weight") and "emb" not in name


def clip_grad_norm(params, max_norm):
    grads = [p.grad for p in params if p.grad is not None]
    norm = sum(float(g.double().pow(2).sum()) for g in grads) ** 0.5
    if max_norm > 0 and norm == norm and norm != float("inf") and norm > max_norm:
        scale = max_norm / (norm + 1e-6)
        with torch.no_grad():
            for g in grads:
                g.mul_(scale)
    return norm


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--weights", required=True)
    ap.add_argument("--batches", required=True)
    ap.add_argument("--plan", required=True)
    a = ap.parse_args()
    with open(a.plan) as f:
        plan = json.load(f)
    if plan.get("threads", 0) > 0:
        torch.set_num_threads(int(plan["threads"]))
    device = torch.device(plan.get("device", "cpu"))
    cuda = device.type == "cuda"
    if cuda and not torch.cuda.is_available():
        raise SystemExit("train_eager.py: device cuda asked for, but this PyTorch sees no CUDA device")
    model = load_weights(a.weights).to(device)
    model.train()
    batches = read_batches(a.batches, device)
    lrs = plan["lrs"]
    if len(lrs) != len(batches):
        raise SystemExit("train_eager.py: %d learning rates for %d batches" % (len(lrs), len(batches)))
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    groups = [{"params": [p for n, p in named if decays(n, p)], "weight_decay": plan["weight_decay"]},
              {"params": [p for n, p in named if not decays(n, p)], "weight_decay": 0.0}]
    opt = torch.optim.AdamW([g for g in groups if g["params"]], lr=lrs[0], betas=(0.9, 0.999), eps=1e-8)
    params = [p for _, p in named]
    bf16 = plan.get("precision", "fp32") == "bf16"

    def autocast():
        return torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()
    losses, wall, cpu = [], [], []
    for step, segments in enumerate(batches):
        t0, c0 = time.perf_counter(), time.process_time()
        for g in opt.param_groups:
            g["lr"] = lrs[step]
        opt.zero_grad(set_to_none=True)
        with autocast():
            rollout = model(segments)
        rollout.loss.backward()
        loss = float(rollout.loss)
        norm = clip_grad_norm(params, plan["clip"])
        if loss == loss and norm == norm:
            opt.step()
        if cuda:
            torch.cuda.synchronize()
        t1, c1 = time.perf_counter(), time.process_time()
        losses.append(loss)
        if os.environ.get("MNEMO_TRAIN_EAGER_VERBOSE"):
            print("step %d loss %.6f %.1f ms" % (step, loss, 1000.0 * (t1 - t0)), file=sys.stderr)
        if step >= plan.get("warmup_steps", 1):
            wall.append(1000.0 * (t1 - t0))
            cpu.append(1000.0 * (c1 - c0))
    print(json.dumps({"losses": losses, "wall_ms": wall, "cpu_ms": cpu, "threads": torch.get_num_threads(),
                      "torch": torch.__version__, "device": str(device)}))


if __name__ == "__main__":
    main()
