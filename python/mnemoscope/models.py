"""Mnemoscope's model families as torch.nn.Modules, weight-compatible with the C++ models both
ways (docs/python.md "Models in PyTorch"; the computation is docs/models.md's, module by module
as core/models/*.cpp and core/nn/*.cpp build it, so parameter names are the C++ module paths).

    from mnemoscope.models import load_weights, save_weights, document_segments
    model = load_weights("assets/models/rmt-copy.safetensors")      # zoo model, checkpoint, export, session
    memory = model.initial_memory(1)
    for seg in document_segments(b"the quick brown fox", model.config.segment_len):
        out, memory, traces = model.step(seg, memory, trace=True)   # canonical trace keys
    save_weights(model, "mine.safetensors")                          # `mnemoscope step --checkpoint mine.safetensors`

Families: `memformer` (writer, forgetting, decoder), the decoder-only backbone (`rmt`,
`rmt-write-only`, `trxl`, `trxl-rmt`, `transformer`), each with dense projections or
MemoryFormer Memory Layers (`"linear": "hashed"`, HashedProjection: codes, gather, sum, written
in PyTorch ops with the C++ layer's one-sided gradient), and the Memory Transformer Network
family (`mtn`, `mtn-naive`, `no-memory`; in mnemoscope.models_mtn, built from here).

Needs torch (imported by this module only; `import mnemoscope` stays numpy-only).
"""

import json
import math
import os
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from . import _guard, config_schema
from .errors import MnemoscopeError
from .pytorch import rmt_block_mass, slot_types, to_saveable
from .safetensors import load_safetensors, save_safetensors
from .writer import validate_model_config

PAD, BOS = 256, 257
VOCAB = 262
LN_EPS = 1e-5
DECODER_KINDS = ("transformer", "trxl", "rmt", "rmt-write-only", "trxl-rmt")
MTN_KINDS = ("mtn", "mtn-naive", "no-memory")  # mnemoscope.models_mtn
FAMILIES = ("memformer",) + DECODER_KINDS + MTN_KINDS
CHECKPOINT_FORMAT = "mnemoscope-train-checkpoint"  # core/train/checkpoint.h
ZOO_FORMAT = "mnemoscope-zoo-model"
OPTIM_PREFIX = "optim."  # optimizer state in a training checkpoint (core/train/optim.h)


class WeightsError(MnemoscopeError, ValueError):
    """Weights that do not fit a model: another family or config (the differing fields named),
    or names that are not this model's (the unknown and missing ones listed)."""


# ------------------------------------------------------------------------------ config

# ModelConfig's fields and defaults (core/models/config.h), in its to_json order, from the C++
# field table's copy (config_schema.py).
DEFAULTS = config_schema.defaults("model")


def _same_value(x, y):
    """JSON values equal as the C++ config_differences compares them: numbers by value (16 and
    16.0 are one setting), true/false never equal to a number."""
    if isinstance(x, bool) or isinstance(y, bool):
        return isinstance(x, bool) and isinstance(y, bool) and x == y
    return x == y


class Config:
    """A model config (the `model` object of a session config), every field filled in with the C++
    defaults and checked as ModelConfig::from_json does. Fields read as attributes."""

    def __init__(self, fields=None, **kw):
        given = dict(fields or {}, **kw)
        try:
            validate_model_config(given)
        except ValueError as e:
            raise WeightsError(str(e)) from None
        self._f = dict(DEFAULTS, **given)

    def __getattr__(self, name):
        try:
            return self.__dict__["_f"][name]
        except KeyError:
            raise AttributeError(name) from None

    @property
    def ff_width(self):
        return self.ff if self.ff > 0 else 4 * self.dim

    def to_json(self):
        return dict(self._f)

    def dumps(self):
        """The JSON text the C++ side writes as a file's "model" metadata (nlohmann's dump: keys
        sorted, no spaces)."""
        return json.dumps(self._f, sort_keys=True, separators=(",", ":"))

    def replace(self, **kw):
        return Config(dict(self._f, **kw))

    def differences(self, other, prefix="model"):
        """'field: mine vs theirs' for every field that differs (numbers by value)."""
        a, b = self.to_json(), (other.to_json() if isinstance(other, Config) else dict(other))
        out = []
        for k in sorted(set(a) | set(b)):
            if k in a and k in b and _same_value(a[k], b[k]):
                continue
            out.append("%s.%s: %s vs %s" % (prefix, k, json.dumps(a[k]) if k in a else "absent",
                                            json.dumps(b[k]) if k in b else "absent"))
        return out

    def __eq__(self, other):
        return isinstance(other, Config) and not self.differences(other)

    def __repr__(self):
        return "Config(%s)" % self.dumps()

    @classmethod
    def from_json(cls, j):
        """From a model object, or a training config holding one under "model"."""
        if isinstance(j, dict) and isinstance(j.get("model"), dict):
            j = j["model"]
        return cls(j)

    @classmethod
    def from_file(cls, path):
        """A config file: the model object itself or {"model": {...}} (a session config)."""
        try:
            fd = _guard.open_regular(path)  # a FIFO would block a plain open
        except _guard.NotRegularFile as e:
            raise WeightsError("config file '%s' %s; pass a config file" % (path, e.why)) from None
        with os.fdopen(fd, "rb") as f:
            try:
                j = _guard.loads(f.read().decode("utf-8"))
            except ValueError as e:
                raise WeightsError("config file '%s' is not valid JSON (%s)" % (path, e)) from None
        try:
            return cls.from_json(j)
        except WeightsError as e:
            raise WeightsError("config file '%s': %s" % (path, e)) from None

    @classmethod
    def from_weights(cls, path):
        """The model config stored in a weights file's metadata (any kind load_weights reads)."""
        return read_weights_file(path).config


# ------------------------------------------------------------------------------ building blocks


def layer_norm(d):
    return nn.LayerNorm(d, eps=LN_EPS)


class DenseProjection(nn.Module):
    """y = x W^T + b; weight [out, in], bias [out], both U(-1/sqrt(in), 1/sqrt(in))."""

    def __init__(self, d_in, d_out):
        super().__init__()
        bound = 1.0 / math.sqrt(d_in)
        self.weight = nn.Parameter(torch.empty(d_out, d_in).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(d_out).uniform_(-bound, bound))

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)


