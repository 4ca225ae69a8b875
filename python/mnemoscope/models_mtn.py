"""The Memory Transformer Network family (`mtn`, `mtn-naive`, `no-memory`) as a torch.nn.Module,
weight-compatible with families/mtn/core/model.cpp (docs/models.md "Memory Transformer Network"): the
same parameter names, the same computation op for op (so `mnemoscope step` and step() agree bit
for bit on the CPU with dense projections), dropout 0.1 at the same places (active in train()
only).

    from mnemoscope.models import build_model
    model = build_model({"model": "mtn", "slots": 8, "segment_len": 32, "dim": 64})
    out, memory, traces = model.step(segment, trace=True)     # language modelling (the default)
    model.set_task_head("answer_tagging", other_weight=1.0, answer_weight=4.0)   # the paper's QA

Built through mnemoscope.models.build_model / load_weights (this module is imported there when
a config names one of MTN_KINDS). Needs torch.
"""

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from .models import (MTN_KINDS, VOCAB, MemoryModel, MultiHeadAttention, StepOutput, WeightsError, causal_mask,
                     key_padding_mask, layer_norm, masked_token_loss, projection)

MEM = 261            # ByteTokenizer::kMem, the naive baseline's <MEM> token
RESERVED_DIMS = 2    # MtnImpl::kReservedDims: the last two embedding dimensions
DROPOUT = 0.1        # MtnImpl::kDropout, the paper's dropout everywhere
NEG_INF = float("-inf")
LANGUAGE_MODEL, ANSWER_TAGGING = "language_model", "answer_tagging"


@dataclass
class TaskHead:
    """What the chunk tokens are trained to predict (core/data/segment.h TaskHead): "language_model"
    (targets = next token ids, lm_head; what `mnemoscope step` runs) or "answer_tagging" (targets
    0/1, qa_head, bidirectional attention, class-weighted NLL)."""
    kind: str = LANGUAGE_MODEL
    other_weight: float = 1.0   # weight of class 0 (not answer)
    answer_weight: float = 1.0  # weight of class 1 (answer)


# ------------------------------------------------------------------------------ pieces


def safe_rows(mask):
    """A query row whose keys are all masked gets a zero row instead (no NaN); its outputs are
    never used (mtn.cpp safe_rows)."""
    dead = mask.max(-1, keepdim=True)[0] == NEG_INF
    return mask.masked_fill(dead, 0.0)


def additive(ok, dtype):
    """[B, N] bool -> additive [B, N] of `dtype` (0 allowed, -inf masked)."""
    return torch.zeros(ok.shape, dtype=dtype, device=ok.device).masked_fill(~ok, NEG_INF)


def sinusoid_positions(n, dim, device=None):
    """Vaswani et al.'s sinusoid over `dim` dimensions, [n, dim] float32: pe[p, 2i] =
    sin(p / 10000^(2i/dim)), pe[p, 2i+1] = cos(the same); computed in float64 as the C++ does."""
    pos = torch.arange(n, dtype=torch.float64, device=device).unsqueeze(1)
    k = torch.arange(dim, dtype=torch.int64, device=device)
    two_i = torch.div(k, 2, rounding_mode="floor").to(torch.float64) * 2.0
    div = torch.pow(10000.0, two_i / float(max(dim, 1)))
    angle = pos / div.unsqueeze(0)
    even = (k % 2 == 0).unsqueeze(0)
    return torch.where(even, torch.sin(angle), torch.cos(angle)).to(torch.float32)


@dataclass
class KeptMemory:
    embeddings: torch.Tensor  # [B, m, d]
    importance: torch.Tensor  # [B, m]
    source: torch.Tensor      # [B, m] int64
    age: torch.Tensor         # [B, m] int64
    index: torch.Tensor       # [B, m] int64, -1 when empty


