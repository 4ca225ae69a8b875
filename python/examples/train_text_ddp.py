#!/usr/bin/env python3
"""Train a Mnemoscope memory model (RMT, Memformer, Transformer-XL, ...) as a byte-level language
model on a text file with a plain PyTorch loop under torch.distributed, rank 0 recording the run
as a Mnemoscope session (docs/python.md "Your own loop, on several processes"):

    # 2 processes on this machine (Gloo), fine-tuning the zoo's RMT text model on Moby Dick
    python3 python/examples/train_text_ddp.py --nproc 2 --init assets/models/rmt-text.safetensors \\
        --data moby-dick.txt --steps 200 --out /tmp/ddp-rmt
    # the same under torchrun, e.g. on GPUs (NCCL)
    torchrun --nproc_per_node 8 python/examples/train_text_ddp.py --backend nccl --init ... --out ...

    ./build/mnemoscope gui --session /tmp/ddp-rmt          # follow it live, or replay it afterwards
    ./build/mnemoscope step --checkpoint /tmp/ddp-rmt --doc some.txt --out /tmp/steps   # step its weights

The model is mnemoscope.models' (the C++ models' computation and parameter names), started from
a weights file (--init: a zoo model, a `mnemoscope train` checkpoint or session, an earlier run
of this script) or fresh from a config (--config: a session config such as
sessions/text-rmt.json, or a model object). The text is split as `mnemoscope train` splits a
single file (core/data/text_corpus.h): contiguous blocks, the first for training, then valid,
then test. Each step every rank draws its own --batch windows of --segments segments from the
training block (seeded by --seed and the rank), runs the rollout with BPTT through the memory,
and DistributedDataParallel averages the gradients; AdamW, warm-up then cosine, global-norm
clipping. Rank 0 alone writes: metrics, evaluations on the valid block with the memory carried
and zeroed (the gap is what the memory contributes), probe recordings of a valid passage with
every memory trace, and checkpoints in the C++ module names.
"""

import argparse
import math
import os
import resource
import socket
import sys
import time

try:
    import numpy as np
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
    from torch.nn.parallel import DistributedDataParallel
except ImportError as e:
    print("train_text_ddp.py needs PyTorch and numpy for this python3 (Debian: python3-torch): %s" % e,
          file=sys.stderr)
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # usable in place
import mnemoscope  # noqa: E402
from mnemoscope import models as mm  # noqa: E402
from app_path import app_command  # noqa: E402  (python/examples/app_path.py)


class UsageError(Exception):
    """Bad input: printed as one line, exit 2."""


# ------------------------------------------------------------------------------ the text


class TextSplit:
    """A text file read memory-mapped, split into contiguous blocks as `mnemoscope train` splits
    one file: [0, a) train, [a, b) valid, [b, size) test with b = size - round(size * test) and
    a = b - round(size * valid)."""

    def __init__(self, path, valid_fraction, test_fraction, window):
        if not os.path.exists(path):
            raise UsageError("--data '%s': no such file" % path)
        if os.path.isdir(path):
            raise UsageError("--data '%s' is a directory; pass one text file (concatenate a directory's files "
                             "first, or train it with `mnemoscope train --data DIR`)" % path)
        try:
            size = os.path.getsize(path)
            self.bytes = np.memmap(path, dtype=np.uint8, mode="r") if size else np.zeros(0, np.uint8)
        except OSError as e:
            raise UsageError("--data '%s' cannot be read: %s" % (path, e.strerror or e)) from None
        if size == 0:
            raise UsageError("--data '%s' is empty; pass a text file" % path)
        head = bytes(self.bytes[:4096])
        if b"\0" in head:
            raise UsageError("--data '%s' looks binary (a NUL byte in its first 4 KiB); pass a text file" % path)
        b = size - round(size * test_fraction)
        a = b - round(size * valid_fraction)
        self.path, self.size = path, size
        self.ranges = {"train": (0, a), "valid": (a, b), "test": (b, size)}
        need = {"train": window, "valid": window}
        for split, n in need.items():
            lo, hi = self.ranges[split]
            if hi - lo < n:
                raise UsageError("--data '%s' (%d bytes) leaves the %s block %d bytes, less than one window of %d; "
                                 "pass a longer text or lower --segments" % (path, size, split, hi - lo, n))

    def windows(self, split, count, window, gen):
        """`count` windows of `window` bytes at random offsets inside the split's block."""
        lo, hi = self.ranges[split]
        starts = torch.randint(lo, hi - window + 1, (count,), generator=gen).tolist()
        return torch.from_numpy(np.stack([np.asarray(self.bytes[s:s + window]) for s in starts]).astype(np.int64))

    def fixed_windows(self, split, count, window):
        """`count` windows evenly spread over the split's block (the same every evaluation)."""
        lo, hi = self.ranges[split]
        last = hi - window
        starts = [lo + (last - lo) * i // max(1, count - 1) for i in range(count)] if count > 1 else [lo]
        return torch.from_numpy(np.stack([np.asarray(self.bytes[s:s + window]) for s in starts]).astype(np.int64))


# ------------------------------------------------------------------------------ training


def lr_at(step, steps, peak, warmup, min_ratio=0.05):
    """The C++ trainer's schedule (docs/training.md): linear warm-up, then cosine to min_ratio."""
    if step < warmup:
        return peak * (step + 1) / warmup
    p = (step - warmup) / max(1, steps - warmup)
    return peak * (min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * p)))