class HashedProjection(nn.Module):
    """MemoryFormer's Memory Layer (docs/models.md#memoryformer, Eq. 13-14) in PyTorch ops.
    tables [K, 2^tau, d_out], K = d_in / tau, U(-1/sqrt(K), 1/sqrt(K)); no bias. Chunk k of
    a row is z_k = x[k tau .. k tau + tau - 1]; its code h(z_k) = sum_i [z_ki >= 0] 2^i picks a
    row of table k, weighted by p(z_k) = prod_i sigmoid(2 |z_ki| / t); y = sum_k p_k T_k[h_k]
    (one embedding bag). Autograd gives Eq. 14: the looked-up rows get p dy, the input
    (dy . T_k[h]) dp/dz with the one-sided sign(0) = +1 of the C++ layer."""

    def __init__(self, d_in, d_out, bits, temperature):
        super().__init__()
        if d_in % bits:
            raise WeightsError("config field 'hash_bits' = %d does not divide the input width %d" % (bits, d_in))
        self.d_in, self.d_out, self.bits, self.temperature = d_in, d_out, bits, float(temperature)
        self.n_tables = d_in // bits
        bound = 1.0 / math.sqrt(self.n_tables)
        self.tables = nn.Parameter(torch.empty(self.n_tables, 1 << bits, d_out).uniform_(-bound, bound))
        self.trace_path = None  # set by the model: its module path, for the hash.<path>.* keys
        self.tracer = None      # a dict while a traced step runs

    def codes(self, x2d):
        """bucket [N, K] int64 and p [N, K] (with gradient) of the rows of x2d [N, d_in]."""
        z = x2d.view(x2d.shape[0], self.n_tables, self.bits)
        nonneg = z >= 0
        weights = torch.pow(2, torch.arange(self.bits, device=x2d.device))
        bucket = (nonneg.long() * weights).sum(-1)
        sign = torch.where(nonneg, 1.0, -1.0).to(z.dtype)  # |z| = sign z with d|z|/dz = sign (+1 at 0)
        p = torch.sigmoid((2.0 / self.temperature) * (z * sign)).prod(-1)
        return bucket, p

    def forward(self, x):
        lead = x.shape[:-1]
        x2d = x.reshape(-1, self.d_in)
        bucket, p = self.codes(x2d)
        # y = sum_k p_k T_k[h_k] as one embedding bag over the K tables laid end to end: a gather
        # and a weighted sum in one op, whose backward adds p dy into the looked-up rows only.
        # (The C++ kernels sum k = 0..K-1 in order; this sums in the bag's order: the same
        # values up to float rounding.)
        flat = bucket + torch.arange(self.n_tables, device=x.device) * (1 << self.bits)
        y = F.embedding_bag(flat, self.tables.reshape(-1, self.d_out), mode="sum", per_sample_weights=p)
        if self.tracer is not None:
            self._trace(bucket, p)
        return y.view(*lead, self.d_out)

    def _trace(self, bucket, p):
        base = "hash.%s." % self.trace_path
        b32 = bucket.detach().to(torch.int32).cpu()
        p32 = p.detach().float().cpu()
        counts = torch.zeros(self.n_tables, 1 << self.bits, dtype=torch.int64)
        counts.scatter_add_(1, bucket.detach().t().cpu(), torch.ones(self.n_tables, b32.shape[0], dtype=torch.int64))
        t = self.tracer
        t[base + "bucket"] = torch.cat([t[base + "bucket"], b32]) if base + "bucket" in t else b32
        t[base + "p"] = torch.cat([t[base + "p"], p32]) if base + "p" in t else p32
        t[base + "counts"] = t[base + "counts"] + counts if base + "counts" in t else counts


def projection(d_in, d_out, cfg):
    if cfg.linear == "hashed":
        return HashedProjection(d_in, d_out, cfg.hash_bits, cfg.hash_temperature)
    return DenseProjection(d_in, d_out)


