"""Canonical trace keys (docs/formats.md "Traces"): the names, shapes and dtypes the C++ models
trace and the app draws. validate_segment() checks one segment's traces against this table
before a recording is written, so a Python-written recording is one the app can replay.

Keys outside the table are rejected by name, except those under "user." (any shape and dtype:
stored and read back, never drawn by the app).
"""

import re

import numpy as np

from .errors import TraceKeyError

FLOAT = "float32"
I64 = "int64"
I32 = "int32"
I8 = "int8"


# Stored dtype -> its safetensors name (the words of the C++ check, core/trace/key_check.h).
ST_NAME = {"float32": "F32", "int64": "I64", "int32": "I32", "int8": "I8"}

# Shapes as core/trace/key_check.cpp words them (its messages and these agree).
_DOC_SHAPE = {"memformer.writer_attn": "[B, H, k, 1+L+C]", "hash.<module path>.counts": "[K, R]",
              "mtn.importance": "[B, m+L]", "mtn.candidate_source": "[B, m+L]", "mtn.e": "[B, m+L, d]",
              "memformer.cross_attn.<layer>": "[B, H, L', L+C]", "memformer.decoder_read": "[B, L', k]"}


class KeySpec:
    def __init__(self, pattern, dims, dtype, meaning):
        self.pattern = pattern    # e.g. "rmt.attn.<layer>"
        self.dims = dims          # symbolic dims, e.g. ("B", "H", "T", "T"); ints are literal sizes
        self.dtype = dtype        # stored dtype
        self.meaning = meaning
        self.doc_shape = _DOC_SHAPE.get(pattern, "[" + ", ".join(str(d) for d in dims) + "]")
        rx = re.escape(pattern)
        rx = rx.replace(re.escape("<layer>"), r"(?P<layer>0|[1-9][0-9]*)")
        rx = rx.replace(re.escape("<module path>"), r"(?P<path>[A-Za-z0-9_][A-Za-z0-9_.]*?)")
        self.regex = re.compile("^" + rx + "$")

    def shape_text(self):
        return "[" + ", ".join(str(d) for d in self.dims) + "]"


# The table of docs/formats.md "Trace keys" (the C++ names: core/trace/keys.h) (batch first). Dims: B batch, L segment tokens (padded),
# H heads, k Memformer slots, C classification tokens, m RMT/MTN memory size, d width,
# T attention rows, N lookups, K tables, R = 2^tau buckets, P the predicted (next) segment's tokens.
KEYS = [
    KeySpec("input.tokens", ("B", "L"), I64, "token ids of the segment"),
    KeySpec("input.offsets", ("B", "L", 2), I64, "byte range of each token in the document; -1 on padding"),
    KeySpec("lm.loss", ("B", "L"), FLOAT,
            "per-token cross-entropy in nats; value j of segment s predicts document token predicted_token(kind, s, L, j)"),
    KeySpec("lm.loss_memory_reset", ("B", "L"), FLOAT,
            "lm.loss of the same step with the memory it started from reset to the initial memory (memory benefit)"),
    KeySpec("lm.loss_memory_zeroed", ("B", "L"), FLOAT,
            "lm.loss of the same step with the memory it started from zeroed (memory benefit)"),
    KeySpec("memformer.writer_attn", ("B", "H", "k", "W"), FLOAT,
            "writer attention: column 0 the slot itself, then the L tokens, then the C classification tokens"),
    KeySpec("memformer.read_attn.<layer>", ("B", "H", "L", "k"), FLOAT, "memory-reading cross-attention"),
    KeySpec("memformer.memory_prev", ("B", "k", "d"), FLOAT, "memory before this step"),
    KeySpec("memformer.memory", ("B", "k", "d"), FLOAT, "memory after this step"),
    KeySpec("memformer.forget_norm", ("k",), FLOAT, "||v_bias^i|| of each slot"),
    KeySpec("memformer.slot_type", ("B", "k"), I8, "0 retain, 1 mix, 2 overwrite"),
    KeySpec("memformer.enc", ("B", "E", "d"), FLOAT,
            "final encoder states (after enc_norm) that the writer and the decoder read, E = L + C"),
    KeySpec("memformer.cross_attn.<layer>", ("B", "H", "P", "E"), FLOAT,
            "decoder cross-attention over the encoder states [tokens | cls]; rows: the P positions of the predicted segment"),
    KeySpec("memformer.decoder_read", ("B", "P", "k"), FLOAT,
            "what each predicted token drew from the slots: mean over heads of the last cross_attn times the mean over "
            "heads of the last encoder layer's memory read of every row, cls included; rows sum to 1"),
    KeySpec("memformer.read_gate", ("N_enc",), FLOAT,
            "tanh(read_gate) of each encoder layer, the factor its memory read enters with (model.memory_gate only)"),
    KeySpec("rmt.attn.<layer>", ("B", "H", "T", "T"), FLOAT,
            "RMT self-attention, T = 2m + L in the order [read, tokens, write]"),
    KeySpec("rmt.block_mass.<layer>", ("B", "H", 3), FLOAT, "reading, writing, rewriting masses"),
    KeySpec("rmt.memory_prev", ("B", "m", "d"), FLOAT, "read memory of this segment"),
    KeySpec("rmt.memory", ("B", "m", "d"), FLOAT, "write outputs of this segment (the next read memory)"),
    KeySpec("trxl.attn.<layer>", ("B", "H", "L", "P"), FLOAT,
            "Transformer-XL attention over [cache, (read), tokens, (write)]"),
    KeySpec("hash.<module path>.bucket", ("N", "K"), I32, "bucket of each token in each table"),
    KeySpec("hash.<module path>.p", ("N", "K"), FLOAT, "p(z_k) of each token in each table"),
    KeySpec("hash.<module path>.counts", ("K", "R"), I64, "lookups per bucket, R = 2^tau"),
    KeySpec("mtn.importance", ("B", "M"), FLOAT, "importance of the memory then chunk candidates (M = m + L)"),
    KeySpec("mtn.candidate_source", ("B", "M"), I64, "document token index of each candidate, -1 none"),
    KeySpec("mtn.importance_prev", ("B", "m"), FLOAT, "importance added to the logits this step"),
    KeySpec("mtn.kept_source", ("B", "m"), I64, "document token index of each kept entry, -1 empty"),
    KeySpec("mtn.kept_index", ("B", "m"), I64, "candidate index of each kept entry, -1 empty"),
    KeySpec("mtn.kept_importance", ("B", "m"), FLOAT, "importance of each kept entry"),
    KeySpec("mtn.age", ("B", "m"), I64, "chunks each kept entry survived"),
    KeySpec("mtn.e", ("B", "M", "d"), FLOAT, "next memory candidates and chunk outputs"),
    KeySpec("mtn.joint_attn.<layer>", ("B", "H", "J", "J"), FLOAT, "joint-layer attention [memory, chunk, write]"),
    KeySpec("mtn.blocks", (3,), I64, "joint rows: memory, chunk, write memory"),
    KeySpec("qa.answer_prob", ("B", "L"), FLOAT, "P(answer) per chunk token"),
    KeySpec("qa.loss", ("B", "L"), FLOAT, "class-weighted NLL per token"),
]

