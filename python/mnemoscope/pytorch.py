"""PyTorch helpers: turn the tensors a model already has into canonical trace keys
(docs/formats.md "Traces", mnemoscope.keys), and collect them from a model's modules by name
with forward hooks. Needs torch (imported here only); the rest of the package needs numpy only.

    from mnemoscope.pytorch import HookCollector, rmt_traces
    with HookCollector(model, {"layers.0.attn": "rmt.attn.0", "layers.1.attn": "rmt.attn.1"}) as hooks:
        out = model(segment)                   # the hooks capture each layer's attention map
        traces = rmt_traces(hooks.take(), memory_size=m, ...)
"""

import difflib

import numpy as np
import torch

from .safetensors import RawTensor


def to_numpy(t):
    """A tensor as a numpy array (detached, on the CPU, contiguous). bfloat16 becomes float32
    (exact); other dtypes keep theirs."""
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    if t.dtype == torch.bfloat16:
        t = t.float()
    return t.contiguous().numpy()


def to_saveable(t):
    """What save_safetensors stores for a tensor: a numpy array, or a RawTensor for bfloat16
    (numpy has none), so a bf16 state_dict round-trips bit for bit."""
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        return RawTensor("BF16", tuple(t.shape), t.view(torch.int16).numpy().tobytes())
    return t.numpy()


def _f32(t):
    return to_numpy(t).astype(np.float32, copy=False)


def _batched(t, rank, name):
    """Adds a batch axis of 1 when `t` has rank - 1 dims."""
    if t.dim() == rank - 1:
        t = t.unsqueeze(0)
    if t.dim() != rank:
        raise ValueError("%s must have %d dims (batch first) or %d (one example), got shape %s"
                         % (name, rank, rank - 1, list(t.shape)))
    return t


# ------------------------------------------------------------------------------ RMT


def rmt_block_mass(attn, memory_size, token_valid=None):
    """Block masses of an RMT attention map attn [B, H, T, T], T = 2m + L in the order [read,
    tokens, write] (core/models/rmt.h): [B, H, 3] = reading (mean over valid token rows of the
    mass on read columns), writing (mean over write rows of the mass on valid token columns),
    rewriting (mean over write rows of the mass on read columns)."""
    a = attn.detach().float()
    b, _, t, t2 = a.shape
    m = memory_size
    l = t - 2 * m
    if t != t2 or m < 1 or l < 1:
        raise ValueError("an RMT attention map [B, H, T, T] of T = %d cannot hold 2 x %d memory tokens and a segment"
                         % (t, m))
    tv = token_valid.to(a.device).float() if token_valid is not None else torch.ones(b, l, device=a.device)
    tok_rows = a[:, :, m:m + l, :]
    write_rows = a[:, :, m + l:, :]
    w = tv.unsqueeze(1)  # [B, 1, L]
    reading = (tok_rows[..., :m].sum(-1) * w).sum(-1) / w.sum(-1).clamp_min(1.0)
    writing = (write_rows[..., m:m + l] * w.unsqueeze(2)).sum(-1).mean(-1)
    rewriting = write_rows[..., :m].sum(-1).mean(-1)
    return torch.stack([reading, writing, rewriting], -1)


def rmt_traces(attn_by_layer, memory_size, tokens=None, token_valid=None, memory_prev=None, memory=None,
               block_mass=True):
    """Canonical keys of an RMT-style model (Bulatov et al., Recurrent Memory Transformer) for
    one segment.

    attn_by_layer  {layer index or "rmt.attn.<l>": attention probabilities} of each layer,
                   [B, H, T, T] (or [H, T, T]) over the sequence [read memory (m) | segment
                   tokens (L) | write memory (m)], T = 2m + L. A model that puts its memory
                   tokens elsewhere must reorder rows and columns into this order first.
    memory_size    m, the number of memory tokens (read block = write block = m)
    tokens         [B, L] token ids of the segment -> input.tokens (optional)
    token_valid    [B, L] bool, False on padding (block masses skip those tokens)
    memory_prev    [B, m, d] read memory -> rmt.memory_prev; memory: [B, m, d] write outputs -> rmt.memory
    block_mass     also compute rmt.block_mass.<l> (the dashboard's reading/writing/rewriting curves)
    """
    out = {}
    for layer, a in sorted(attn_by_layer.items(), key=lambda kv: str(kv[0])):
        key = layer if isinstance(layer, str) and layer.startswith("rmt.attn.") else "rmt.attn.%d" % int(layer)
        a = _batched(a, 4, key)
        out[key] = _f32(a)
        if block_mass:
            out["rmt.block_mass." + key[len("rmt.attn."):]] = _f32(rmt_block_mass(a, memory_size, token_valid))
    if tokens is not None:
        out["input.tokens"] = to_numpy(_batched(tokens, 2, "tokens")).astype(np.int64)
    if memory_prev is not None:
        out["rmt.memory_prev"] = _f32(_batched(memory_prev, 3, "memory_prev"))
    if memory is not None:
        out["rmt.memory"] = _f32(_batched(memory, 3, "memory"))
    return out