class MemoryBlock(nn.Module):
    """The FFN with "linear": "hashed": Memory Layer (d -> (tau+2)K) -> mid_norm -> Memory Layer
    ((tau+2)K -> d, tau+2 bits); the block's input norm is the layer's ln_ffn."""

    def __init__(self, d, bits, temperature):
        super().__init__()
        if bits + 2 > 16:
            raise WeightsError("config field 'hash_bits' = %d is too large for the Memory Block; use hash_bits <= 14"
                               % bits)
        hidden = (bits + 2) * (d // bits)
        self.fc1 = HashedProjection(d, hidden, bits, temperature)
        self.mid_norm = layer_norm(hidden)
        self.fc2 = HashedProjection(hidden, d, bits + 2, temperature)

    def forward(self, x):
        return self.fc2(self.mid_norm(self.fc1(x)))


class FeedForward(nn.Module):
    """fc2(GELU(fc1(x))) (exact GELU), or a MemoryBlock when hashed."""

    def __init__(self, d, cfg):
        super().__init__()
        if cfg.linear == "hashed":
            self.block = MemoryBlock(d, cfg.hash_bits, cfg.hash_temperature)
        else:
            self.fc1 = projection(d, cfg.ff_width, cfg)
            self.fc2 = projection(cfg.ff_width, d, cfg)

    def forward(self, x):
        if hasattr(self, "block"):
            return self.block(x)
        return self.fc2(F.gelu(self.fc1(x)))


def split_heads(x, heads):  # [B, T, d] -> [B, H, T, dh]
    b, t, d = x.shape
    return x.view(b, t, heads, d // heads).transpose(1, 2)


def merge_heads(x):  # [B, H, T, dh] -> [B, T, d]
    b, h, t, dh = x.shape
    return x.transpose(1, 2).contiguous().view(b, t, h * dh)


def attention_core(q, k, v, mask):
    """softmax(q k^T / sqrt(dh) + mask) v, and the weights (the C++ explicit path)."""
    logits = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    if mask is not None:
        logits = logits + mask
    probs = torch.softmax(logits, -1)
    return torch.matmul(probs, v), probs


class MultiHeadAttention(nn.Module):
    def __init__(self, d, heads, cfg):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.o = (projection(d, d, cfg) for _ in range(4))

    def forward(self, query, kv, mask=None):
        out, w = attention_core(split_heads(self.q(query), self.heads), split_heads(self.k(kv), self.heads),
                                split_heads(self.v(kv), self.heads), mask)
        return self.o(merge_heads(out)), w


def key_padding_mask(valid, dtype=torch.float32):  # [B, T] bool -> additive [B, 1, 1, T]
    m = torch.zeros(valid.shape, dtype=dtype, device=valid.device).masked_fill(~valid, float("-inf"))
    return m[:, None, None, :]


def causal_mask(t, device=None):
    return torch.full((t, t), float("-inf"), device=device).triu(1)


# ------------------------------------------------------------------------------ segments and outputs


@dataclass
class Segment:
    """One step's input (core/models/model.h SegmentInput): tokens / valid [B, L], optional
    offsets [B, L, 2], next_tokens / next_valid (Memformer's decoder targets), targets /
    target_valid (the decoder-only models' next-token targets)."""
    tokens: torch.Tensor
    valid: torch.Tensor = None
    offsets: torch.Tensor = None
    targets: torch.Tensor = None
    target_valid: torch.Tensor = None
    next_tokens: torch.Tensor = None
    next_valid: torch.Tensor = None

    def __post_init__(self):
        if self.valid is None:
            self.valid = torch.ones(self.tokens.shape, dtype=torch.bool, device=self.tokens.device)

    def to(self, device):
        return Segment(**{k: (v.to(device) if isinstance(v, torch.Tensor) else v) for k, v in vars(self).items()})


def document_segments(document, segment_len):
    """A document (bytes, str as UTF-8, or byte values) cut into Segments as the C++ engine
    feeds `mnemoscope step` (core/engine/engine.cpp input_for): segments of segment_len tokens,
    the last padded with <pad> (valid false, offsets -1); targets = the next token, the last
    position predicting the next segment's first; next_tokens = the next segment."""
    if isinstance(document, str):
        document = document.encode("utf-8")
    ids = torch.tensor(list(bytes(document)), dtype=torch.int64)
    n = max(1, (ids.numel() + segment_len - 1) // segment_len)
    raw = []
    for i in range(n):
        s = ids[i * segment_len:(i + 1) * segment_len]
        tokens = torch.full((1, segment_len), PAD, dtype=torch.int64)
        tokens[0, :s.numel()] = s
        valid = torch.zeros(1, segment_len, dtype=torch.bool)
        valid[0, :s.numel()] = True
        offsets = torch.full((1, segment_len, 2), -1, dtype=torch.int64)
        first = torch.arange(i * segment_len, i * segment_len + s.numel())
        offsets[0, :s.numel(), 0] = first
        offsets[0, :s.numel(), 1] = first + 1
        raw.append((tokens, valid, offsets))
    out = []
    for i, (tokens, valid, offsets) in enumerate(raw):
        targets, tvalid = tokens.roll(-1, 1), valid.roll(-1, 1)
        tvalid[:, -1] = False
        nt = nv = None
        if i + 1 < n:
            nt, nv = raw[i + 1][0], raw[i + 1][1]
            targets[:, -1] = nt[:, 0]
            tvalid[:, -1] = valid[:, -1] & nv[:, 0]
        out.append(Segment(tokens, valid, offsets, targets, tvalid, nt, nv))
    return out


def window_segments(windows, segment_len):
    """Training windows of text cut into Segments for either family: `windows` [B, S*L + 1] byte
    values (int tensor or array; the extra byte is the last position's target). Segment i holds
    tokens [i*L, (i+1)*L); targets = the next byte (all valid); next_tokens = segment i+1 (none
    for the last, which Memformer therefore does not score). The batched form of
    document_segments, without padding."""
    w = torch.as_tensor(np.asarray(windows) if not isinstance(windows, torch.Tensor) else windows).long()
    if w.dim() != 2 or w.shape[1] < segment_len + 1 or (w.shape[1] - 1) % segment_len:
        raise ValueError("windows must be [B, S*%d + 1] (S >= 1), got %s" % (segment_len, list(w.shape)))
    n = (w.shape[1] - 1) // segment_len
    out = []
    for i in range(n):
        tokens = w[:, i * segment_len:(i + 1) * segment_len]
        targets = w[:, i * segment_len + 1:(i + 1) * segment_len + 1]
        nt = w[:, (i + 1) * segment_len:(i + 2) * segment_len] if i + 1 < n else None
        out.append(Segment(tokens, None, None, targets, torch.ones_like(targets, dtype=torch.bool), nt,
                           None if nt is None else torch.ones_like(nt, dtype=torch.bool)))
    return out


@dataclass
class StepOutput:
    """logits [B, L', V]; token_loss [B, L'] (0 where not scored); loss_sum, loss_count and
    loss = loss_sum / max(loss_count, 1) (0-dim tensors); all None without targets."""
    logits: torch.Tensor = None
    token_loss: torch.Tensor = None
    loss: torch.Tensor = None
    loss_sum: torch.Tensor = None
    loss_count: torch.Tensor = None


@dataclass
class Rollout:
    """forward() over segments: loss = sum_t loss_sum_t / max(sum_t loss_count_t, 1) (the
    training objective of core/train/rollout.h), per-segment outputs, the final memory."""
    loss: torch.Tensor
    loss_sum: torch.Tensor
    loss_count: torch.Tensor
    outputs: list = field(default_factory=list)
    memory: dict = None
    traces: list = None


def masked_token_loss(logits, targets, mask, clamp):
    """Cross-entropy per token times the mask, and the sums (docs/models.md "Losses")."""
    t = targets.clamp(0, logits.shape[-1] - 1) if clamp else targets
    flat = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), t.reshape(-1), reduction="none")
    maskf = mask.to(flat.dtype)
    token_loss = flat.view(targets.shape) * maskf.view(targets.shape)
    loss_sum, loss_count = token_loss.sum(), maskf.sum()
    return StepOutput(logits, token_loss, loss_sum / loss_count.clamp_min(1.0), loss_sum, loss_count)


class MemoryModel(nn.Module):
    """What every family shares: the config, step() and forward() over a rollout."""

    family = None

    def __init__(self, config):
        super().__init__()
        self.config = config if isinstance(config, Config) else Config.from_json(config)

    def _attach_hash_tracing(self, traces):
        for name, mod in self.named_modules():
            if isinstance(mod, HashedProjection):
                mod.trace_path, mod.tracer = name, traces

    def step(self, segment, memory=None, trace=False, ablate=None, ablate_mode="reset"):
        """One segment: (StepOutput, next memory (dict of tensors), traces). With trace=True,
        traces is {canonical key: detached CPU tensor} as `mnemoscope step` writes them;
        otherwise {}. memory None = initial_memory(B). ablate: memory entries to remove from
        `memory` before the step (an entry index, a list of them or "all"; see
        memory_entries), each set to the initial memory's (ablate_mode "reset") or zeroed
        ("zero") — the slot ablation of `mnemoscope eval --doc --by-slot`."""
        if not isinstance(segment, Segment):
            segment = Segment(**segment) if isinstance(segment, dict) else Segment(segment)
        if memory is None:
            memory = self.initial_memory(segment.tokens.shape[0])
        if ablate is not None:
            memory = self.ablate_memory(memory, ablate, ablate_mode, segment.tokens.shape[1])
        traces = {} if trace else None
        if trace and self.config.linear == "hashed":
            self._attach_hash_tracing(traces)
        try:
            out, mem = self._step(segment, memory, traces)
        finally:
            if trace and self.config.linear == "hashed":
                self._attach_hash_tracing(None)
        if trace:
            traces["input.tokens"] = segment.tokens
            if segment.offsets is not None:
                traces["input.offsets"] = segment.offsets
            if out.token_loss is not None:
                traces["lm.loss"] = out.token_loss
            traces = {k: v.detach().cpu().contiguous() for k, v in traces.items()}
        return out, mem, traces or {}

    def zero_memory(self, memory):
        """The memory with every tensor zeroed (`mnemoscope eval --zero-memory`'s ablation: a
        Transformer-XL cache zeroed is also marked empty)."""
        return {k: torch.zeros_like(v) for k, v in memory.items()}

    # ------------------------------------------------------------------ memory entries

    def memory_entries(self, segment_len):
        """The entries of this model's memory for segments of segment_len tokens
        (docs/models.md#memory-entries), in the order `eval --doc --by-slot` numbers them: a
        list of (label, [(state key, begin, end), ...]), each part the positions [begin, end)
        along dim 1 of that tensor. Memformer: its slots; RMT: its memory tokens (write-only
        RMT: with their write-cache rows); Transformer-XL: blocks of segment_len cache positions
        counted back from the newest (the oldest may be shorter); Transformer-XL + RMT: the
        memory tokens, then the cache blocks; MTN: its kept entries; mtn-naive: its learned
        vectors; a model without memory: none."""
        kind, init = self.config.model, self.initial_memory(1)
        if not init:
            return []
        if kind == "memformer":
            return [("slot %d" % j, [("slots", j, j + 1)]) for j in range(init["slots"].shape[1])]
        if kind in ("mtn", "mtn-naive"):
            keys = ["embeddings", "importance", "source", "age"] if kind == "mtn" else ["embeddings"]
            name = "kept entry" if kind == "mtn" else "learned vector"
            return [("%s %d" % (name, j), [(k, j, j + 1) for k in keys]) for j in range(init["embeddings"].shape[1])]
        out = []
        if "memory" in init:
            keys = ["memory"]
            if kind == "rmt-write-only":
                keys += ["write_cache.%d" % n for n in range(self.config.layers)] + ["write_cache_valid"]
            out += [("memory token %d" % j, [(k, j, j + 1) for k in keys]) for j in range(init["memory"].shape[1])]
        if "cache_valid" in init:
            c = init["cache_valid"].shape[1]
            keys = ["cache.%d" % n for n in range(self.config.layers)] + ["cache_valid"]
            blocks = []
            end = c
            while end > 0:
                begin = max(0, end - segment_len)
                blocks.append((begin, end))
                end = begin
            for g, (b, e) in enumerate(reversed(blocks)):
                out.append(("cache block %d (positions %d..%d)" % (g, b, e - 1), [(k, b, e) for k in keys]))
        return out

    def ablate_memory(self, memory, which, mode="reset", segment_len=None):
        """`memory` with the entries `which` (an index, a list or "all") removed: their
        positions set to the initial memory's (mode "reset") or zeroed (mode "zero": integer
        tensors take the initial memory's). With every entry removed, the tensors of no entry
        (MTN's tokens_read) are removed too, so that ablate_memory(m, "all") is the initial
        memory (reset) or zero_memory(m) (zero)."""
        if mode not in ("reset", "zero"):
            raise ValueError("ablate mode must be 'reset' or 'zero', got %r" % (mode,))
        entries = self.memory_entries(segment_len or self.config.segment_len)
        if isinstance(which, str):
            if which != "all":
                raise ValueError("ablate must be an entry index, a list of them or 'all', got %r" % (which,))
            which = list(range(len(entries)))
        elif isinstance(which, int):
            which = [which]
        which = sorted(set(int(e) for e in which))
        for e in which:
            if not 0 <= e < len(entries):
                raise ValueError("memory entry %d is out of range 0..%d" % (e, len(entries) - 1))
        b = next(iter(memory.values())).shape[0]
        init = self.initial_memory(b)
        out = {k: v.clone() for k, v in memory.items()}
        for e in which:
            for key, lo, hi in entries[e][1]:
                t = out[key]
                t[:, lo:hi] = 0 if (mode == "zero" and t.is_floating_point()) else init[key][:, lo:hi]
        if entries and len(which) == len(entries):
            owned = {key for _, parts in entries for key, _, _ in parts}
            for key in set(out) - owned:
                out[key] = torch.zeros_like(out[key]) if (mode == "zero" and out[key].is_floating_point()) \
                    else init[key].clone()
        return out

    def entry_effects(self, segments, mode="reset"):
        """Slot ablation over a document's segments (document_segments): per segment, the bits
        each memory entry saved on the tokens the step predicts — sum over them of (loss with
        the entry removed from the carried memory - loss with it) / ln 2 — and the same with
        every entry removed. Segment 0 starts from the initial memory: nothing is removed
        there (zeros). Returns {"labels": [...], "segments": [{"bits_saved": [E],
        "all_bits_saved": x}, ...]}; what `mnemoscope eval --doc --by-slot --json` prints."""
        seg_len = segments[0].tokens.shape[1]
        labels = [lab for lab, _ in self.memory_entries(seg_len)]
        out, memory = [], None
        ln2 = math.log(2)
        with torch.no_grad():
            for i, seg in enumerate(segments):
                base, nxt, _ = self.step(seg, memory)
                row = {"bits_saved": [0.0] * len(labels), "all_bits_saved": 0.0}
                if i > 0 and base.token_loss is not None:
                    def saved(which):
                        o, _, _ = self.step(seg, memory, ablate=which, ablate_mode=mode)
                        return float((o.token_loss.double() - base.token_loss.double()).sum()) / ln2
                    row = {"bits_saved": [saved(e) for e in range(len(labels))], "all_bits_saved": saved("all")}
                out.append(row)
                memory = nxt
        return {"labels": labels, "segments": out}

    def memory_after(self, segments, s):
        """The memory after segment s of `segments`, carried from the start (what `mnemoscope
        eval --patch-from A:s` carries into another document)."""
        if not 0 <= s < len(segments):
            raise ValueError("segment %d is out of range 0..%d" % (s, len(segments) - 1))
        memory = None
        with torch.no_grad():
            for seg in segments[:s + 1]:
                _, memory, _ = self.step(seg, memory)
        return memory

    def forward(self, segments, memory=None, trace=False, between="carry", patch=None):
        """A rollout over `segments` with autograd through the memory (full BPTT): Rollout with
        the objective sum loss_sum / max(sum loss_count, 1). between: what each segment after
        the first starts from: "carry" (the previous segment's memory), "reset" (the initial
        memory) or "zero" (the memory zeroed, the ablation of `eval --zero-memory`). patch:
        (memory, t): segment t starts from that memory (another document's, memory_after)
        instead of its own — `mnemoscope eval --patch-from A:s --at t`."""
        if between not in ("carry", "reset", "zero"):
            raise ValueError("between must be 'carry', 'reset' or 'zero', got %r" % (between,))
        if patch is not None and not 0 <= patch[1] < len(segments):
            raise ValueError("patch segment %d is out of range 0..%d" % (patch[1], len(segments) - 1))
        outputs, all_traces = [], []
        loss_sum = loss_count = None
        for i, seg in enumerate(segments):
            if i > 0 and between != "carry":
                b = (seg.tokens if isinstance(seg, Segment) else seg["tokens"]).shape[0]
                memory = self.initial_memory(b) if between == "reset" else self.zero_memory(memory)
            if patch is not None and i == patch[1]:
                memory = patch[0]
            out, memory, tr = self.step(seg, memory, trace)
            outputs.append(out)
            all_traces.append(tr)
            if out.loss_sum is not None:
                loss_sum = out.loss_sum if loss_sum is None else loss_sum + out.loss_sum
                loss_count = out.loss_count if loss_count is None else loss_count + out.loss_count
        if loss_sum is None:
            p = next(self.parameters())
            loss_sum = loss_count = torch.zeros((), dtype=p.dtype, device=p.device)
        return Rollout(loss_sum / loss_count.clamp_min(1.0), loss_sum, loss_count, outputs, memory,
                       all_traces if trace else None)


# ------------------------------------------------------------------------------ Memformer


class MemformerEncoderLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d, h = cfg.dim, cfg.heads
        self.ln_self = layer_norm(d)
        if cfg.memory:
            self.ln_read = layer_norm(d)
        self.ln_ffn = layer_norm(d)
        self.self_attn = MultiHeadAttention(d, h, cfg)
        if cfg.memory:
            self.mem_read = MultiHeadAttention(d, h, cfg)
        self.ffn = FeedForward(d, cfg)
        if cfg.memory and cfg.memory_gate:
            # The read enters through tanh(read_gate), a learnt scalar that starts at 0.
            self.read_gate = nn.Parameter(torch.zeros(1))

    def forward(self, x, mask, memory):
        h = self.ln_self(x)
        y = x + self.self_attn(h, h, mask)[0]
        w = None
        if hasattr(self, "mem_read"):
            r, w = self.mem_read(self.ln_read(y), memory)
            y = y + (torch.tanh(self.read_gate) * r if hasattr(self, "read_gate") else r)
        return y + self.ffn(self.ln_ffn(y)), w


class MemformerDecoderLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d, h = cfg.dim, cfg.heads
        self.ln_self, self.ln_cross, self.ln_ffn = layer_norm(d), layer_norm(d), layer_norm(d)
        self.self_attn = MultiHeadAttention(d, h, cfg)
        self.cross_attn = MultiHeadAttention(d, h, cfg)
        self.ffn = FeedForward(d, cfg)

    def forward(self, y, causal, enc, enc_mask):
        """Returns the output and the cross-attention [B, H, L, T] over enc."""
        h = self.ln_self(y)
        z = y + self.self_attn(h, h, causal)[0]
        c, w = self.cross_attn(self.ln_cross(z), enc, enc_mask)
        z = z + c
        return z + self.ffn(self.ln_ffn(z)), w


class MemoryWriter(nn.Module):
    """Slot attention over [the slot itself | encoder states], per head, no output projection."""

    def __init__(self, cfg):
        super().__init__()
        d = cfg.dim
        self.heads, self.temperature = cfg.heads, cfg.temperature
        self.q, self.k, self.v = projection(d, d, cfg), projection(d, d, cfg), projection(d, d, cfg)

    def forward(self, memory, x, x_valid):
        b, k, d = memory.shape
        qm, km = split_heads(self.q(memory), self.heads), split_heads(self.k(memory), self.heads)
        kx, vx = split_heads(self.k(x), self.heads), split_heads(self.v(x), self.heads)
        scale = 1.0 / math.sqrt(d // self.heads)
        self_logit = (qm * km).sum(-1, keepdim=True) * scale
        tok_logit = torch.matmul(qm, kx.transpose(-2, -1)) * scale + key_padding_mask(x_valid)
        a = torch.softmax(torch.cat([self_logit, tok_logit], -1) / self.temperature, -1)
        out = a[..., :1] * split_heads(memory, self.heads) + torch.matmul(a[..., 1:], vx)
        return merge_heads(out), a


class Memformer(MemoryModel):
    """Memformer (docs/models.md#memformer): encoder with memory reading, slot-attention writer,
    forgetting (biased memory normalisation), decoder over the next segment. Memory {"slots"}."""

    family = "memformer"

    def __init__(self, config):
        super().__init__(config)
        cfg = self.config
        d, L, C = cfg.dim, cfg.segment_len, cfg.n_cls
        # Created in the C++ constructor's order (so a seeded build draws in the same order).
        self.tok_emb = nn.Embedding(VOCAB, d)
        self.enc_pos = nn.Embedding(L + C, d)
        self.dec_pos = nn.Embedding(L, d)
        with torch.no_grad():
            for e in (self.tok_emb, self.enc_pos, self.dec_pos):
                e.weight.normal_(0.0, 0.02)
        self.cls = nn.Parameter(torch.randn(C, d) * 0.02)
        self.v_bias = nn.Parameter(torch.randn(cfg.slots, d) / math.sqrt(d))
        self.encoder = nn.ModuleList(MemformerEncoderLayer(cfg) for _ in range(cfg.layers))
        self.decoder = nn.ModuleList(MemformerDecoderLayer(cfg) for _ in range(cfg.dec_layers))
        self.enc_norm, self.dec_norm = layer_norm(d), layer_norm(d)
        if cfg.memory:
            self.writer = MemoryWriter(cfg)
        self.head = nn.Linear(d, VOCAB)

    def initial_memory(self, batch=1):
        m0 = F.normalize(self.v_bias, dim=-1)
        return {"slots": m0.unsqueeze(0).expand(batch, -1, -1).contiguous()}

    def _step(self, seg, memory, tr):
        cfg = self.config
        slots = memory["slots"]
        b, l = seg.tokens.shape
        if l > cfg.segment_len:
            raise ValueError("segment of %d tokens is longer than the model's segment_len %d" % (l, cfg.segment_len))
        if tuple(slots.shape[1:]) != (cfg.slots, cfg.dim):
            raise ValueError("memory slots must be [B, %d, %d], got %s" % (cfg.slots, cfg.dim, list(slots.shape)))
        seen = slots * math.sqrt(cfg.dim) if cfg.memory_scale == "sqrt_dim" else slots
        # Encoder: tokens, then the cls tokens, at positions 0..l+C-1.
        x = self.tok_emb(seg.tokens)
        if cfg.n_cls > 0:
            x = torch.cat([x, self.cls.unsqueeze(0).expand(b, -1, -1)], 1)
        x = x + self.enc_pos.weight[:l + cfg.n_cls].unsqueeze(0)
        enc_valid = torch.cat([seg.valid, torch.ones(b, cfg.n_cls, dtype=torch.bool, device=seg.valid.device)], 1)
        mask = key_padding_mask(enc_valid)
        last_read = None  # the last encoder layer's memory read of every row, cls included
        for n, layer in enumerate(self.encoder):
            x, w = layer(x, mask, seen)
            if tr is not None and w is not None:
                tr["memformer.read_attn.%d" % n] = w[:, :, :l]
                last_read = w
        enc = self.enc_norm(x)
        if cfg.memory:
            m_prime, attn = self.writer(seen, enc, enc_valid)
            m = m_prime + self.v_bias.unsqueeze(0) if cfg.forgetting else m_prime
            new_slots = F.normalize(m, dim=-1)
        else:
            new_slots, attn = slots, None
        out = StepOutput()
        if seg.next_tokens is not None:
            nl = seg.next_tokens.shape[1]
            if nl > cfg.segment_len:
                raise ValueError("target segment longer than segment_len")
            bos = torch.full((b, 1), BOS, dtype=torch.int64, device=seg.tokens.device)
            y = self.tok_emb(torch.cat([bos, seg.next_tokens[:, :nl - 1]], 1)) + self.dec_pos.weight[:nl].unsqueeze(0)
            causal, enc_mask = causal_mask(nl, y.device), key_padding_mask(enc_valid)
            for n, layer in enumerate(self.decoder):
                y, w = layer(y, causal, enc, enc_mask)
                if tr is not None:
                    tr["memformer.cross_attn.%d" % n] = w
                    # What each predicted token drew on the slots: the mean over heads of the
                    # last decoder layer's cross-attention times that of the encoder's last read.
                    if last_read is not None and n == len(self.decoder) - 1:
                        tr["memformer.decoder_read"] = torch.bmm(w.mean(1), last_read.mean(1))
            out = masked_token_loss(self.head(self.dec_norm(y)), seg.next_tokens, seg.next_valid, clamp=False)
        if tr is not None:
            tr["memformer.memory_prev"] = slots
            tr["memformer.enc"] = enc
            if attn is not None:
                tr["memformer.writer_attn"] = attn
                tr["memformer.slot_type"] = slot_types(attn)
            tr["memformer.memory"] = new_slots
            tr["memformer.forget_norm"] = self.v_bias.norm(2, -1)
            if self.config.memory and self.config.memory_gate:
                tr["memformer.read_gate"] = torch.tanh(torch.cat([layer.read_gate for layer in self.encoder]))
        return out, {"slots": new_slots}


# ------------------------------------------------------------------------------ the decoder-only backbone


def sinusoid_table(rows, cols, dim, device=None):
    """The sinusoids of the distances cols-1 .. -(rows-1) (core/models/transformer_xl.cpp):
    [rows + cols - 1, dim], [sin(d w_0..), cos(d w_0..)], w_k = 10000^(-2k/dim)."""
    dist = torch.arange(cols - 1, -rows, -1, dtype=torch.int64, device=device).to(torch.float32)
    inv_freq = torch.pow(10000.0, -torch.arange(0, dim, 2, dtype=torch.float32, device=device) / float(dim))
    ang = dist.unsqueeze(1) * inv_freq.unsqueeze(0)
    return torch.cat([torch.sin(ang), torch.cos(ang)], 1)


class RelMultiHeadAttention(nn.Module):
    """Transformer-XL relative attention: [(q+u).k + (q+v).W_r R_(i-j)] / sqrt(dh) + mask."""

    def __init__(self, d, heads, cfg):
        super().__init__()
        self.heads, self.dh = heads, d // heads
        self.q, self.k, self.v, self.o, self.r = (projection(d, d, cfg) for _ in range(5))
        self.u_bias = nn.Parameter(torch.zeros(heads, self.dh))
        self.v_bias = nn.Parameter(torch.zeros(heads, self.dh))

    def forward(self, query, kv, table, mask):
        b, tq, _ = query.shape
        tk = kv.shape[1]
        qh, kh, vh = (split_heads(p(x), self.heads) for p, x in ((self.q, query), (self.k, kv), (self.v, kv)))
        nr = table.shape[0]
        rh = self.r(table).view(nr, self.heads, self.dh).permute(1, 2, 0)  # [H, dh, R]
        full = torch.matmul(qh + self.v_bias.unsqueeze(1), rh).contiguous()  # [B, H, Tq, R]
        plane = tq * nr
        # Query i reads table rows tq-1-i .. (row n = distance tk-1-n): element (tq-1) + i(R-1) + j.
        bd = full.as_strided((b, self.heads, tq, tk), (self.heads * plane, plane, nr - 1, 1),
                             full.storage_offset() + tq - 1)
        out, w = attention_core(qh + self.u_bias.unsqueeze(1), kh, vh, bd / math.sqrt(self.dh) + mask)
        return self.o(merge_heads(out)), w


class DecoderLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d = cfg.dim
        self.ln_attn, self.ln_ffn = layer_norm(d), layer_norm(d)
        self.attn = RelMultiHeadAttention(d, cfg.heads, cfg)
        self.ffn = FeedForward(d, cfg)

    def forward(self, x, prefix, table, mask):
        h = self.ln_attn(x)
        kv = torch.cat([self.ln_attn(prefix), h], 1) if prefix is not None else h
        a, w = self.attn(h, kv, table, mask)
        y = x + a
        return y + self.ffn(self.ln_ffn(y)), w


def decoder_mask(prefix, read, tokens, write, prefix_valid, token_valid):
    """The additive mask [B, 1, T, P + T] of core/models/rmt.cpp (rows [read | tokens | write],
    keys [prefix | rows])."""
    p, r, l, t = prefix, read, tokens, read + tokens + write
    dev = token_valid.device
    allow = torch.zeros(t, p + t, dtype=torch.bool, device=dev)
    if p > 0:
        allow[r:, :p] = True                       # tokens, write -> prefix
    if r > 0:
        allow[:, p:p + r] = True                   # everyone -> read
    allow[r:r + l, p + r:p + r + l] = torch.ones(l, l, dtype=torch.bool, device=dev).tril()
    if write > 0:
        allow[r + l:, p + r:] = True               # write -> tokens and write
    self_key = torch.eye(t, p + t, dtype=torch.bool, device=dev).roll(p, 1)
    b = token_valid.shape[0]
    kv = []
    if p > 0:
        kv.append(prefix_valid.to(torch.bool))
    if r > 0:
        kv.append(torch.ones(b, r, dtype=torch.bool, device=dev))
    kv.append(token_valid)
    if write > 0:
        kv.append(torch.ones(b, write, dtype=torch.bool, device=dev))
    ok = (allow.unsqueeze(0) & torch.cat(kv, 1).unsqueeze(1)) | self_key.unsqueeze(0)
    return torch.zeros(b, 1, t, p + t, device=dev).masked_fill(~ok.unsqueeze(1), float("-inf"))


class DecoderLM(MemoryModel):
    """The decoder-only backbone of docs/models.md#rmt for `transformer`, `trxl`, `rmt`,
    `rmt-write-only` and `trxl-rmt`: pre-LN relative-attention layers, memory tokens and/or a
    Transformer-XL cache. Memory: "memory" [B, m, d]; "cache.<l>", "cache_valid";
    "write_cache.<l>", "write_cache_valid" (as the C++ MemoryState)."""

    def __init__(self, config):
        super().__init__(config)
        cfg = self.config
        if cfg.model not in DECODER_KINDS:
            raise WeightsError("model '%s' is not a decoder-only kind (%s)" % (cfg.model, ", ".join(DECODER_KINDS)))
        if cfg.dim % 2:
            raise WeightsError("config field 'dim' = %d must be even for the decoder-only models" % cfg.dim)
        self.family = cfg.model
        k = cfg.model
        # The cache length: cache_len, whose -1 means slots for trxl (what every trxl file written
        # before the field meant) and segment_len for trxl-rmt (ModelConfig, core/models/config.h).
        default_cache = cfg.slots if k == "trxl" else cfg.segment_len
        self.c = (default_cache if cfg.cache_len < 0 else cfg.cache_len) if k in ("trxl", "trxl-rmt") else 0
        self.m = cfg.slots if k in ("rmt", "rmt-write-only", "trxl-rmt") else 0
        self.read_block = k in ("rmt", "trxl-rmt")
        self.write_only = self.m > 0 and not self.read_block
        d = cfg.dim
        self.tok_emb = nn.Embedding(VOCAB, d)
        if self.m > 0:
            self.memory_init = nn.Parameter(torch.randn(self.m, d))
            if self.read_block:
                self.read_emb = nn.Parameter(torch.randn(self.m, d))
            self.write_emb = nn.Parameter(torch.randn(self.m, d))
            self.mem_norm = layer_norm(d)
        self.layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.layers))
        self.norm = layer_norm(d)
        self.head = nn.Linear(d, VOCAB)

    def initial_memory(self, batch=1):
        cfg, p = self.config, self.tok_emb.weight
        s = {}
        if self.m > 0:
            s["memory"] = self.memory_init.unsqueeze(0).expand(batch, self.m, cfg.dim)
        if self.c > 0:
            for n in range(cfg.layers):
                s["cache.%d" % n] = torch.zeros(batch, self.c, cfg.dim, dtype=p.dtype, device=p.device)
            s["cache_valid"] = torch.zeros(batch, self.c, dtype=p.dtype, device=p.device)
        if self.write_only:
            for n in range(cfg.layers):
                s["write_cache.%d" % n] = torch.zeros(batch, self.m, cfg.dim, dtype=p.dtype, device=p.device)
            s["write_cache_valid"] = torch.zeros(batch, self.m, dtype=p.dtype, device=p.device)
        return s

    def _step(self, seg, mem, tr):
        cfg = self.config
        b, l = seg.tokens.shape
        if not 1 <= l <= cfg.segment_len:
            raise ValueError("segment of %d tokens; the model's segment_len is %d" % (l, cfg.segment_len))
        m, c = self.m, self.c
        r = m if self.read_block else 0
        p = m if self.write_only else c
        t = r + l + m
        parts, memory = [], None
        if m > 0:
            memory = mem["memory"]
            if tuple(memory.shape) != (b, m, cfg.dim):
                raise ValueError("memory must be [%d, %d, %d], got %s" % (b, m, cfg.dim, list(memory.shape)))
            if self.read_block:
                parts.append(memory + self.read_emb.unsqueeze(0))
        parts.append(self.tok_emb(seg.tokens))
        if m > 0:
            parts.append(memory + self.write_emb.unsqueeze(0))
        x = torch.cat(parts, 1)
        prefix_valid = mem["cache_valid"] if c > 0 else (mem["write_cache_valid"] if self.write_only else None)
        mask = decoder_mask(p, r, l, m, prefix_valid, seg.valid)
        table = sinusoid_table(t, p + t, cfg.dim, x.device).to(x.dtype)
        new = {}
        valid_f = seg.valid.to(x.dtype)
        for n, layer in enumerate(self.layers):
            prefix = None
            if c > 0:
                prefix = mem["cache.%d" % n]
                # Stop-gradient: the next segment sees these states as constants.
                new["cache.%d" % n] = torch.cat([prefix, x[:, r:r + l]], 1)[:, -c:].detach()
            if self.write_only:
                prefix = mem["write_cache.%d" % n]
                new["write_cache.%d" % n] = x[:, l:l + m]
            x, w = layer(x, prefix, table, mask)
            if tr is not None:
                self._trace_attention(tr, n, w, b, l, p, r, t, seg.valid)
        if c > 0:
            new["cache_valid"] = torch.cat([mem["cache_valid"], valid_f], 1)[:, -c:]
        if self.write_only:
            new["write_cache_valid"] = torch.ones(b, m, dtype=valid_f.dtype, device=valid_f.device)
        logits = self.head(self.norm(x[:, r:r + l]))
        if m > 0:
            new["memory"] = self.mem_norm(x[:, r + l:r + l + m])
            if tr is not None:
                tr["rmt.memory_prev"] = memory
                tr["rmt.memory"] = new["memory"]
        out = StepOutput(logits)
        if seg.targets is not None:
            out = masked_token_loss(logits, seg.targets, seg.target_valid, clamp=True)
        return out, new

    def _trace_attention(self, tr, n, w, b, l, p, r, t, valid):
        m = self.m
        if (not self.read_block or self.c > 0) and not self.write_only:
            tr["trxl.attn.%d" % n] = w[:, :, r:r + l]
        if m > 0:
            if self.read_block:
                a = w[:, :, :, p:p + t]
            else:  # write-only: the "read" block is the previous write block; it issues no queries
                a = torch.zeros(b, w.shape[1], 2 * m + l, 2 * m + l, dtype=w.dtype, device=w.device)
                a[:, :, m:] = w
            tr["rmt.attn.%d" % n] = a
            tr["rmt.block_mass.%d" % n] = rmt_block_mass(a.detach(), m, valid)