USER_PREFIX = "user."

_FLOAT_KINDS = "f"
_INT_KINDS = "iu"


def spec_of(key):
    """(KeySpec, match) of a canonical key, or (None, None)."""
    for s in KEYS:
        m = s.regex.match(key)
        if m:
            return s, m
    return None, None


def known_patterns():
    return [s.pattern for s in KEYS]


def _dtype_text(arr):
    return str(arr.dtype)


def coerce(key, value):
    """The array stored for `key`: canonical float keys take any floating dtype (stored as
    float32); integer keys any integer dtype whose values fit (stored as the key's dtype).
    Anything else is a TraceKeyError naming the key, the dtype found and the one expected."""
    spec, _ = spec_of(key)
    arr = value if isinstance(value, np.ndarray) else np.asarray(value)
    if spec is None:
        if key.startswith(USER_PREFIX) and len(key) > len(USER_PREFIX):
            return arr
        raise TraceKeyError("trace key '%s' is not a canonical key; use one of %s (docs/formats.md \"Traces\"), "
                            "or put your own tensors under '%s<name>'" % (key, ", ".join(known_patterns()), USER_PREFIX))
    want = np.dtype(spec.dtype)
    kind = arr.dtype.kind
    if want.kind == "f":
        if kind not in _FLOAT_KINDS:
            raise TraceKeyError("trace key '%s' must be floating point (stored as float32), got %s; "
                                "convert it with .astype(np.float32)" % (key, _dtype_text(arr)))
        return np.ascontiguousarray(arr, dtype=np.float32)
    if kind not in _INT_KINDS:
        raise TraceKeyError("trace key '%s' must be an integer tensor (stored as %s), got %s; convert it with "
                            ".astype(np.%s)" % (key, spec.dtype, _dtype_text(arr), spec.dtype))
    if arr.size:
        info = np.iinfo(want)
        lo, hi = arr.min(), arr.max()
        if lo < info.min or hi > info.max:
            raise TraceKeyError("trace key '%s' holds values %d..%d that do not fit its dtype %s"
                                % (key, int(lo), int(hi), spec.dtype))
    return np.ascontiguousarray(arr, dtype=want)