# ------------------------------------------------------------------------------ Memformer


def slot_types(writer_attn, retain_min=0.9, overwrite_max=0.1):
    """Slot types from writer attention [B, H, k, 1+L+C] (core/trace/analysis.h): the self mass
    (column 0, mean over heads) >= retain_min -> 0 retain, <= overwrite_max -> 2 overwrite,
    else 1 mix. [B, k] int8."""
    m = writer_attn.detach().float()[..., 0].mean(1)
    out = torch.ones(m.shape, dtype=torch.int8)
    out[m >= retain_min] = 0
    out[(m <= overwrite_max) & (m < retain_min)] = 2
    return out


def memformer_traces(writer_attn, memory_prev=None, memory=None, v_bias=None, read_attn_by_layer=None, tokens=None,
                     retain_min=0.9, overwrite_max=0.1):
    """Canonical keys of a Memformer (Wu et al., Memformer) for one segment.

    writer_attn   [B, H, k, 1+L+C] memory-writer attention of each slot over [itself, the L
                  segment tokens, the C classification tokens] -> memformer.writer_attn and
                  memformer.slot_type (thresholds retain_min / overwrite_max)
    memory_prev / memory   [B, k, d] slots before / after the step
    v_bias        [k, d] the forgetting vectors -> memformer.forget_norm = ||v_bias_i||
    read_attn_by_layer     {layer: [B, H, L, k]} memory-reading cross-attention
    """
    w = _batched(writer_attn, 4, "writer_attn")
    out = {"memformer.writer_attn": _f32(w),
           "memformer.slot_type": to_numpy(slot_types(w, retain_min, overwrite_max))}
    if memory_prev is not None:
        out["memformer.memory_prev"] = _f32(_batched(memory_prev, 3, "memory_prev"))
    if memory is not None:
        out["memformer.memory"] = _f32(_batched(memory, 3, "memory"))
    if v_bias is not None:
        out["memformer.forget_norm"] = _f32(v_bias.detach().float().norm(dim=-1))
    for layer, a in (read_attn_by_layer or {}).items():
        out["memformer.read_attn.%d" % int(layer)] = _f32(_batched(a, 4, "read_attn"))
    if tokens is not None:
        out["input.tokens"] = to_numpy(_batched(tokens, 2, "tokens")).astype(np.int64)
    return out


# ------------------------------------------------------------------------------ MTN


def mtn_traces(importance, kept_index, candidate_source=None, kept_source=None, kept_importance=None, age=None,
               importance_prev=None):
    """Canonical keys of a Memory Transformer Network (keep the m most important of the memory
    and chunk candidates) for one segment.

    importance        [B, m+L] importance of each candidate (memory entries first, then the chunk)
    kept_index        [B, m] which candidate each kept entry is (-1 empty)
    candidate_source  [B, m+L] document token index of each candidate (-1 none)
    kept_source       [B, m] document token index of each kept entry; derived from
                      candidate_source and kept_index when not given
    kept_importance   [B, m]; derived from importance and kept_index when not given
    age               [B, m] chunks each kept entry survived
    """
    imp = _batched(importance, 2, "importance").detach()
    idx = _batched(kept_index, 2, "kept_index").detach().long()
    out = {"mtn.importance": _f32(imp), "mtn.kept_index": to_numpy(idx).astype(np.int64)}
    safe = idx.clamp_min(0)
    empty = idx < 0
    if kept_importance is None:
        kept_importance = torch.gather(imp.float(), 1, safe).masked_fill(empty, 0.0)
    out["mtn.kept_importance"] = _f32(_batched(kept_importance, 2, "kept_importance"))
    if candidate_source is not None:
        cs = _batched(candidate_source, 2, "candidate_source").detach().long()
        out["mtn.candidate_source"] = to_numpy(cs).astype(np.int64)
        if kept_source is None:
            kept_source = torch.gather(cs, 1, safe).masked_fill(empty, -1)
    if kept_source is not None:
        out["mtn.kept_source"] = to_numpy(_batched(kept_source, 2, "kept_source")).astype(np.int64)
    if age is not None:
        out["mtn.age"] = to_numpy(_batched(age, 2, "age")).astype(np.int64)
    if importance_prev is not None:
        out["mtn.importance_prev"] = _f32(_batched(importance_prev, 2, "importance_prev"))
    return out


# ------------------------------------------------------------------------------ hashed layers


