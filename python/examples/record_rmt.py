#!/usr/bin/env python3
"""A tiny Recurrent Memory Transformer (Bulatov et al., "Recurrent Memory Transformer") in plain
PyTorch, trained on the copy task and recorded with mnemoscope.SessionWriter, so that the
desktop app can watch it live and replay it afterwards:

    python3 python/examples/record_rmt.py --out /tmp/py-rmt           # about a minute on 2 cores
    ./build/mnemoscope gui --session /tmp/py-rmt                      # watch it (live or afterwards)
    ./build/mnemoscope export --session /tmp/py-rmt                   # every curve and map as PNG/SVG/CSV

The task is the one of `mnemoscope train` with sessions/copy-rmt-tiny.json: 8 letters, '>',
then the letters twice ("dbeb..>dbeb..dbeb.."), 25 bytes split into 2 segments of 13; the loss
covers the copies only. Most of the second segment's targets were only seen in the first
segment, so they can only be predicted through the memory tokens.

The model: each segment runs as one sequence [read memory (m) | segment tokens (L) | write
memory (m)] through pre-norm transformer blocks; read rows attend to the read block, token rows
to the read block and earlier tokens, write rows to everything; the write rows' outputs become
the next segment's read memory (gradients flow through it: BPTT over both segments). The
attention maps are collected with mnemoscope.pytorch.HookCollector by module name and turned
into canonical trace keys (rmt.attn.<layer>, rmt.block_mass.<layer>, rmt.memory_prev,
rmt.memory, input.tokens) by mnemoscope.pytorch.rmt_traces.
"""

import argparse
import math
import os
import resource
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # usable in place
import mnemoscope  # noqa: E402
from mnemoscope.pytorch import HookCollector, rmt_traces  # noqa: E402
from app_path import app_command  # noqa: E402  (python/examples/app_path.py)

PAD = 256  # the byte tokenizer's <pad> (docs/formats.md "Tokens")
VOCAB = 257


# ------------------------------------------------------------------------------ the task


class CopyTask:
    """'<src>><src><src>': src = `source_len` letters from the first `symbols` of a..z."""

    def __init__(self, source_len=8, symbols=26, segments=2):
        self.source_len, self.symbols, self.segments = source_len, symbols, segments
        self.length = 3 * source_len + 1
        self.segment_len = (self.length + segments - 1) // segments

    def text(self, gen):
        src = bytes(97 + int(c) for c in torch.randint(0, self.symbols, (self.source_len,), generator=gen))
        return src + b">" + src + src

    def batch(self, texts):
        """tokens [B, S*L] (padded), targets [B, S*L] (next token), scored [B, S*L] (a copy target)."""
        n = self.segment_len * self.segments
        tokens = torch.full((len(texts), n), PAD, dtype=torch.long)
        for i, t in enumerate(texts):
            tokens[i, :len(t)] = torch.tensor(list(t))
        targets = torch.full_like(tokens, PAD)
        targets[:, :-1] = tokens[:, 1:]
        pos = torch.arange(n)
        scored = ((pos + 1 > self.source_len) & (pos + 1 < self.length)).expand(len(texts), n)
        return tokens, targets, scored


# ------------------------------------------------------------------------------ the model