# ------------------------------------------------------------------------------ building and weights


def build_model(config, seed=None, dtype=None):
    """A fresh model of `config` (Config, dict or config file path). seed: torch.manual_seed
    first. The initial values follow docs/models.md but not LibTorch's C++ draws."""
    if isinstance(config, (str, os.PathLike)):
        config = Config.from_file(config)
    elif not isinstance(config, Config):
        config = Config.from_json(config)
    if seed is not None:
        torch.manual_seed(seed)
    if config.model == "memformer":
        model = Memformer(config)
    elif config.model in DECODER_KINDS:
        model = DecoderLM(config)
    elif config.model in MTN_KINDS:
        from .models_mtn import Mtn
        model = Mtn(config)
    else:
        raise WeightsError("model '%s' has no PyTorch module in mnemoscope.models yet (it has: %s)"
                           % (config.model, ", ".join(FAMILIES)))
    if dtype is not None:
        model = model.to(dtype)
    return model.eval()


class WeightsFile:
    """A weights file as read_weights_file in core/train/checkpoint.cpp reads it: `path` (a
    session resolved to its latest checkpoint), `kind` ("zoo model", "training checkpoint" or
    "weights"), `weights` (name -> numpy array, optimizer state left out), `metadata`, `config`
    (its model Config or None), `step` (-1 when none)."""

    def __init__(self, path, kind, weights, metadata, config, step):
        self.path, self.kind, self.weights, self.metadata, self.config, self.step = \
            path, kind, weights, metadata, config, step


