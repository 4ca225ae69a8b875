"""Writing a session from Python (docs/python.md): the files `mnemoscope train` writes, in the
same format, so the app's `gui --session` follows and replays it and `mnemoscope export
--session` exports it.

    with SessionWriter("runs/py-rmt", config={"model": {"model": "rmt", "slots": 8, ...}}) as w:
        w.log(step, loss=..., lr=...)                       # a {"type": "step"} record
        w.record(step, probe_text, traces_by_segment)       # traces/step-N.safetensors + a probe record
        w.checkpoint(step, model.state_dict())              # checkpoints/step-N.safetensors + latest

Every file is written atomically (mnemoscope.atomic) and metrics records are appended as
CRC-framed records, so a crash leaves every file complete or absent and at most a torn last
record, which readers skip.
"""

import datetime
import fcntl
import json
import math
import numbers
import os

import numpy as np

from . import _guard, _version, config_schema
from .atomic import write_file_atomic
from .errors import SessionError, SessionLockedError, TraceKeyError
from .framed_log import FramedLogWriter, LogError, read_framed_log
from .keys import coerce, validate_segment
from .safetensors import save_safetensors
from .session import MAX_STEP, STEPPED_TYPES, outside_session, read_manifest, record_problem, step_name, steps_in, wrong_kind

# ------------------------------------------------------------------------------ model config

# The model config fields the app reads (core/models/config.h: ModelConfig::from_json), their
# kinds, ranges, allowed values and defaults read from the C++ field table's copy
# (config_schema.py); the app chooses its panels by "model" and draws labels from the rest.
KNOWN_MODELS = tuple(next(r for r in config_schema.fields("model") if r["name"] == "model")["allowed"])


def validate_model_config(model):
    """Checks a model description the way the app's ModelConfig::from_json does (the same field
    table, read from config_schema.json, and the same messages), so the app can read it (an
    unreadable one costs the session its model panels). Raises ValueError naming the field, as
    the C++ side words it."""
    if not isinstance(model, dict):
        raise ValueError("model config must be a JSON object, got %s" % type(model).__name__)
    m = config_schema.check("model", model)
    if m["dim"] % m["heads"]:
        raise ValueError("config field 'dim' = %d must be divisible by 'heads' = %d" % (m["dim"], m["heads"]))


# ------------------------------------------------------------------------------ values


def _is_torch_tensor(v):
    return type(v).__module__.startswith("torch") and hasattr(v, "detach")


def to_array(v):
    """A trace or checkpoint tensor as a numpy array (torch tensors are detached and copied to the CPU)."""
    if isinstance(v, np.ndarray):
        return v
    if _is_torch_tensor(v):
        from .pytorch import to_numpy
        return to_numpy(v)
    return np.asarray(v)


