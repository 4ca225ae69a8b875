"""Memformer's inference step in plain PyTorch eager, for `mnemoscope bench step --against-python`.

Written from docs/models.md#memformer alone (not from the C++ source), so it is both the
Python baseline of the step benchmark and a second implementation the C++ model is checked
against. It reads the weights and the resolved config from a safetensors file written by
`mnemoscope export-weights` (metadata "model"), steps through a document segment by segment
as the engine does (encoder with memory reading, writer, forgetting, and the decoder over the
next segment with its loss), and prints one JSON line: the median milliseconds per segment,
each segment's loss and the memory after the last step. Times: wall clock and this process's
CPU time (all threads), per segment, median over the passes after a warm-up pass.

    /usr/bin/python3 memformer_eager.py --weights W.safetensors --doc D --segments N --repeats R --threads T

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
    print("memformer_eager.py: PyTorch is not installed for this python3 (Debian: python3-torch)", file=sys.stderr)
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))
from mnemoscope.safetensors import load_safetensors  # noqa: E402

PAD, BOS = 256, 257


class Memformer:
    def __init__(self, weights, cfg):
        self.w = weights
        self.d = cfg["dim"]
        self.h = cfg["heads"]
        self.dh = self.d // self.h
        self.k = cfg["slots"]
        self.L = cfg["segment_len"]
        self.C = cfg.get("n_cls", 1)
        self.tau = cfg.get("temperature", 1.0)
        self.forgetting = cfg.get("forgetting", True)
        self.memory = cfg.get("memory", True)
        self.n_enc = cfg["layers"]
        self.n_dec = cfg["dec_layers"]
        self.scale = math.sqrt(self.d) if cfg.get("memory_scale", "unit") == "sqrt_dim" else 1.0
        if cfg.get("linear", "dense") != "dense":
            raise SystemExit("memformer_eager.py: only dense projections (\"linear\": \"dense\")")

    def ln(self, x, p):
        return F.layer_norm(x, (self.d,), self.w[p + ".weight"], self.w[p + ".bias"], 1e-5)

    def lin(self, x, p):
        return F.linear(x, self.w[p + ".weight"], self.w[p + ".bias"])

    def heads(self, x):  # [B, T, d] -> [B, H, T, dh]
        b, t, _ = x.shape
        return x.view(b, t, self.h, self.dh).transpose(1, 2)

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
    if cfg.get("model") != "memformer":
        raise SystemExit("memformer_eager.py: the weights are a '%s' model, not memformer" % cfg.get("model"))
    weights = {k: torch.from_numpy(v.copy()) for k, v in tf.items()}
    m = Memformer(weights, cfg)
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