def _resolve_path(path):
    from .session import open_session
    p = os.fspath(path).rstrip("/") or "/"
    base, parent = os.path.basename(p), os.path.dirname(p) or "."
    session = None
    if os.path.isdir(p):
        if os.path.isfile(os.path.join(p, "manifest.json")):
            session = p
        elif base == "checkpoints" and os.path.isfile(os.path.join(parent, "manifest.json")):
            session = parent
        else:
            raise WeightsError("'%s' is a directory but not a training session; pass a checkpoint (.safetensors) "
                               "or a session directory" % path)
    elif base == "latest" and os.path.basename(parent) == "checkpoints" and \
            os.path.isfile(os.path.join(os.path.dirname(parent), "manifest.json")):
        session = os.path.dirname(parent)
    if session is None:
        return p, None
    s = open_session(session)
    ck = s.checkpoint()
    if ck is None:
        raise WeightsError("'%s': the session has no checkpoint yet" % path)
    return ck.path, s


def _meta_json(path, key, text):
    try:
        return _guard.loads(text)
    except ValueError as e:
        raise WeightsError("'%s': its \"%s\" metadata is not valid JSON (%s)" % (path, key, e)) from None


def read_weights_file(path):
    """Reads any weights file Mnemoscope writes (see WeightsFile)."""
    real, session = _resolve_path(path)
    f = load_safetensors(real)
    fmt = f.metadata.get("format")
    kind = {CHECKPOINT_FORMAT: "training checkpoint", ZOO_FORMAT: "zoo model"}.get(fmt, "weights")
    model = None
    if "config" in f.metadata:
        tc = _meta_json(real, "config", f.metadata["config"])
        if not isinstance(tc, dict):
            raise WeightsError("'%s': its \"config\" metadata is not a JSON object" % real)
        model = tc.get("model")
    if model is None and "model" in f.metadata:
        model = _meta_json(real, "model", f.metadata["model"])
    if model is None and session is not None and isinstance(session.config, dict):
        model = session.config.get("model")  # a SessionWriter's checkpoints: the manifest's config
    try:
        step = int(f.metadata.get("step", "-1"))
    except ValueError:
        step = -1
    weights = {k: v for k, v in f.tensors.items() if not k.startswith(OPTIM_PREFIX)}
    return WeightsFile(real, kind, weights, f.metadata, Config.from_json(model) if model is not None else None, step)