def keep_m_max(emb, importance, ok, source, age, m):
    """Eq. 5: of the candidates with ok, the m of largest importance, in decreasing importance;
    a tie keeps the lower index first (a stable sort); not-ok candidates and NaN scores rank
    last, and slots left over are empty (zeros, importance 0, source/age/index -1). The
    selection has no gradient; the kept embeddings and importances keep theirs."""
    b, n, d = emb.shape
    if not 0 <= m <= n:
        raise ValueError("keep_m_max: cannot keep %d of %d candidates" % (m, n))
    score = importance.detach().to(torch.float64)
    score = score.masked_fill(~ok | torch.isnan(score), NEG_INF)
    idx = torch.sort(score, stable=True, dim=1, descending=True)[1][:, :m].contiguous()
    empty = ~ok.gather(1, idx)
    return KeptMemory(emb.gather(1, idx.unsqueeze(-1).expand(b, m, d)).masked_fill(empty.unsqueeze(-1), 0.0),
                      importance.gather(1, idx).masked_fill(empty, 0.0),
                      source.gather(1, idx).masked_fill(empty, -1),
                      age.gather(1, idx).masked_fill(empty, -1),
                      idx.masked_fill(empty, -1))


class MtnFeedForward(nn.Module):
    """fc2(ReLU(fc1(x))) (Vaswani et al.)."""

    def __init__(self, d, ff, cfg):
        super().__init__()
        self.fc1 = projection(d, ff, cfg)
        self.fc2 = projection(ff, d, cfg)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class MtnLayer(nn.Module):
    """The paper's post-LN layer (Eq. 2-3): h = ln_attn(x + Dropout(MHA(x))), out = ln_ffn(h +
    Dropout(FFN(h)))."""

    def __init__(self, cfg, dropout):
        super().__init__()
        d = cfg.dim
        self.attn = MultiHeadAttention(d, cfg.heads, cfg)
        self.ffn = MtnFeedForward(d, cfg.ff_width, cfg)
        self.ln_attn, self.ln_ffn = layer_norm(d), layer_norm(d)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, mask):
        a, w = self.attn(x, x, mask)
        h = self.ln_attn(x + self.drop(a))
        return self.ln_ffn(h + self.drop(self.ffn(h))), w


# ------------------------------------------------------------------------------ the model