def decays(name, p):
    """Weight decay on 2-D weights other than embeddings, as the C++ trainer's AdamW groups."""
    return p.dim() == 2 and name.endswith(".weight") and "emb" not in name


def evaluate(model, windows, segment_len, between):
    """(bits per byte, per-byte accuracy) on `windows` ([N, S*L + 1]), the memory carried or
    zeroed between segments. Memformer predicts each segment's next segment, the others the
    next byte."""
    model.eval()
    total = count = correct = 0.0
    with torch.no_grad():
        for chunk in windows.split(16):
            segs = mm.window_segments(chunk, segment_len)
            r = model(segs, between=between)
            total += float(r.loss_sum)
            count += float(r.loss_count)
            for out, seg in zip(r.outputs, segs):
                if out.logits is None:
                    continue
                target = seg.next_tokens if model.config.model == "memformer" else seg.targets
                correct += float((out.logits.argmax(-1) == target).sum())
    model.train()
    return total / max(count, 1.0) / math.log(2), correct / max(count, 1.0)


def record_probe(writer, model, probe, step):
    """Steps the probe passage from the initial memory with every trace and writes it as the
    session's recording of `step` (what the app's memory panels show)."""
    model.eval()
    memory, traces, losses = None, [], []
    device = next(model.parameters()).device
    with torch.no_grad():
        for seg in mm.document_segments(probe, model.config.segment_len):
            out, memory, tr = model.step(seg.to(device), memory, trace=True)
            traces.append(tr)
            losses.append(None if out.loss is None else float(out.loss))
    model.train()
    writer.record(step, probe, traces, loss=losses)


def build(args):
    if args.init:
        try:
            model = mm.load_weights(args.init)
        except (mnemoscope.MnemoscopeError, OSError) as e:
            raise UsageError("--init: %s" % e) from None
        return model, "weights of %s" % args.init
    try:
        cfg = mm.Config.from_file(args.config)
    except OSError as e:
        raise UsageError("--config '%s' cannot be read: %s" % (args.config, e.strerror or e)) from None
    except mnemoscope.MnemoscopeError as e:
        raise UsageError("--config: %s" % e) from None
    try:
        return mm.build_model(cfg, seed=args.seed), "fresh from %s (seed %d)" % (args.config, args.seed)
    except mnemoscope.MnemoscopeError as e:
        raise UsageError("--config: %s" % e) from None


def worker(rank, world, args):
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    dist.init_process_group(args.backend, rank=rank, world_size=world)
    try:
        train(rank, world, args)
    finally:
        dist.destroy_process_group()