def check_state(model, state, source="state_dict"):
    """Raises WeightsError unless `state`'s names are exactly the model's and the shapes match;
    the message lists the unknown and the missing names."""
    mine = dict(model.state_dict())
    unknown = sorted(set(state) - set(mine))
    missing = sorted(set(mine) - set(state))
    if unknown or missing:
        def names(xs):
            return ", ".join(xs[:20]) + (" and %d more" % (len(xs) - 20) if len(xs) > 20 else "")
        parts = []
        if unknown:
            parts.append("%d unknown name(s): %s" % (len(unknown), names(unknown)))
        if missing:
            parts.append("%d missing name(s): %s" % (len(missing), names(missing)))
        raise WeightsError("%s does not fit a '%s' model: %s (names are the module paths of docs/models.md)"
                           % (source, model.config.model, "; ".join(parts)))
    for k, v in state.items():
        if tuple(v.shape) != tuple(mine[k].shape):
            raise WeightsError("%s: tensor '%s' has shape %s but the model expects %s; pass the config the weights "
                               "were made with" % (source, k, list(v.shape), list(mine[k].shape)))


def load_state(model, state, source="state_dict"):
    """Copies `state` (name -> tensor or numpy array) into `model` after check_state."""
    state = {k: torch.as_tensor(np.asarray(v)) if not isinstance(v, torch.Tensor) else v for k, v in state.items()}
    check_state(model, state, source)
    with torch.no_grad():
        for k, t in model.state_dict().items():
            t.copy_(state[k].to(t.dtype))
    return model


