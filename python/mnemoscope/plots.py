"""Matplotlib figures of the common views (docs/python.md#plots): a step's writer attention,
slot types over segments, and a session's loss curves with the memory-zeroed evaluation.

    import mnemoscope.plots as mp
    fig = mp.writer_attention("steps/step-0002")          # a Trace, a step-NNNN folder or trace file
    fig = mp.slot_types("steps")                          # a `mnemoscope step --out` folder or a list of Traces
    fig = mp.loss_curves("runs/copy")                     # a session folder, Session or Metrics
    fig.savefig("x.png")

Each function returns the matplotlib Figure (drawn on `ax` when one is given). matplotlib is
needed only here (Debian: python3-matplotlib); the values are the trace's and the log's, unchanged.
"""

import os

import numpy as np

RETAIN_MIN, OVERWRITE_MAX = 0.9, 0.1  # the app's default slot thresholds (core/trace/slot_types.h)
SLOT_TYPES = ("retain", "mix", "overwrite")
SLOT_COLORS = ("#3a7bd5", "#e0a020", "#d64541")


def _plt():
    import matplotlib.pyplot as plt
    return plt


def _trace(t):
    from .session import Trace, read_trace
    return t if isinstance(t, Trace) else read_trace(t)


def _axes(ax, size):
    if ax is not None:
        return ax.figure, ax
    fig, ax = _plt().subplots(figsize=size)
    return fig, ax


def valid_tokens(trace):
    """How many of the segment's positions are document tokens (input.offsets is -1 on padding);
    all of them when the trace has no offsets."""
    tok = trace["input.tokens"]
    if "input.offsets" in trace:
        return int((trace["input.offsets"][0, :, 0] >= 0).sum())
    return int(tok.shape[1])


def writer_map(trace, head=None):
    """The writer attention shown: slots x [self | the segment's real tokens | cls], the mean over
    heads (head None) in float32 as the app takes it, or one head; padding columns left out."""
    t = _trace(trace)
    w = np.asarray(t["memformer.writer_attn"], dtype=np.float32)[0]  # [H, k, 1+L+C]
    L = t["input.tokens"].shape[1]
    n = valid_tokens(t)
    cols = [0] + list(range(1, 1 + n)) + list(range(1 + L, w.shape[2]))
    w = w[:, :, cols]
    if head is None:
        acc = np.zeros(w.shape[1:], dtype=np.float32)
        for h in range(w.shape[0]):
            acc += w[h]
        return acc / np.float32(w.shape[0])
    if not 0 <= head < w.shape[0]:
        raise ValueError("head %d: the trace has heads 0..%d" % (head, w.shape[0] - 1))
    return w[head]


def writer_attention(trace, head=None, ax=None):
    """Memformer's writer attention of one step: rows = slots, columns = [self | segment tokens |
    cls], viridis over 0..the map's largest weight (as the app and `step`'s figures)."""
    t = _trace(trace)
    m = writer_map(t, head)
    fig, ax = _axes(ax, (9, 5))
    im = ax.imshow(m, aspect="auto", cmap="viridis", vmin=0.0, vmax=float(m.max()), interpolation="nearest")
    n = valid_tokens(t)
    toks = t["input.tokens"][0, :n]
    labels = ["self"] + [chr(int(c)) if 32 < int(c) < 127 else ("\u2423" if int(c) == 32 else "\u00b7") for c in toks]
    labels += ["cls"] * (m.shape[1] - len(labels))
    ax.set_xticks(range(m.shape[1]))
    ax.set_xticklabels(labels, fontsize=7, family="monospace")
    ax.axvline(0.5, color="w", lw=1)
    if m.shape[1] > n + 1:
        ax.axvline(n + 0.5, color="w", lw=1)
    ax.set_ylabel("memory slot")
    ax.set_xlabel("self | segment tokens | cls")
    seg = t.segment if t.segment is not None else "?"
    ax.set_title("Memformer writer attention, segment %s (%s)" % (seg, "mean over heads" if head is None else "head %d" % head))
    fig.colorbar(im, ax=ax, label="attention weight")
    return fig


def slot_type_counts(traces):
    """[segments x 3] counts of retain / mix / overwrite slots: memformer.slot_type when traced, else
    classified from the writer's self mass (mean over heads of column 0) at the app's thresholds."""
    rows, segs = [], []
    for t in traces:
        if "memformer.slot_type" in t:
            ty = np.asarray(t["memformer.slot_type"])[0].astype(int)
        else:
            self_mass = writer_map(t)[:, 0]
            ty = np.where(self_mass >= RETAIN_MIN, 0, np.where(self_mass <= OVERWRITE_MAX, 2, 1))
        rows.append([int((ty == k).sum()) for k in range(3)])
        segs.append(t.segment)
    return np.array(rows, dtype=np.int64).reshape(-1, 3), segs


def _traces(traces):
    from .session import read_traces
    if isinstance(traces, (str, os.PathLike)):
        return read_traces(traces)
    return [_trace(t) for t in traces]


def slot_types(traces, ax=None):
    """Stacked bars per stepped segment: how many slots retained, mixed or were overwritten."""
    ts = _traces(traces)
    counts, segs = slot_type_counts(ts)
    fig, ax = _axes(ax, (8, 3.5))
    x = np.arange(len(ts))
    bottom = np.zeros(len(ts))
    for k in range(3):
        ax.bar(x, counts[:, k], bottom=bottom, color=SLOT_COLORS[k], label=SLOT_TYPES[k])
        bottom += counts[:, k]
    ax.set_xticks(x)
    ax.set_xticklabels([str(s) for s in segs])
    ax.set_xlabel("segment")
    ax.set_ylabel("slots")
    ax.set_title("Slot types per segment (retain >= %.1f, overwrite <= %.1f self mass)" % (RETAIN_MIN, OVERWRITE_MAX))
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    return fig


def loss_curves(source, ax=None, split="valid"):
    """A session's training loss per step, its `split` evaluation, and the same evaluation with the
    memory zeroed between segments (the gap is what the memory is worth)."""
    from .session import Metrics, Session, open_session
    if isinstance(source, Metrics):
        m = source
    else:
        s = source if isinstance(source, Session) else open_session(source)
        m = s.metrics
    fig, ax = _axes(ax, (8, 4))
    drawn = 0
    if "loss" in m.fields("step"):
        c = m.column("loss")
        ax.plot(c.step, c.value, color="#999999", lw=0.8, label="training loss")
        drawn += 1
    def col(**kw):
        try:
            return m.column("loss", type="eval", split=split, **kw)
        except KeyError:
            return []
    ev = col()
    if len(ev):
        ax.plot(ev.step, ev.value, "o-", color="#3a7bd5", label="%s loss" % split)
        drawn += 1
    zm = col(zero_memory=True)
    if len(zm):
        ax.plot(zm.step, zm.value, "s--", color="#d64541", label="%s loss, memory zeroed" % split)
        drawn += 1
    if not drawn:
        raise ValueError("the metrics hold no loss to draw (no step or eval records yet)")
    ax.set_xlabel("training step")
    ax.set_ylabel("loss (nats per token)")
    ax.set_title("Loss, and the evaluation with the memory zeroed")
    ax.legend(fontsize=8)
    return fig