def train(rank, world, args):
    device = torch.device("cuda", rank % torch.cuda.device_count()) if args.backend == "nccl" else torch.device("cpu")
    model, origin = build(args)
    model = model.to(device).train()
    cfg = model.config
    L, S = cfg.segment_len, args.segments
    window = S * L + 1
    text = TextSplit(args.data, args.valid_fraction, args.test_fraction, window)
    # Every rank starts from rank 0's weights (a fresh model is seeded alike; this makes sure).
    with torch.no_grad():
        for p in model.parameters():
            dist.broadcast(p.data, 0)
    ddp = DistributedDataParallel(model)
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    groups = [{"params": [p for n, p in named if decays(n, p)], "weight_decay": args.weight_decay},
              {"params": [p for n, p in named if not decays(n, p)], "weight_decay": 0.0}]
    opt = torch.optim.AdamW([g for g in groups if g["params"]], lr=args.lr, betas=(0.9, 0.999), eps=1e-8)
    gen = torch.Generator().manual_seed(args.seed * 1000 + rank)

    writer = None
    if rank == 0:
        lo, hi = text.ranges["valid"]
        probe = bytes(text.bytes[lo:lo + min(args.probe_segments * L, hi - lo)])
        valid = text.fixed_windows("valid", args.eval_windows, window).to(device)
        config = {
            "model": cfg.to_json(),
            "task": {"name": "text", "corpus": os.path.abspath(args.data), "length": S * L, "segments": S},
            "train": {"steps": args.steps, "batch": args.batch * world, "lr": args.lr, "warmup": args.warmup,
                      "schedule": "cosine", "min_lr_ratio": 0.05, "weight_decay": args.weight_decay,
                      "clip": args.clip, "seed": args.seed, "strategy": "bptt", "bptt_depth": -1,
                      "eval_every": args.eval_every, "record_every": args.record_every},
            "split": {s: {"path": os.path.abspath(args.data), "begin": b, "end": e}
                      for s, (b, e) in text.ranges.items()},
            "distributed": {"world_size": world, "backend": args.backend, "batch_per_rank": args.batch},
            "source": "python/examples/train_text_ddp.py (PyTorch %s); model %s" % (torch.__version__, origin),
        }
        writer = mnemoscope.SessionWriter(args.out, config)
        print("train_text_ddp: %s %s (d %d, memory %d, segment %d) on %s: %d processes x %d windows of %d segments, "
              "%d steps -> %s" % (cfg.model, origin, cfg.dim, cfg.slots, L, args.data, world, args.batch, S,
                                  args.steps, args.out), flush=True)
        (vlo, vhi), (tlo, thi) = text.ranges["valid"], text.ranges["test"]
        print("held out: valid bytes %d..%d, test bytes %d..%d (never trained on: `tail -c %d %s` is the test block)"
              % (vlo, vhi, tlo, thi, thi - tlo, args.data), flush=True)

    def log_eval(step, zero_memory, final, bits, accuracy):
        writer.log_eval(step, split="valid", zero_memory=zero_memory, final=final, loss=bits * math.log(2),
                        bits_per_token=bits, accuracy=accuracy, examples=int(valid.shape[0]))

    def eval_and_log(step):
        (bpb, acc), (zero, zacc) = evaluate(model, valid, L, "carry"), evaluate(model, valid, L, "zero")
        log_eval(step, False, False, bpb, acc)
        log_eval(step, True, False, zero, zacc)
        return bpb, acc, zero, zacc

    t_start = time.time()
    if writer is not None:
        record_probe(writer, model, probe, 0)
    for step in range(1, args.steps + 1):
        t0 = time.time()
        lr = lr_at(step - 1, args.steps, args.lr, args.warmup)
        for g in opt.param_groups:
            g["lr"] = lr
        batch = text.windows("train", args.batch, window, gen).to(device)
        rollout = ddp(mm.window_segments(batch, L))
        opt.zero_grad(set_to_none=True)
        rollout.loss.backward()  # DistributedDataParallel averages the gradients over the ranks here
        grad_norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip))
        opt.step()
        loss = rollout.loss.detach().clone()
        dist.all_reduce(loss)  # the mean loss over all ranks' windows, for the log
        if writer is None:
            continue
        dt = time.time() - t0
        writer.log(step, loss=float(loss) / world, lr=lr, grad_norm=grad_norm,
                   tokens_per_s=batch.numel() * world / dt, seconds=time.time() - t_start,
                   peak_rss_mib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
        last = step == args.steps
        if step % args.eval_every == 0 or last:
            bpb, acc, zero, zacc = eval_and_log(step)
            if last:  # the end-of-run evaluation (the dashboard's "final" line) is this one
                log_eval(step, False, True, bpb, acc)
                log_eval(step, True, True, zero, zacc)
            print("step %d/%d  loss %.4f  valid %.4f bits/byte, memory zeroed %.4f (memory saves %+.4f)  %.0f s"
                  % (step, args.steps, float(loss) / world, bpb, zero, zero - bpb, time.time() - t_start), flush=True)
        if step % args.record_every == 0 or last:
            record_probe(writer, model, probe, step)
        if step % args.checkpoint_every == 0 or last:
            writer.checkpoint(step, {k: v.detach().float().cpu() for k, v in model.state_dict().items()},
                              {"model": cfg.dumps(), "note": "python/examples/train_text_ddp.py"})
    # Every rank must hold the same weights (DistributedDataParallel's promise): compared here.
    flat = torch.cat([p.detach().double().reshape(-1) for p in model.parameters()])
    gathered = [torch.zeros_like(flat) for _ in range(world)]
    dist.all_gather(gathered, flat)
    spread = max(float((g - gathered[0]).abs().max()) for g in gathered)
    if writer is not None:
        writer.close()
        print("the %d processes' weights differ by at most %g" % (world, spread), flush=True)
        app = app_command()
        print("done: %d steps in %.1f s; valid %.4f bits/byte, memory zeroed %.4f\n"
              "  follow or replay it:  %s gui --session %s\n"
              "  step its weights:     %s step --checkpoint %s --doc FILE --out DIR"
              % (args.steps, time.time() - t_start, bpb, zero, app, args.out, app, args.out), flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def parse(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--init", help="weights to start from: a zoo model, checkpoint, export or session directory")
    src.add_argument("--config", help="a session config (or model object) to build a fresh model from")
    ap.add_argument("--data", required=True, help="the text file to train on (split into train / valid / test blocks)")
    ap.add_argument("--out", required=True, help="session directory to create (must not exist or be empty)")
    ap.add_argument("--nproc", type=int, default=0,
                    help="start this many processes here (Gloo); 0: one process per torchrun rank, or 1 alone")
    ap.add_argument("--backend", default="gloo", choices=("gloo", "nccl"), help="nccl: one GPU per rank")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--batch", type=int, default=8, help="windows per process and step")
    ap.add_argument("--segments", type=int, default=8, help="segments per window (BPTT through all of them)")
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--clip", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--valid-fraction", type=float, default=0.05)
    ap.add_argument("--test-fraction", type=float, default=0.05)
    ap.add_argument("--eval-every", type=int, default=50)
    ap.add_argument("--eval-windows", type=int, default=32, help="valid windows per evaluation")
    ap.add_argument("--record-every", type=int, default=50, help="steps between probe recordings")
    ap.add_argument("--probe-segments", type=int, default=8, help="segments of the recorded valid passage")
    ap.add_argument("--checkpoint-every", type=int, default=100)
    ap.add_argument("--threads", type=int, default=1, help="torch threads per process (0: torch's default)")
    args = ap.parse_args(argv)
    for name in ("steps", "batch", "segments", "eval_every", "eval_windows", "record_every", "probe_segments",
                 "checkpoint_every"):
        if getattr(args, name) < 1:
            ap.error("--%s must be at least 1" % name.replace("_", "-"))
    if args.warmup < 0 or args.nproc < 0 or args.threads < 0:
        ap.error("--warmup, --nproc and --threads must not be negative")
    if not (0 < args.valid_fraction < 1 and 0 <= args.test_fraction < 1 and args.valid_fraction + args.test_fraction < 1):
        ap.error("--valid-fraction must be in (0, 1), --test-fraction in [0, 1), their sum below 1")
    return args


def main(argv=None):
    args = parse(argv)
    if args.backend == "nccl" and not torch.cuda.is_available():
        print("train_text_ddp: --backend nccl needs CUDA GPUs, and PyTorch sees none; use --backend gloo",
              file=sys.stderr)
        return 2
    # Rank 0 alone writes --out (under torchrun the other ranks may start after it made it).
    if os.environ.get("RANK", "0") == "0" and os.path.exists(args.out) and \
            (not os.path.isdir(args.out) or os.listdir(args.out)):
        print("train_text_ddp: --out '%s' exists and is not empty; pass a new directory" % args.out, file=sys.stderr)
        return 2
    try:  # the input checks every rank would make, once, before any process starts
        model, _ = build(args)
        TextSplit(args.data, args.valid_fraction, args.test_fraction, args.segments * model.config.segment_len + 1)
        del model
    except UsageError as e:
        print("train_text_ddp: %s" % e, file=sys.stderr)
        return 2
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:  # under torchrun
        if args.threads > 0:
            torch.set_num_threads(args.threads)
        dist.init_process_group(args.backend)
        try:
            train(dist.get_rank(), dist.get_world_size(), args)
        finally:
            dist.destroy_process_group()
        return 0
    nproc = max(1, args.nproc)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(free_port()))
    if nproc == 1:
        worker(0, 1, args)
    else:
        mp.spawn(worker, args=(nproc, args), nprocs=nproc, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