def load_weights(path, config=None, dtype=None, device=None):
    """A module with the weights of `path`: a zoo model, a `train` checkpoint, an export-weights
    file or a session directory (its latest checkpoint), built from the file's own model config.
    With `config` (Config, dict or config file) the file must be of that config: otherwise the
    differing fields are named. Names that are not the model's are refused, listed."""
    f = read_weights_file(path)
    want = None
    if config is not None:
        want = config if isinstance(config, Config) else \
            Config.from_file(config) if isinstance(config, (str, os.PathLike)) else Config.from_json(config)
    cfg = want or f.config
    if cfg is None:
        raise WeightsError("'%s' has no model config in its metadata (\"model\" or \"config\"); pass config=" % f.path)
    if want is not None and f.config is not None and want != f.config:
        raise WeightsError("'%s' (a %s) belongs to another model config; differing fields (the file's value vs the "
                           "given config's): %s" % (f.path, f.kind, "; ".join(f.config.differences(want))))
    model = build_model(cfg)
    load_state(model, f.weights, "'%s' (a %s)" % (f.path, f.kind))
    if dtype is not None or device is not None:
        model = model.to(device=device, dtype=dtype)
    model.source = f
    return model


def save_weights(model, path, config=None, metadata=None):
    """Writes the model's weights (float32, C++ module-path names) with its config as the "model"
    metadata, as `mnemoscope export-weights` does: `mnemoscope step --checkpoint`, `gui
    --checkpoint`, `eval` and load_weights open it. `config` defaults to model.config."""
    cfg = config if config is not None else model.config
    if not isinstance(cfg, Config):
        cfg = Config.from_json(cfg)
    if cfg != model.config:
        raise WeightsError("save_weights: the config differs from the model's: %s"
                           % "; ".join(cfg.differences(model.config)))
    meta = dict(metadata or {})
    meta["model"] = cfg.dumps()
    tensors = {k: to_saveable(v.detach().float()) for k, v in model.state_dict().items()}
    save_safetensors(path, tensors, meta)