def json_value(v, where, _depth=0):
    """A metric value as JSON: numbers (numpy and torch scalars too), bools, strings, None,
    and lists/dicts of them. NaN and Inf become null, as the C++ writer stores them. Nested
    deeper than MAX_JSON_DEPTH levels (the record itself is one) is a ValueError: readers skip
    such a record."""
    if isinstance(v, (dict, list, tuple)) and _depth >= _guard.MAX_JSON_DEPTH:
        raise ValueError("metric '%s' nests deeper than %d levels (with the record); readers skip such a record: "
                         "log flatter values" % (where, _guard.MAX_JSON_DEPTH))
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, np.bool_):
        return bool(v)
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, numbers.Real):
        f = float(v)
        return f if math.isfinite(f) else None
    if isinstance(v, dict):
        return {str(k): json_value(x, where + "." + str(k), _depth + 1) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [json_value(x, "%s[%d]" % (where, i), _depth + 1) for i, x in enumerate(v)]
    if isinstance(v, np.ndarray) or _is_torch_tensor(v):
        a = to_array(v)
        if a.size == 1:
            return json_value(a.reshape(()).item(), where, _depth)
        return json_value(a.tolist(), where, _depth)
    raise TypeError("metric '%s' has a value of type %s; log numbers, strings, bools or lists/dicts of them"
                    % (where, type(v).__name__))


def dump_record(record):
    """A metrics record's bytes: compact JSON with sorted keys, as the C++ writer (nlohmann) makes it."""
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def _check_step(step):
    if isinstance(step, bool) or not isinstance(step, numbers.Integral) or not 0 <= step <= MAX_STEP:
        raise ValueError("step must be an integer 0..%d, got %r" % (MAX_STEP, step))
    return int(step)


# ------------------------------------------------------------------------------ the lock


def lock_session(path):
    """Takes the session's write lock: flock(2) LOCK_EX on the session directory itself, as
    core/io/session.h SessionWriteLock does, so a Python writer and `mnemoscope train` exclude
    each other. Returns the directory's fd (closing it releases the lock; so does the process
    ending, however it ends). SessionLockedError naming the folder when another process, or
    another writer in this one, holds it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as e:
        raise SessionError("%s: cannot open the session directory to lock it: %s" % (path, e.strerror or e)) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise SessionLockedError(
            "%s: another process is writing this session (a `mnemoscope train` of it still running, or its --resume, "
            "or another SessionWriter, in this process or another); wait for it to end, or stop it (close() the other "
            "SessionWriter), then run this again: two writers would interleave its checkpoints and metrics.log"
            % path) from None
    except OSError as e:
        os.close(fd)
        raise SessionError("%s: cannot lock the session directory: %s" % (path, e.strerror or e)) from None
    return fd


# What the format expects at each path a writer writes through (C++ Session::open refuses a
# link at any of them; a FIFO, a device or a folder where a file belongs is refused here too).
_WRITTEN_PATHS = (("checkpoints", "dir"), ("traces", "dir"), ("metrics.log", "file"), ("checkpoints/latest", "file"))


# ------------------------------------------------------------------------------ probe summary


def summarize_recording(segments, losses):
    """The dashboard scalars of a recording, as core/train/recorder.cpp summarize_recording
    computes them: mean probe loss, slot-type fractions, forgetting-norm quantiles, RMT block
    masses per layer, normalised bucket entropy per hashed module and table."""
    j = {}
    finite = [l for l in losses if l is not None and math.isfinite(l)]
    if finite:
        j["loss"] = float(sum(finite) / len(finite))
    types = [0, 0, 0]
    mass_sum, mass_n, counts = {}, {}, {}
    forget = None
    prefix = "rmt.block_mass."
    for tr in segments:
        if "memformer.slot_type" in tr:
            t = np.asarray(tr["memformer.slot_type"]).astype(np.int64).ravel()
            types[0] += int((t == 0).sum())
            types[1] += int((t == 1).sum())
            types[2] += int(((t != 0) & (t != 1)).sum())
        if "memformer.forget_norm" in tr:
            forget = np.asarray(tr["memformer.forget_norm"], dtype=np.float32).ravel()
        for key in sorted(k for k in tr if k.startswith(prefix)):
            layer = key[len(prefix):]
            m = np.asarray(tr[key], dtype=np.float64).reshape(-1, 3).mean(0)
            mass_sum[layer] = mass_sum.get(layer, np.zeros(3)) + m
            mass_n[layer] = mass_n.get(layer, 0) + 1
        for key in sorted(tr):
            if key.startswith("hash.") and key.endswith(".counts") and len(key) > len("hash.") + len(".counts"):
                path = key[len("hash."):-len(".counts")]
                c = np.asarray(tr[key], dtype=np.int64)
                counts[path] = counts[path] + c if path in counts else c.copy()
    total = sum(types)
    if total:
        j["slot_types"] = {"retain": types[0] / total, "mix": types[1] / total, "overwrite": types[2] / total}
    if forget is not None and forget.size:
        q = np.sort(forget.astype(np.float64))
        j["forget_norm"] = {name: float(np.quantile(q, p)) for name, p in
                            (("min", 0), ("p10", 0.1), ("p50", 0.5), ("p90", 0.9), ("max", 1))}
    if mass_sum:
        j["rmt_block_mass"] = {layer: [float(x) for x in mass_sum[layer] / mass_n[layer]] for layer in sorted(mass_sum)}
    if counts:
        ent = {}
        for path in sorted(counts):
            c = counts[path].astype(np.float64)
            r = c.shape[1]
            row = []
            for k in range(c.shape[0]):
                tot = c[k].sum()
                if tot > 0:
                    q = c[k][c[k] > 0] / tot
                    h = float(-(q * np.log(q)).sum())
                    row.append(h / math.log(r) if r > 1 else 1.0)
                else:
                    row.append(0.0)
            ent[path] = row
        j["hash_entropy"] = ent
    return j


def _first_non_finite(seg):
    for key in sorted(seg):
        a = seg[key]
        if a.dtype.kind == "f" and a.size and not np.isfinite(a).all():
            return key
    return ""


# ------------------------------------------------------------------------------ the writer


# The evaluation splits the app reads (core/train/run_log.h).
EVAL_SPLITS = ("train", "valid", "test")

class SessionWriter:
    """Writes a session directory that the app and `mnemoscope export` read.

    path        a new (or empty) directory; its parents are created
    config      any JSON-able dict, stored as the manifest's "config". Its "model" entry, when
                present, describes the model for the app (ModelConfig fields, e.g. {"model":
                "rmt", "slots": 8, "segment_len": 13, "dim": 64, "heads": 4, "layers": 2}): the
                app picks its panels by it, so it is checked here (unknown fields rejected).
    keep_last   checkpoints kept (older ones are deleted as new ones are written)
    segment_len tokens per probe segment for record() (default: config["model"]["segment_len"],
                else the L of input.tokens)
    """

    def __init__(self, path, config=None, keep_last=3, segment_len=None, _resume=False):
        self.path = os.fspath(path)
        if keep_last < 1:
            raise ValueError("keep_last must be >= 1, got %d" % keep_last)
        self.keep_last = keep_last
        if config is not None and not isinstance(config, dict):
            raise TypeError("config must be a dict (stored as the manifest's \"config\"), got %s" % type(config).__name__)
        self.config = config
        if config and isinstance(config, dict) and "model" in config:
            validate_model_config(config["model"])
        self.segment_len = segment_len
        self._log = None
        self._lock_fd = None
        if _resume:
            # Locked before anything is read or removed: a writer still running owns its temp files.
            self._lock_fd = lock_session(self.path)
            try:
                self.manifest = read_manifest(self.path)
                self._check_paths()
            except BaseException:
                self.close()
                raise
            return
        if config is not None and _guard.value_depth(config, _guard.MAX_JSON_DEPTH - 1):
            raise TypeError("config nests deeper than %d levels (with the manifest); readers refuse such a manifest"
                            % _guard.MAX_JSON_DEPTH)
        not_empty = SessionError("%s: directory exists and is not empty; pass a new directory (or SessionWriter.resume "
                                 "it)" % self.path)
        if os.path.exists(self.path) and not os.path.isdir(self.path):
            raise not_empty
        made = not os.path.exists(self.path)
        os.makedirs(self.path, exist_ok=True)
        try:
            # Locked before the folder is judged empty, so two writers starting together cannot
            # both find it so; a writer running in it is named as such.
            self._lock_fd = lock_session(self.path)
            if os.listdir(self.path):
                raise not_empty
        except BaseException:
            self.close()
            if made:
                try:
                    os.rmdir(self.path)
                except OSError:
                    pass
            raise
        manifest = {"kind": "python"}
        if config is not None:
            manifest["config"] = config
        manifest.update({
            "format_version": _version.FORMAT_MAJOR,
            "format_minor": _version.FORMAT_MINOR,
            "created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "program_version": _version.__version__,
            "writer": "mnemoscope Python package %s" % _version.__version__,
        })
        try:
            try:
                text = json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"
            except (TypeError, ValueError) as e:
                raise TypeError("config must be JSON-serialisable (numbers, strings, bools, None, lists, dicts): %s"
                                % e) from None
            os.makedirs(os.path.join(self.path, "checkpoints"), exist_ok=True)
            os.makedirs(os.path.join(self.path, "traces"), exist_ok=True)
            write_file_atomic(os.path.join(self.path, "manifest.json"), text.encode("utf-8"))
            self.manifest = manifest
            self._log = FramedLogWriter(os.path.join(self.path, "metrics.log"))
        except BaseException:
            self.close()
            raise

    def _check_paths(self):
        """Refuses, as C++ Session::open does for writing, a symbolic link at any path this writer
        writes through (checkpoints/, traces/, metrics.log, checkpoints/latest): writing or
        truncating there would change a file outside the session. Also refuses anything of
        another kind than the format expects there (a FIFO, a device, a folder where a file
        belongs, a file where a folder belongs). SessionError naming the path and the fix."""
        for rel, want in _WRITTEN_PATHS:
            why = outside_session(self.path, rel)
            if why:
                raise SessionError("%s: %s; a session writes only inside its directory: replace the link by the "
                                   "real %s, or write a new session" % (self.path, why,
                                                                       "folder" if want == "dir" else "file"))
            why = wrong_kind(self.path, rel, want)
            if why:
                raise SessionError("%s: %s; a session holds only %s there: remove or rename it, or write a new "
                                   "session" % (self.path, why, "a folder" if want == "dir" else "a regular file"))

    def _check_open(self, what):
        if self._lock_fd is None:
            raise SessionError("%s: cannot %s: this SessionWriter is closed (SessionWriter.resume(path, step) writes "
                               "to the session again)" % (self.path, what))

    @classmethod
    def resume(cls, path, step, keep_last=3, segment_len=None):
        """Continues writing an interrupted session (as `mnemoscope train --resume` does): checks
        its format version, removes temp files a crash left, cuts a torn tail off metrics.log and
        appends {"type": "resume", "step": step}, so readers drop the records of later steps
        written before the crash. Returns (writer, what was repaired: "" when the log was clean)."""
        step = _check_step(step)
        w = cls(path, None, keep_last, segment_len, _resume=True)  # locked, its paths checked
        try:
            w.config = w.manifest.get("config")
            os.makedirs(os.path.join(w.path, "checkpoints"), exist_ok=True)
            os.makedirs(os.path.join(w.path, "traces"), exist_ok=True)
            w.remove_stale_temp_files()
            log = os.path.join(w.path, "metrics.log")
            w._log = FramedLogWriter(log)  # O_NOFOLLOW, a regular file: what is cut below is the session's
            r = read_framed_log(log)
            repaired = ""
            if r.stop_reason:  # gaps in the middle stay: readers skip them
                try:
                    os.ftruncate(w._log._fd, r.good_bytes)
                except OSError as e:
                    raise LogError("%s: cannot cut the damaged tail (%s); copy the session and retry"
                                   % (log, e.strerror or e)) from None
                repaired = "metrics.log: dropped %d damaged bytes after byte %d (%s)" % (
                    r.file_bytes - r.good_bytes, r.good_bytes, r.stop_reason)
            w.log_record({"type": "resume", "step": step}, sync=True)
        except BaseException:
            w.close()
            raise
        return w, repaired

    def remove_stale_temp_files(self):
        """Removes temp files left by an interrupted write; returns how many."""
        removed = 0
        for sub in ("", "checkpoints", "traces"):
            if sub and outside_session(self.path, sub):
                continue  # a link out of the session: what is there is not the session's
            d = os.path.join(self.path, sub)
            try:
                names = os.listdir(d)
            except OSError:
                continue
            for n in names:
                if len(n) > 1 and n[0] == "." and ".tmp-" in n:
                    try:
                        os.unlink(os.path.join(d, n))
                        removed += 1
                    except OSError:
                        pass
        return removed

    # --- metrics

    def log_record(self, record, sync=False):
        """Appends one JSON record (a dict with a "type") to metrics.log; NaN/Inf are stored as null.
        A record readers would leave out of the history (mnemoscope.session.record_problem: e.g. a
        step record whose "step" is not an integer 0..2^63-1) is a ValueError, and nothing is written."""
        if not isinstance(record, dict) or not isinstance(record.get("type"), str):
            raise ValueError("a metrics record is a dict with a string \"type\" (step, eval, probe, resume, error, ...)")
        rec = json_value(record, "record")
        why = record_problem(rec)
        if why:
            raise ValueError("log_record(): readers would skip this record: %s" % why)
        self._append(dump_record(rec), sync)

    def _append(self, payload, sync):
        self._check_open("append to metrics.log")
        self._log.append(payload, sync)

    def log(self, step, sync=False, **metrics):
        """A {"type": "step"} record: what the app's dashboard plots over training. The fields it
        draws: loss, accuracy, lr, grad_norm, tokens_per_s, peak_rss_mib (any others are stored
        and readable from Python). NaN/Inf values are stored as null and drawn as red markers."""
        if "type" in metrics:
            raise ValueError("log(): 'type' is set by the method; use log_record() for records of another type")
        rec = {"type": "step", "step": _check_step(step)}
        rec.update({k: json_value(v, k, 1) for k, v in metrics.items()})
        self._append(dump_record(rec), sync)

    def log_eval(self, step, split="valid", sync=False, zero_memory=False, final=False, **metrics):
        """A {"type": "eval", "split": split} record (docs/formats.md#sessions). The dashboard draws
        the valid loss and accuracy as curves, zero_memory=True ones (the same evaluation with the
        memory zeroed between segments) as "valid, memory zeroed"; final=True marks the end-of-run
        evaluations, shown in the dashboard's "final" line and export's final_evaluation.csv."""
        if "type" in metrics:
            raise ValueError("log_eval(): 'type' is set by the method")
        if split not in EVAL_SPLITS:
            hint = ""
            if isinstance(split, str) and "zero" in split:
                hint = "; an evaluation with the memory zeroed is log_eval(step, split=\"valid\", zero_memory=True)"
            raise ValueError("log_eval(): split must be one of %s, got %r%s" % (", ".join(EVAL_SPLITS), split, hint))
        rec = {"type": "eval", "step": _check_step(step), "split": split}
        if zero_memory:
            rec["zero_memory"] = True
        if final:
            rec["final"] = True
        rec.update({k: json_value(v, k, 1) for k, v in metrics.items()})
        self._append(dump_record(rec), sync)

    # --- probe recordings

    def _segment_len(self, segment_len, segments):
        if segment_len is not None:
            return segment_len
        if self.segment_len is not None:
            return self.segment_len
        cfg = self.config if isinstance(self.config, dict) else {}
        model = cfg.get("model") if isinstance(cfg.get("model"), dict) else {}
        if isinstance(model.get("segment_len"), int):
            return model["segment_len"]
        for seg in segments:
            if "input.tokens" in seg and seg["input.tokens"].ndim == 2:
                return int(seg["input.tokens"].shape[1])
        raise ValueError("record(): cannot tell the segment length; pass segment_len=, set it in "
                         "SessionWriter(segment_len=...) or config[\"model\"][\"segment_len\"], or trace input.tokens")

    def record(self, step, probe_doc, traces_by_segment, segment_len=None, loss=None):
        """Writes traces/step-N.safetensors, the probe recording of training step `step`, and
        appends its {"type": "probe"} summary record (core/train/recorder.h, docs/formats.md).

        probe_doc          the probe document: str (UTF-8), bytes, or token ids 0..255; the app
                           shows one token per byte
        traces_by_segment  one dict {canonical trace key: array} per segment (numpy arrays or
                           torch tensors, batch first; mnemoscope.pytorch turns model tensors
                           into these keys); len == ceil(len(document) / segment_len)
        loss               per-segment probe loss (None entries allowed), or None
        Keys, dtypes and shapes are checked (mnemoscope.keys) before anything is written."""
        step = _check_step(step)
        self._check_open("record")
        if isinstance(probe_doc, str):
            doc = probe_doc.encode("utf-8")
        elif isinstance(probe_doc, (bytes, bytearray)):
            doc = bytes(probe_doc)
        else:
            ids = to_array(probe_doc).ravel()
            if ids.dtype.kind not in "iu" or (ids.size and (ids.min() < 0 or ids.max() > 255)):
                raise ValueError("record(): probe_doc as token ids must be integers 0..255 (one byte each); "
                                 "pass the document as str or bytes instead")
            doc = bytes(ids.astype(np.uint8).tolist())
        if not doc:
            raise ValueError("record(): the probe document is empty")
        if isinstance(traces_by_segment, dict):
            traces_by_segment = [traces_by_segment[i] for i in sorted(traces_by_segment)]
        segments = []
        for i, seg in enumerate(traces_by_segment):
            if not isinstance(seg, dict):
                raise TypeError("record(): segment %d is a %s; each segment is a dict {trace key: tensor}"
                                % (i, type(seg).__name__))
            out = {}
            for key, v in seg.items():
                if not isinstance(key, str):
                    raise TraceKeyError("record(): segment %d has a key %r that is not a string" % (i, key))
                try:
                    out[key] = coerce(key, to_array(v))
                except TraceKeyError as e:
                    raise TraceKeyError("record(): segment %d: %s" % (i, e)) from None
            validate_segment(out, "record(): segment %d" % i)
            segments.append(out)
        seg_len = self._segment_len(segment_len, segments)
        if isinstance(seg_len, bool) or not isinstance(seg_len, int) or seg_len < 1:
            raise ValueError("record(): segment_len must be a positive integer, got %r" % (seg_len,))
        n = (len(doc) + seg_len - 1) // seg_len
        if len(segments) != n:
            raise ValueError("record(): %d segments of traces for a probe document of %d bytes in segments of %d "
                             "tokens: it has %d segments" % (len(segments), len(doc), seg_len, n))
        for i, seg in enumerate(segments):
            if "input.tokens" in seg and seg["input.tokens"].shape[1] < min(seg_len, len(doc) - i * seg_len):
                raise TraceKeyError("record(): segment %d: input.tokens has %d tokens, fewer than the segment's %d"
                                    % (i, seg["input.tokens"].shape[1], min(seg_len, len(doc) - i * seg_len)))
        if loss is None:
            losses = [None] * n
        else:
            losses = [None if l is None else float(to_array(l).reshape(())) for l in loss]
            if len(losses) != n:
                raise ValueError("record(): %d losses for %d segments" % (len(losses), n))
        tensors = [("probe.ids", np.frombuffer(doc, dtype=np.uint8).astype(np.int64)),
                   ("probe.bytes", np.frombuffer(doc, dtype=np.uint8))]
        for i, seg in enumerate(segments):
            for key in sorted(seg):
                tensors.append(("s%d/%s" % (i, key), seg[key]))
        probe = {"segments": n, "segment_len": seg_len,
                 "loss": [l if l is not None and math.isfinite(l) else None for l in losses],
                 "non_finite": [_first_non_finite(seg) for seg in segments]}
        meta = {"probe": json.dumps(probe, sort_keys=True, separators=(",", ":")), "step": str(step)}
        path = os.path.join(self.path, "traces", step_name(step))
        self._check_paths()  # a link made since the writer opened is not written through either
        save_safetensors(path, tensors, meta)
        summary = summarize_recording(segments, losses)
        summary.update({"type": "probe", "step": step})
        self.log_record(summary)
        return path

    # --- checkpoints

    def checkpoint(self, step, state_dict, metadata=None):
        """Writes checkpoints/step-N.safetensors (tensors by name: a model's state_dict, numpy
        arrays) atomically, then `latest`, then deletes all but the newest keep_last."""
        step = _check_step(step)
        self._check_open("write a checkpoint")
        meta = {"format": "mnemoscope-python-checkpoint", "program_version": _version.__version__}
        for k, v in (metadata or {}).items():
            meta[str(k)] = v if isinstance(v, str) else json.dumps(v)
        meta["step"] = str(step)
        items = list(state_dict.items()) if hasattr(state_dict, "items") else list(state_dict)
        path = os.path.join(self.path, "checkpoints", step_name(step))
        self._check_paths()  # a link made since the writer opened is not written through either
        save_safetensors(path, items, meta)
        write_file_atomic(os.path.join(self.path, "checkpoints", "latest"), (step_name(step) + "\n").encode())
        steps = steps_in(os.path.join(self.path, "checkpoints"))
        for s in steps[:max(0, len(steps) - self.keep_last)]:
            if s != step:
                try:
                    os.unlink(os.path.join(self.path, "checkpoints", step_name(s)))
                except OSError:
                    pass
        return path

    def close(self):
        """Closes metrics.log and releases the session's write lock (idempotent)."""
        if getattr(self, "_log", None) is not None:
            self._log.close()
        fd = getattr(self, "_lock_fd", None)
        if fd is not None:
            self._lock_fd = None
            os.close(fd)  # closing the only descriptor releases the flock

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