class Attention(nn.Module):
    """Multi-head self-attention returning (output, probabilities [B, H, T, T])."""

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x, mask):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-1, -2) / math.sqrt(d // self.heads) + mask
        probs = scores.softmax(-1)
        y = (probs @ v).transpose(1, 2).reshape(b, t, d)
        return self.out(y), probs


class Block(nn.Module):
    def __init__(self, dim, heads, ff):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = Attention(dim, heads)
        self.ff = nn.Sequential(nn.Linear(dim, ff), nn.GELU(), nn.Linear(ff, dim))

    def forward(self, x, mask):
        a, _ = self.attn(self.ln1(x), mask)
        x = x + a
        return x + self.ff(self.ln2(x))


def rmt_mask(m, l, token_valid):
    """Additive mask [B, 1, T, T] over [read m | tokens l | write m] (the RMT decoder layout)."""
    t = 2 * m + l
    allow = torch.zeros(t, t, dtype=torch.bool)
    allow[:m, :m] = True                                              # read rows: the read block
    allow[m:m + l, :m] = True                                         # token rows: read block ...
    allow[m:m + l, m:m + l] = torch.ones(l, l, dtype=torch.bool).tril()  # ... and earlier tokens
    allow[m + l:, :] = True                                           # write rows: everything
    allow = allow.unsqueeze(0).expand(token_valid.shape[0], t, t).clone()
    hidden = ~token_valid                                              # padding is seen by no one but itself
    allow[:, :, m:m + l] &= ~hidden.unsqueeze(1)
    allow[:, torch.arange(m, m + l), torch.arange(m, m + l)] = True
    mask = torch.zeros(allow.shape)
    mask[~allow] = float("-inf")
    return mask.unsqueeze(1)


class TinyRMT(nn.Module):
    def __init__(self, memory=8, segment_len=13, dim=64, heads=4, layers=2, ff=128):
        super().__init__()
        self.m, self.l = memory, segment_len
        self.embed = nn.Embedding(VOCAB, dim)
        self.pos = nn.Parameter(torch.randn(segment_len, dim) * 0.02)
        self.memory_init = nn.Parameter(torch.randn(memory, dim) * 0.02)
        self.read_pos = nn.Parameter(torch.randn(memory, dim) * 0.02)
        self.write_pos = nn.Parameter(torch.randn(memory, dim) * 0.02)
        self.blocks = nn.ModuleList([Block(dim, heads, ff) for _ in range(layers)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, VOCAB)
        # Token and position embeddings on the same scale (GPT-2's N(0, 0.02)): with PyTorch's
        # default N(0, 1) token embeddings the positions are drowned out and learning to copy
        # by position stalls on the ln(26) plateau much longer.
        nn.init.normal_(self.embed.weight, std=0.02)

    def initial_memory(self, batch):
        return self.memory_init.unsqueeze(0).expand(batch, -1, -1)

    def forward(self, tokens, memory):
        """tokens [B, L], memory [B, m, d] -> logits [B, L, V], next memory [B, m, d]."""
        b, l = tokens.shape
        x = torch.cat([memory + self.read_pos, self.embed(tokens) + self.pos[:l], memory + self.write_pos], 1)
        mask = rmt_mask(self.m, l, tokens != PAD)
        for block in self.blocks:
            x = block(x, mask)
        x = self.norm(x)
        return self.head(x[:, self.m:self.m + l]), x[:, self.m + l:]


# ------------------------------------------------------------------------------ training


def run_segments(model, tokens, targets, scored, zero_memory=False):
    """Loss over the scored targets of every segment, BPTT through the memory; per-segment
    (sum of losses, count, correct) for reporting. zero_memory: every segment starts from the
    initial memory (the ablation that shows what crosses segments through memory)."""
    b = tokens.shape[0]
    memory = model.initial_memory(b)
    total, count, correct, per_seg = 0.0, 0, 0, []
    for s in range(0, tokens.shape[1], model.l):
        tok, tgt, sc = tokens[:, s:s + model.l], targets[:, s:s + model.l], scored[:, s:s + model.l]
        if zero_memory:
            memory = model.initial_memory(b)
        logits, memory = model(tok, memory)
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), tgt.reshape(-1), reduction="none").view_as(tgt)
        seg_loss = (loss * sc).sum()
        total = total + seg_loss
        n = int(sc.sum())
        count += n
        hits = int(((logits.argmax(-1) == tgt) & sc).sum())
        correct += hits
        per_seg.append((float(seg_loss), n, hits))
    return total / max(count, 1), correct / max(count, 1), per_seg


def lr_at(step, steps, peak, warmup):
    if step < warmup:
        return peak * (step + 1) / warmup
    p = (step - warmup) / max(1, steps - warmup)
    return peak * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * p)))