def check_stored(key, arr, stored_dtype=None):
    """Raises TraceKeyError when a stored tensor's dtype or rank does not fit its canonical key,
    in the words of the C++ readers' check (core/trace/key_check.h). `stored_dtype` is the
    file's dtype name ("F32", "BF16", ...) when the array was converted on loading. Tensors
    under keys that are not canonical are accepted (user.* keys, keys of newer minor versions)."""
    spec, _ = spec_of(key)
    if spec is None:
        return
    want = ST_NAME[spec.dtype]
    have = stored_dtype or ST_NAME.get(str(arr.dtype), {"float64": "F64", "float16": "F16", "int16": "I16",
                                                        "uint8": "U8", "bool": "BOOL"}.get(str(arr.dtype), "another dtype"))
    if have == want and arr.ndim == len(spec.dims):
        return
    raise TraceKeyError("trace key '%s' is stored as %s with shape [%s]; the canonical key is %s %s "
                        "(docs/formats.md \"Traces\")" % (key, have, ", ".join(str(d) for d in arr.shape), want,
                                                          spec.doc_shape))


def validate_segment(traces, where="segment"):
    """Checks one segment's traces {key: array} (already coerced): each canonical key's rank,
    literal sizes and dtype, and that the sizes the keys share agree (batch B, segment length L,
    heads, memory sizes, square attention maps, T = 2m + L for RMT). Raises TraceKeyError
    naming the key, its shape and the shape expected."""
    bound = {}  # symbol -> (size, key that fixed it)

    def bind(sym, size, key, spec):
        if sym in bound and bound[sym][0] != size:
            other = bound[sym][1]
            plain = sym.split(":")[-1]
            raise TraceKeyError("%s: trace key '%s' has shape %s (canonical %s): its %s = %d disagrees with "
                                "'%s', where %s = %d" % (where, key, list(traces[key].shape), spec.shape_text(),
                                                        plain, size, other, plain, bound[sym][0]))
        bound.setdefault(sym, (size, key))

    for key in sorted(traces):
        arr = traces[key]
        spec, m = spec_of(key)
        if spec is None:
            continue
        try:
            check_stored(key, arr)
        except TraceKeyError as e:
            raise TraceKeyError("%s: %s" % (where, e)) from None
        if spec.dims[-2:] in (("T", "T"), ("J", "J")) and arr.shape[-1] != arr.shape[-2]:
            raise TraceKeyError("%s: trace key '%s' has shape %s; an attention map must be square (%s)"
                                % (where, key, list(arr.shape), spec.shape_text()))
        for sym, size in zip(spec.dims, arr.shape):
            if isinstance(sym, int):
                if size != sym:
                    raise TraceKeyError("%s: trace key '%s' has shape %s; the canonical shape is %s"
                                        % (where, key, list(arr.shape), spec.shape_text()))
                continue
            # Heads are shared within a family; T, W, P, J, N, K, R, M, d are per family or per path.
            family = key.split(".")[0]
            if sym in ("H", "T", "W", "P", "J", "d", "m"):
                sym_k = family + ":" + sym
            elif sym in ("N", "K", "R"):
                sym_k = "hash:" + m.group("path") + ":" + sym
            else:
                sym_k = sym
            bind(sym_k, size, key, spec)
    # Cross-family relations the app relies on.
    if "rmt:T" in bound and "rmt:m" in bound and "L" in bound:
        t, m_, l_ = bound["rmt:T"][0], bound["rmt:m"][0], bound["L"][0]
        if t != 2 * m_ + l_:
            raise TraceKeyError("%s: trace key '%s' has T = %d, but an RMT attention map is [read m, tokens L, "
                                "write m] with m = %d ('%s') and L = %d ('%s'): T must be %d"
                                % (where, bound["rmt:T"][1], t, m_, bound["rmt:m"][1], l_, bound["L"][1], 2 * m_ + l_))
    if "memformer:W" in bound and "L" in bound and bound["memformer:W"][0] < 1 + bound["L"][0]:
        raise TraceKeyError("%s: trace key 'memformer.writer_attn' has %d columns; it needs 1 + L (+ C) = at least %d"
                            % (where, bound["memformer:W"][0], 1 + bound["L"][0]))
    for key in traces:
        if key.startswith("hash.") and key.endswith(".counts"):
            r = traces[key].shape[-1]
            if r < 1 or r & (r - 1):
                raise TraceKeyError("%s: trace key '%s' has %d buckets per table; it must be a power of two (2^tau)"
                                    % (where, key, r))
    return True


def predicted_token(model_kind, segment, segment_len, j):
    """The document token that value j of segment `segment`'s lm.loss is the loss of
    (docs/formats.md "lm.loss"): Memformer predicts the next segment, token (s+1)L + j; every
    other kind the next token, token sL + j + 1."""
    if model_kind == "memformer":
        return (segment + 1) * segment_len + j
    return segment * segment_len + j + 1