def hash_traces(module_path, bucket, p=None, bits=None):
    """Canonical keys of a MemoryFormer hashed projection (Wang et al., MemoryFormer) for one
    segment: bucket [N, K] (the bucket of each of N lookups in each of K tables), p [N, K]
    (p(z_k) of each lookup), bits = tau (2^tau buckets per table) -> hash.<path>.bucket,
    .p and .counts [K, 2^tau] (lookups per bucket)."""
    b = bucket.detach().long()
    if b.dim() != 2:
        raise ValueError("bucket must be [N, K], got shape %s" % list(b.shape))
    if bits is None:
        raise ValueError("hash_traces: pass bits= (tau: each table has 2^tau buckets)")
    r = 1 << int(bits)
    if b.numel() and (int(b.min()) < 0 or int(b.max()) >= r):
        raise ValueError("bucket values %d..%d are outside 0..%d (2^%d buckets)" % (int(b.min()), int(b.max()), r - 1, bits))
    k = b.shape[1]
    flat = (b + torch.arange(k).unsqueeze(0) * r).reshape(-1)
    counts = torch.bincount(flat, minlength=k * r).view(k, r)
    out = {"hash.%s.bucket" % module_path: to_numpy(b).astype(np.int32),
           "hash.%s.counts" % module_path: to_numpy(counts).astype(np.int64)}
    if p is not None:
        out["hash.%s.p" % module_path] = _f32(p)
    return out


def input_traces(tokens, offsets=None, loss=None):
    """input.tokens [B, L] int64, input.offsets [B, L, 2] (byte range of each token, -1 on
    padding), lm.loss [B, L] per-token loss: value j of segment s is the loss of document token
    keys.predicted_token(kind, s, L, j) (the next segment's token j for Memformer, else the next
    token)."""
    out = {"input.tokens": to_numpy(_batched(tokens, 2, "tokens")).astype(np.int64)}
    if offsets is not None:
        out["input.offsets"] = to_numpy(_batched(offsets, 3, "offsets")).astype(np.int64)
    if loss is not None:
        out["lm.loss"] = _f32(_batched(loss, 2, "loss"))
    return out


# ------------------------------------------------------------------------------ hooks


def _default_extract(module, inputs, output):
    """What a hook captures when no extractor is given: nn.MultiheadAttention's attention
    weights (output[1]: call it with need_weights=True, average_attn_weights=False for per-head
    maps), else the output tensor, else the last tensor of an output tuple."""
    if isinstance(module, torch.nn.MultiheadAttention):
        if not isinstance(output, tuple) or output[1] is None:
            raise ValueError("nn.MultiheadAttention returned no attention weights; call it with need_weights=True "
                             "(and average_attn_weights=False for one map per head)")
        w = output[1]
        return w.unsqueeze(1) if w.dim() == 3 else w  # averaged over heads: one "head"
    if torch.is_tensor(output):
        return output
    if isinstance(output, (tuple, list)):
        tensors = [o for o in output if torch.is_tensor(o)]
        if tensors:
            return tensors[-1]
    raise ValueError("module %s returned %s; pass an extractor (module, inputs, output) -> tensor"
                     % (type(module).__name__, type(output).__name__))


class HookCollector:
    """Collects tensors from a model's modules by name with forward hooks.

    targets   {module name (as in model.named_modules()): key} or {name: (key, extractor)}; the
              extractor (module, inputs, output) -> tensor picks what to keep (default: see
              _default_extract). Keys are usually canonical trace keys ("rmt.attn.0").
    Each forward call of a hooked module stores a detached copy under its key (a module called
    twice in one segment keeps the last call, or all of them with concat=True, along dim 0).
    take() returns what was collected since the last take() and clears it; close() (or leaving
    the with-block) removes the hooks. Hooks only record while `enabled` is True.
    """

    def __init__(self, model, targets, concat=False):
        self.model = model
        self.concat = concat
        self.enabled = True
        self._store = {}
        self._handles = []
        modules = dict(model.named_modules())
        for name, spec in targets.items():
            key, extract = (spec, None) if isinstance(spec, str) else spec
            if name not in modules:
                close = difflib.get_close_matches(name, list(modules), n=5)
                raise KeyError("model has no module '%s'%s (names come from model.named_modules())"
                               % (name, "; did you mean " + ", ".join(close) + "?" if close else ""))
            self._handles.append(modules[name].register_forward_hook(self._hook(key, extract or _default_extract)))

    def _hook(self, key, extract):
        def hook(module, inputs, output):
            if not self.enabled:
                return
            with torch.no_grad():
                t = extract(module, inputs, output)
                if t is None:
                    return
                t = t.detach().to("cpu", copy=True)
            if self.concat and key in self._store:
                self._store[key] = torch.cat([self._store[key], t], 0)
            else:
                self._store[key] = t
        return hook

    def take(self):
        """{key: tensor} collected since the last take()."""
        out, self._store = self._store, {}
        return out

    def close(self):
        for h in self._handles:
            h.remove()
        self._handles = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