def record_probe(writer, model, task, probe_text, step):
    """Steps the probe document through the model (no grad, eval mode, from the initial memory)
    and writes every segment's traces as traces/step-N.safetensors."""
    was_training = model.training
    model.eval()
    tokens, targets, scored = task.batch([probe_text])
    names = {"blocks.%d.attn" % i: "rmt.attn.%d" % i for i in range(len(model.blocks))}
    segments, losses = [], []
    with torch.no_grad(), HookCollector(model, names) as hooks:
        # Attention.forward returns (output, probabilities): the default extractor keeps the last tensor.
        memory = model.initial_memory(1)
        for s in range(0, tokens.shape[1], model.l):
            tok = tokens[:, s:s + model.l]
            tgt, sc = targets[:, s:s + model.l], scored[:, s:s + model.l]
            memory_prev = memory
            logits, memory = model(tok, memory)
            attn = hooks.take()
            segments.append(rmt_traces(attn, model.m, tokens=tok, token_valid=tok != PAD,
                                       memory_prev=memory_prev, memory=memory))
            n = int(sc.sum())
            loss = F.cross_entropy(logits[0], tgt[0], reduction="none")[sc[0]].sum() / n if n else None
            losses.append(None if loss is None else float(loss))
    model.train(was_training)
    return writer.record(step, probe_text, segments, loss=losses)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="session directory to create (must not exist or be empty)")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--record-every", type=int, default=25, help="steps between probe recordings (also at 0 and the end)")
    ap.add_argument("--eval-every", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch's default)")
    args = ap.parse_args(argv)
    if args.steps < 1:
        ap.error("--steps must be at least 1")
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    task = CopyTask()
    model = TinyRMT(memory=8, segment_len=task.segment_len)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    warmup = 50
    config = {
        "model": {"model": "rmt", "slots": model.m, "segment_len": task.segment_len, "dim": 64, "heads": 4,
                  "layers": len(model.blocks), "ff": 128},
        "task": {"name": "copy", "source_len": task.source_len, "symbols": task.symbols, "segments": task.segments},
        "train": {"steps": args.steps, "batch": args.batch, "lr": args.lr, "warmup": warmup, "schedule": "cosine",
                  "clip": 1.0, "seed": args.seed, "record_every": args.record_every},
        "source": "python/examples/record_rmt.py (plain PyTorch %s)" % torch.__version__,
    }
    probe_gen = torch.Generator().manual_seed(10_000 + args.seed)
    probe_text = task.text(probe_gen)
    valid_gen = torch.Generator().manual_seed(20_000 + args.seed)
    valid = task.batch([task.text(valid_gen) for _ in range(256)])
    data_gen = torch.Generator().manual_seed(args.seed)

    t_start = time.time()
    with mnemoscope.SessionWriter(args.out, config) as w:
        record_probe(w, model, task, probe_text, 0)
        for step in range(1, args.steps + 1):
            t0 = time.time()
            lr = lr_at(step - 1, args.steps, args.lr, warmup)
            for g in opt.param_groups:
                g["lr"] = lr
            tokens, targets, scored = task.batch([task.text(data_gen) for _ in range(args.batch)])
            loss, acc, _ = run_segments(model, tokens, targets, scored)
            opt.zero_grad()
            loss.backward()
            grad_norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0))
            opt.step()
            dt = time.time() - t0
            w.log(step, loss=loss, accuracy=acc, lr=lr, grad_norm=grad_norm, tokens_per_s=tokens.numel() / dt,
                  seconds=time.time() - t_start, peak_rss_mib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
            if step % args.eval_every == 0 or step == args.steps:
                with torch.no_grad():
                    model.eval()
                    vloss, vacc, _ = run_segments(model, *valid)
                    zloss, zacc, _ = run_segments(model, *valid, zero_memory=True)
                    model.train()
                # The same evaluation with the memory zeroed: the dashboard's "valid, memory zeroed".
                w.log_eval(step, split="valid", loss=vloss, accuracy=vacc)
                w.log_eval(step, split="valid", zero_memory=True, loss=zloss, accuracy=zacc)
                print("step %4d  loss %.3f  accuracy %.3f  valid loss %.3f  valid accuracy %.3f  (%.0f s)"
                      % (step, float(loss), acc, float(vloss), vacc, time.time() - t_start), flush=True)
            if step % args.record_every == 0 or step == args.steps:
                record_probe(w, model, task, probe_text, step)
            if step % 100 == 0 or step == args.steps:
                w.checkpoint(step, model.state_dict(), {"note": "TinyRMT of python/examples/record_rmt.py"})
        # The end-of-run evaluations (the dashboard's "final" line, export's final_evaluation.csv).
        w.log_eval(args.steps, split="valid", final=True, loss=vloss, accuracy=vacc)
        w.log_eval(args.steps, split="valid", zero_memory=True, final=True, loss=zloss, accuracy=zacc)
        print("valid accuracy with the memory reset between segments: %.3f (loss %.3f)" % (zacc, float(zloss)))
    print("session written to %s in %.1f s; watch it with: %s gui --session %s"
          % (args.out, time.time() - t_start, app_command(), args.out))


if __name__ == "__main__":
    main()
