"""Memformer's and RMT's steps in plain PyTorch eager, for `mnemoscope bench step --against-python`.

Written from docs/models.md ("Memformer" and "RMT, Transformer-XL and the no-memory
transformer") alone, not from the C++ source, so it is both the Python baseline of the step
benchmark and a second implementation the C++ models are checked against. It reads the
weights and the resolved config from a safetensors file written by `mnemoscope export-weights`
(metadata "model"), steps through a document segment by segment as the engine does, and
prints one JSON line: the median milliseconds per segment, each segment's loss and the memory
after the last step. One segment is, for Memformer, the encoder with memory reading, the
writer, forgetting, and the decoder over the next segment with its loss; for RMT, the
[read | tokens | write] rows through the relative-attention layers, the next-token loss (the
last token predicting the next segment's first) and the next memory. Times: wall clock and
this process's CPU time (all threads), per segment, median over the passes after a warm-up
pass.

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
    import torch.nn.functional as F
except ImportError:
    print("step_eager.py: PyTorch is not installed for this python3 (Debian: python3-torch)", file=sys.stderr)
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))
from mnemoscope.safetensors import load_safetensors  # noqa: E402

PAD, BOS = 256, 257


class Eager:
    """LayerNorm, Linear and head splitting over the weights by module path (docs/models.md
    "Common building blocks"), and the config fields every model reads."""

    def __init__(self, weights, cfg):
        self.w = weights
        self.d = cfg["dim"]
        self.h = cfg["heads"]
        self.dh = self.d // self.h
        self.L = cfg["segment_len"]

    def ln(self, x, p):
        return F.layer_norm(x, (self.d,), self.w[p + ".weight"], self.w[p + ".bias"], 1e-5)

    def lin(self, x, p):
        return F.linear(x, self.w[p + ".weight"], self.w[p + ".bias"])

    def heads(self, x):  # [B, T, d] -> [B, H, T, dh]
        b, t, _ = x.shape
        return x.view(b, t, self.h, self.dh).transpose(1, 2)


class Memformer(Eager):
    def __init__(self, weights, cfg):
        super().__init__(weights, cfg)
        self.k = cfg["slots"]
        self.C = cfg.get("n_cls", 1)
        self.tau = cfg.get("temperature", 1.0)
        self.forgetting = cfg.get("forgetting", True)
        self.memory = cfg.get("memory", True)
        self.n_enc = cfg["layers"]
        self.n_dec = cfg["dec_layers"]
        self.scale = math.sqrt(self.d) if cfg.get("memory_scale", "unit") == "sqrt_dim" else 1.0
        if cfg.get("linear", "dense") != "dense":
            raise SystemExit("step_eager.py: only dense projections (\"linear\": \"dense\")")

    def attn(self, p, q_in, kv_in, mask):
        q = self.heads(self.lin(q_in, p + ".q"))
        k = self.heads(self.lin(kv_in, p + ".k"))
        v = self.heads(self.lin(kv_in, p + ".v"))
        logits = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.dh)
        if mask is not None:
            logits = logits + mask
        out = torch.matmul(torch.softmax(logits, -1), v)
        b, _, t, _ = out.shape
        return self.lin(out.transpose(1, 2).reshape(b, t, self.d), p + ".o")

    def ffn(self, x, p):
        return self.lin(F.gelu(self.lin(x, p + ".fc1")), p + ".fc2")

    def initial_memory(self, b):
        m = F.normalize(self.w["v_bias"], dim=-1, eps=1e-12)
        return m.unsqueeze(0).expand(b, -1, -1).contiguous()

    def step(self, tokens, valid, mem, next_tokens=None, next_valid=None):
        b, l = tokens.shape
        seen = mem * self.scale
        # 1. encoder input: tokens, then the cls tokens at positions l..l+C-1
        pos = self.w["enc_pos.weight"]
        h = F.embedding(tokens, self.w["tok_emb.weight"]) + pos[:l]
        if self.C > 0:
            cls = (self.w["cls"] + pos[l:l + self.C]).unsqueeze(0).expand(b, -1, -1)
            h = torch.cat([h, cls], 1)
        enc_valid = torch.cat([valid, torch.ones(b, self.C, dtype=torch.bool)], 1)
        kpm = torch.zeros(b, 1, 1, l + self.C).masked_fill(~enc_valid.view(b, 1, 1, -1), float("-inf"))
        # 2. encoder layers (pre-LayerNorm)
        for n in range(self.n_enc):
            p = "encoder.%d" % n
            x = self.ln(h, p + ".ln_self")
            h = h + self.attn(p + ".self_attn", x, x, kpm)
            if self.memory:
                h = h + self.attn(p + ".mem_read", self.ln(h, p + ".ln_read"), seen, None)
            h = h + self.ffn(self.ln(h, p + ".ln_ffn"), p + ".ffn")
        enc = self.ln(h, "enc_norm")  # 3.
        # 4.-5. writer and forgetting
        if self.memory:
            q = self.heads(self.lin(seen, "writer.q"))        # [B, H, k, dh]
            k_self = self.heads(self.lin(seen, "writer.k"))
            kx = self.heads(self.lin(enc, "writer.k"))        # [B, H, l+C, dh]
            vx = self.heads(self.lin(enc, "writer.v"))
            z_self = (q * k_self).sum(-1, keepdim=True)
            z_x = torch.matmul(q, kx.transpose(-2, -1))
            z_x = z_x.masked_fill(~enc_valid.view(b, 1, 1, -1), float("-inf"))
            z = torch.cat([z_self, z_x], -1) / math.sqrt(self.dh)
            a = torch.softmax(z / self.tau, -1)
            m_prime = a[..., :1] * self.heads(seen) + torch.matmul(a[..., 1:], vx)
            m_prime = m_prime.transpose(1, 2).reshape(b, self.k, self.d)
            if self.forgetting:
                m_prime = m_prime + self.w["v_bias"]
            new_mem = F.normalize(m_prime, dim=-1, eps=1e-12)
        else:
            new_mem = mem
        # 6.-7. decoder over the next segment, teacher forced, and its loss
        loss = float("nan")
        if next_tokens is not None:
            lp = next_tokens.shape[1]
            y = torch.cat([torch.full((b, 1), BOS, dtype=torch.long), next_tokens[:, :lp - 1]], 1)
            g = F.embedding(y, self.w["tok_emb.weight"]) + self.w["dec_pos.weight"][:lp]
            causal = torch.full((lp, lp), float("-inf")).triu(1)
            for n in range(self.n_dec):
                p = "decoder.%d" % n
                x = self.ln(g, p + ".ln_self")
                g = g + self.attn(p + ".self_attn", x, x, causal)
                g = g + self.attn(p + ".cross_attn", self.ln(g, p + ".ln_cross"), enc, kpm)
                g = g + self.ffn(self.ln(g, p + ".ln_ffn"), p + ".ffn")
            logits = F.linear(self.ln(g, "dec_norm"), self.w["head.weight"], self.w["head.bias"])
            tl = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), next_tokens.reshape(-1), reduction="none")
            maskf = next_valid.reshape(-1).float()
            loss = ((tl * maskf).sum() / maskf.sum().clamp_min(1.0)).item()
        return new_mem, loss


class Rmt(Eager):
    """The `rmt` kind of the decoder-only backbone: memory tokens read at the start and
    written at the end of every segment, relative positional attention (pre-LayerNorm)."""

    def __init__(self, weights, cfg):
        super().__init__(weights, cfg)
        self.m = cfg["slots"]
        self.n_layers = cfg["layers"]
        if cfg.get("linear", "dense") != "dense":
            raise SystemExit("step_eager.py: only dense projections (\"linear\": \"dense\")")

    def initial_memory(self, b):
        return self.w["memory_init"].unsqueeze(0).expand(b, -1, -1)

    def mask(self, valid):  # additive [B, 1, T, T] over the rows [read (m) | tokens (l) | write (m)]
        b, l = valid.shape
        m, t = self.m, 2 * self.m + l
        allow = torch.zeros(t, t, dtype=torch.bool)
        allow[:, :m] = True                                   # everyone sees the read block
        allow[m:m + l, m:m + l] = torch.ones(l, l, dtype=torch.bool).tril()  # tokens: causal
        allow[m + l:, m:] = True                              # write rows: all tokens and the write block
        key_ok = torch.cat([torch.ones(b, m, dtype=torch.bool), valid, torch.ones(b, m, dtype=torch.bool)], 1)
        ok = (allow.unsqueeze(0) & key_ok.unsqueeze(1)) | torch.eye(t, dtype=torch.bool).unsqueeze(0)
        return torch.zeros(b, 1, t, t).masked_fill(~ok.unsqueeze(1), float("-inf"))

    def positions(self, t):  # sinusoids of the distances t-1 .. -(t-1): [2t-1, d]
        dist = torch.arange(t - 1, -t, -1, dtype=torch.float32)
        inv_freq = torch.pow(10000.0, -torch.arange(0, self.d, 2, dtype=torch.float32) / self.d)
        ang = dist.unsqueeze(1) * inv_freq.unsqueeze(0)
        return torch.cat([torch.sin(ang), torch.cos(ang)], 1)

    def attn(self, p, h, table, mask):
        b, t, _ = h.shape
        q, k, v = self.heads(self.lin(h, p + ".q")), self.heads(self.lin(h, p + ".k")), self.heads(self.lin(h, p + ".v"))
        r = self.lin(table, p + ".r").view(-1, self.h, self.dh).permute(1, 2, 0)  # [H, dh, R], R = 2t-1
        full = torch.matmul(q + self.w[p + ".v_bias"].unsqueeze(1), r).contiguous()  # [B, H, t, R]
        # Query i reads the distances i - j, j = 0..t-1: table rows t-1-i .. 2t-2-i, i.e.
        # element (t-1) + i*(R-1) + j of its [t, R] plane.
        R = r.shape[-1]
        pos = full.as_strided((b, self.h, t, t), (self.h * t * R, t * R, R - 1, 1), full.storage_offset() + t - 1)
        logits = torch.matmul(q + self.w[p + ".u_bias"].unsqueeze(1), k.transpose(-2, -1)) / math.sqrt(self.dh)
        logits = logits + (pos / math.sqrt(self.dh) + mask)
        out = torch.matmul(torch.softmax(logits, -1), v)
        return self.lin(out.transpose(1, 2).reshape(b, t, self.d), p + ".o")

    def step(self, tokens, valid, mem, next_tokens=None, next_valid=None):
        b, l = tokens.shape
        m = self.m
        x = torch.cat([mem + self.w["read_emb"], F.embedding(tokens, self.w["tok_emb.weight"]),
                       mem + self.w["write_emb"]], 1)
        t = x.shape[1]
        mask, table = self.mask(valid), self.positions(t)
        for n in range(self.n_layers):
            p = "layers.%d" % n
            x = x + self.attn(p + ".attn", self.ln(x, p + ".ln_attn"), table, mask)
            h = self.ln(x, p + ".ln_ffn")
            x = x + self.lin(F.gelu(self.lin(h, p + ".ffn.fc1")), p + ".ffn.fc2")
        logits = F.linear(self.ln(x[:, m:m + l], "norm"), self.w["head.weight"], self.w["head.bias"])
        new_mem = self.ln(x[:, m + l:], "mem_norm")
        # Next-token targets; the last token predicts the next segment's first.
        targets = torch.roll(tokens, -1, 1)
        tvalid = torch.roll(valid, -1, 1)
        tvalid[:, -1] = False
        if next_tokens is not None:
            targets[:, -1] = next_tokens[:, 0]
            tvalid[:, -1] = valid[:, -1] & next_valid[:, 0]
        tl = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1).clamp(0, logits.shape[-1] - 1),
                             reduction="none")
        maskf = tvalid.reshape(-1).float()
        loss = ((tl * maskf).sum() / maskf.sum().clamp_min(1.0)).item()
        return new_mem, loss


MODELS = {"memformer": Memformer, "rmt": Rmt}


def segment(ids, i, L):
    s = ids[i * L:(i + 1) * L]
    tokens = torch.full((1, L), PAD, dtype=torch.long)
    tokens[0, :s.numel()] = s
    valid = torch.zeros(1, L, dtype=torch.bool)
    valid[0, :s.numel()] = True
    return tokens, valid


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
    tf = load_safetensors(a.weights)
    cfg = json.loads(tf.metadata["model"])
    if cfg.get("model") not in MODELS:
        raise SystemExit("step_eager.py: the weights are a '%s' model; this reference has %s"
                         % (cfg.get("model"), " and ".join(sorted(MODELS))))
    weights = {k: torch.from_numpy(v.copy()) for k, v in tf.items()}
    m = MODELS[cfg["model"]](weights, cfg)
    with open(a.doc, "rb") as f:
        ids = torch.frombuffer(bytearray(f.read()), dtype=torch.uint8).long()
    L = m.L
    total = max(1, (ids.numel() + L - 1) // L)
    nseg = min(a.segments, total)
    samples, cpu_samples, losses, mem = [], [], [], None
    with (torch.inference_mode() if a.inference_mode else torch.no_grad()):
        for r in range(-1, a.repeats):  # one warm-up pass
            mem = m.initial_memory(1)
            losses = []
            t0, c0 = time.perf_counter(), time.process_time()
            for i in range(nseg):
                tokens, valid = segment(ids, i, L)
                nxt = segment(ids, i + 1, L) if i + 1 < total else (None, None)
                mem, loss = m.step(tokens, valid, mem, *nxt)
                losses.append(loss)
            t1, c1 = time.perf_counter(), time.process_time()
            if r >= 0:
                samples.append(1000.0 * (t1 - t0) / nseg)
                cpu_samples.append(1000.0 * (c1 - c0) / nseg)
    print(json.dumps({"ms_per_segment": statistics.median(samples), "cpu_ms_per_segment": statistics.median(cpu_samples),
                      "samples": samples, "segments": nseg,
                      "threads": torch.get_num_threads(), "torch": torch.__version__,
                      "mode": "inference_mode" if a.inference_mode else "no_grad",
                      "losses": [x if math.isfinite(x) else None for x in losses],  # null: no next segment
                      "memory": mem.reshape(-1).tolist()}))


if __name__ == "__main__":
    main()