class Mtn(MemoryModel):
    """Memory Transformer Network (docs/models.md#memory-transformer-network), one of
    `mtn` (kept tokens, importance added to the joint attention logits), `mtn-naive` (m learned
    memory vectors, the <MEM> outputs) and `no-memory`. Memory (as the C++ MemoryState):
    mtn: "embeddings" [B, m, d], "importance" [B, m], "source" / "age" [B, m] int64,
    "tokens_read" [B] int64; mtn-naive: "embeddings"; no-memory: none.

    Language modelling by default (what `mnemoscope step` runs); set_task_head("answer_tagging",
    ...) switches to the paper's token classification. To read a chunk with the memory fixed
    (the QA inference phase), pass the same memory again and ignore the returned one."""

    def __init__(self, config, dropout=DROPOUT):
        super().__init__(config)
        cfg = self.config
        if cfg.model not in MTN_KINDS:
            raise WeightsError("model '%s' is not of the MTN family (%s)" % (cfg.model, ", ".join(MTN_KINDS)))
        if cfg.dim <= RESERVED_DIMS + 1:
            raise WeightsError("config field 'dim' = %d is too small for %s: it needs dim >= 4 (two embedding "
                               "dimensions are reserved)" % (cfg.dim, cfg.model))
        if not 0.0 <= dropout < 1.0:
            raise ValueError("mtn: dropout must be in [0, 1)")
        self.family = cfg.model
        self.task = TaskHead()
        d = cfg.dim
        # Created in the C++ constructor's order.
        self.tok_emb = nn.Embedding(VOCAB, d - RESERVED_DIMS)
        with torch.no_grad():
            self.tok_emb.weight.normal_(0.0, 1.0 / math.sqrt(d))  # sqrt(d) * w ~ N(0, 1)
        self.emb_drop = nn.Dropout(dropout)
        self.chunk_layers = nn.ModuleList(MtnLayer(cfg, dropout) for _ in range(cfg.n1_layers))
        if cfg.model != "no-memory":
            self.memory_layers = nn.ModuleList(MtnLayer(cfg, dropout) for _ in range(cfg.n1_layers))
            self.memory_ffn = MtnFeedForward(d, cfg.ff_width, cfg)
        self.joint_layers = nn.ModuleList(MtnLayer(cfg, dropout) for _ in range(cfg.n2_layers))
        if cfg.model == "mtn":
            bound = 1.0 / math.sqrt(d)
            self.importance_v = nn.Parameter(torch.empty(d).uniform_(-bound, bound))
            self.importance_b = nn.Parameter(torch.zeros(1))
        self.lm_head = nn.Linear(d, VOCAB)
        self.qa_head = nn.Linear(d, 1)

    # -------------------------------------------------------------- task

    def set_task_head(self, kind=LANGUAGE_MODEL, other_weight=1.0, answer_weight=1.0):
        """"language_model" (default) or "answer_tagging" with the class weights of its loss
        (finite, > 0), or a TaskHead."""
        head = kind if isinstance(kind, TaskHead) else TaskHead(kind, float(other_weight), float(answer_weight))
        if head.kind not in (LANGUAGE_MODEL, ANSWER_TAGGING):
            raise ValueError("task head kind must be '%s' or '%s', got %r"
                             % (LANGUAGE_MODEL, ANSWER_TAGGING, head.kind))
        for w in (head.other_weight, head.answer_weight):
            if not (math.isfinite(w) and w > 0.0):
                raise ValueError("mtn task: class weights must be finite and > 0")
        self.task = head
        return self

    @property
    def predicts_tokens(self):
        """True in language modelling; a token classifier's labels come from its task only (the
        C++ engine then steps a document with no targets)."""
        return self.task.kind == LANGUAGE_MODEL

    # -------------------------------------------------------------- memory

    def embed(self, tokens):
        """E(x) = [sqrt(d) w_x + PE(position in the chunk) ; 0 ; 0], [B, L] -> [B, L, d]."""
        b, l = tokens.shape
        d = self.config.dim
        w = self.tok_emb(tokens) * math.sqrt(d)
        x = w + sinusoid_positions(l, d - RESERVED_DIMS, w.device).to(w.dtype).unsqueeze(0)
        return torch.cat([x, torch.zeros(b, l, RESERVED_DIMS, dtype=x.dtype, device=x.device)], -1)

    def naive_initial_memory(self):
        """E(<MEM> x m) with both reserved dimensions set to 1, [1, m, d]."""
        cfg = self.config
        x = self.embed(torch.full((1, cfg.slots), MEM, dtype=torch.int64, device=self.tok_emb.weight.device))
        flag = torch.zeros(cfg.dim, dtype=x.dtype, device=x.device)
        flag[cfg.dim - RESERVED_DIMS:] = 1.0
        return x + flag

    def initial_memory(self, batch=1):
        cfg, p = self.config, self.tok_emb.weight
        m = cfg.slots
        f = dict(dtype=p.dtype, device=p.device)
        i = dict(dtype=torch.int64, device=p.device)
        if cfg.model == "mtn":
            return {"embeddings": torch.zeros(batch, m, cfg.dim, **f), "importance": torch.zeros(batch, m, **f),
                    "source": torch.full((batch, m), -1, **i), "age": torch.full((batch, m), -1, **i),
                    "tokens_read": torch.zeros(batch, **i)}
        if cfg.model == "mtn-naive":
            return {"embeddings": self.naive_initial_memory().expand(batch, m, cfg.dim).contiguous()}
        return {}

    def zero_memory(self, memory):
        """Floating-point tensors zeroed, integer ones (source, age, tokens_read) the initial
        memory's (core/models/model.h MemoryAblation::kZeroed)."""
        out, init = {}, None
        for k, v in memory.items():
            if v.is_floating_point():
                out[k] = torch.zeros_like(v)
            else:
                if init is None:
                    init = self.initial_memory(v.shape[0])
                out[k] = init[k]
        return out

    # -------------------------------------------------------------- one step

    def step(self, segment, memory=None, trace=False, ablate=None, ablate_mode="reset"):
        out, mem, traces = super().step(segment, memory, trace, ablate, ablate_mode)
        if trace and not self.predicts_tokens:
            traces.pop("lm.loss", None)  # answer tagging traces its loss as qa.loss
        return out, mem, traces

    def _step(self, seg, mem, tr):
        cfg = self.config
        tokens, valid = seg.tokens, seg.valid
        if tokens.dim() != 2 or valid is None or tuple(valid.shape) != tuple(tokens.shape) or valid.dtype != torch.bool:
            raise ValueError("tokens must be [B, L] and valid [B, L] bool like tokens")
        b, l = tokens.shape
        d, dev = cfg.dim, tokens.device
        lm = self.predicts_tokens

        # Chunk: E(x_in) through the N1 chunk layers.
        x = self.emb_drop(self.embed(tokens))
        chunk_mask = key_padding_mask(valid)  # [B, 1, 1, L]
        if lm:
            chunk_mask = chunk_mask + causal_mask(l, dev)
        chunk_mask = safe_rows(chunk_mask)
        for layer in self.chunk_layers:
            x = layer(x, chunk_mask)[0]

        # Memory: N1 memory layers, the FFN without residual, then [memory ; chunk].
        m = 0
        mem_ok = mem_emb = None
        if cfg.model == "no-memory":
            z, joint_mask = x, chunk_mask
        else:
            mem_emb = mem["embeddings"]
            if tuple(mem_emb.shape) != (b, cfg.slots, d):
                raise ValueError("memory embeddings must be [%d, %d, %d], got %s"
                                 % (b, cfg.slots, d, list(mem_emb.shape)))
            m = mem_emb.shape[1]
            if cfg.model == "mtn":
                src, imp = mem["source"], mem["importance"]
                if tuple(src.shape) != (b, m) or tuple(imp.shape) != (b, m):
                    raise ValueError("memory source and importance must be [B, m]")
                mem_ok = src >= 0
                key_bias = imp.masked_fill(~mem_ok, NEG_INF)  # what joint layers add to each memory key
                if tr is not None:
                    tr["mtn.importance_prev"] = imp.masked_fill(~mem_ok, 0.0)
            else:
                mem_ok = torch.ones(b, m, dtype=torch.bool, device=dev)
                key_bias = torch.zeros(b, m, dtype=mem_emb.dtype, device=mem_emb.device)
            y = mem_emb
            mem_mask = safe_rows(key_padding_mask(mem_ok))
            for layer in self.memory_layers:
                y = layer(y, mem_mask)[0]
            y = self.memory_ffn(y)
            bias = torch.cat([key_bias, additive(valid, key_bias.dtype)], 1)  # [B, m + L]
            if not lm:
                # [memory ; chunk], every row reads every key.
                z = torch.cat([y, x], 1)
                joint_mask = bias.view(b, 1, 1, m + l)
            else:
                # [read memory ; chunk ; write memory] (docs/models.md "Joint masks").
                t = 2 * m + l
                z = torch.cat([y, x, y], 1)
                ninf = torch.full((b, 1, 1, t), NEG_INF, dtype=bias.dtype, device=bias.device)
                read_cols, chunk_cols, write_cols = ninf.clone(), ninf.clone(), ninf.clone()
                read_cols[..., :m] = key_bias.view(b, 1, 1, m)
                chunk_cols[..., :m + l] = bias.view(b, 1, 1, m + l)
                write_cols[..., m:m + l] = bias[:, m:m + l].view(b, 1, 1, l)
                write_cols[..., m + l:] = key_bias.view(b, 1, 1, m)
                causal = torch.zeros(1, 1, l, t, dtype=bias.dtype, device=bias.device)
                causal[..., m:m + l] = causal_mask(l, dev).view(1, 1, l, l)
                joint_mask = torch.cat([read_cols.expand(b, 1, m, t), chunk_cols + causal,
                                        write_cols.expand(b, 1, m, t)], 2)
            joint_mask = safe_rows(joint_mask)

        if tr is not None:
            tr["mtn.blocks"] = torch.tensor([m, l, m if lm and m > 0 else 0], dtype=torch.int64)

        # N2 joint layers.
        for n, layer in enumerate(self.joint_layers):
            z, w = layer(z, joint_mask)
            if tr is not None:
                tr["mtn.joint_attn.%d" % n] = w
        # e: the rows that become the next memory or its candidates, then the chunk.
        e = torch.cat([z[:, m + l:m + l + m], z[:, m:m + l]], 1) if lm and m > 0 else z
        if tr is not None:
            tr["mtn.e"] = e

        # Task head on the chunk positions.
        e_chunk = z[:, m:m + l]
        tmask = None
        if seg.targets is not None:
            if tuple(seg.targets.shape) != (b, l) or seg.target_valid is None or \
                    tuple(seg.target_valid.shape) != (b, l):
                raise ValueError("targets and target_valid must be [B, L] like tokens")
            tmask = seg.target_valid & valid
        if lm:
            logits = self.lm_head(e_chunk)  # [B, L, V]
            out = StepOutput(logits) if tmask is None else masked_token_loss(logits, seg.targets, tmask, clamp=True)
        else:
            a = self.qa_head(e_chunk).squeeze(-1)  # [B, L] answer logit
            out = StepOutput(torch.stack([torch.zeros_like(a), a], -1))  # softmax = (1 - p, p)
            if tr is not None:
                tr["qa.answer_prob"] = torch.sigmoid(a)
            if tmask is not None:
                yt = seg.targets
                if not bool(((yt == 0) | (yt == 1) | ~tmask).all()):
                    raise ValueError("answer tagging targets must be 0 or 1 where target_valid")
                pos = (yt == 1) & tmask
                # -log p(y): softplus(-a) for answers, softplus(a) otherwise.
                nll = torch.where(pos, F.softplus(-a), F.softplus(a))
                mf = tmask.to(nll.dtype)
                wt = torch.where(pos, torch.full_like(a, self.task.answer_weight),
                                 torch.full_like(a, self.task.other_weight)) * mf
                out.token_loss = nll * mf
                out.loss_sum = (wt * nll).sum()
                out.loss_count = wt.sum()
                out.loss = out.loss_sum / out.loss_count.clamp_min(1e-12)
                if tr is not None:
                    tr["qa.loss"] = out.token_loss

        # Memory update.
        new = {}
        row_read = valid.any(1)  # [B]: rows whose chunk has a real token
        if cfg.model == "mtn":
            imp_all = torch.matmul(e, self.importance_v) + self.importance_b  # [B, m + L]
            ok = torch.cat([mem_ok, valid], 1)
            read = mem["tokens_read"]
            pos = torch.arange(l, dtype=torch.int64, device=dev).unsqueeze(0)
            chunk_src = (read.unsqueeze(1) + pos).masked_fill(~valid, -1)
            src_all = torch.cat([mem["source"], chunk_src], 1)
            age_all = torch.cat([mem["age"] + 1, torch.zeros(b, l, dtype=chunk_src.dtype, device=dev)], 1)
            kept = keep_m_max(e, imp_all, ok, src_all, age_all, m)
            r2, r3 = row_read.unsqueeze(1), row_read.view(b, 1, 1)
            new["embeddings"] = torch.where(r3, kept.embeddings, mem_emb)
            new["importance"] = torch.where(r2, kept.importance, mem["importance"])
            new["source"] = torch.where(r2, kept.source, mem["source"])
            new["age"] = torch.where(r2, kept.age, mem["age"])
            new["tokens_read"] = read + row_read.to(torch.int64) * l
            if tr is not None:
                tr["mtn.importance"] = imp_all.masked_fill(~ok, 0.0)
                tr["mtn.candidate_source"] = src_all.masked_fill(~ok, -1)
                tr["mtn.kept_source"] = new["source"]
                tr["mtn.kept_importance"] = new["importance"]
                tr["mtn.age"] = new["age"]
                tr["mtn.kept_index"] = torch.where(r2, kept.index, torch.full_like(kept.index, -1))
        elif cfg.model == "mtn-naive":
            new["embeddings"] = torch.where(row_read.view(b, 1, 1), e[:, :m], mem_emb)
        return out, new
