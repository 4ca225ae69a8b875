"""Reading a Mnemoscope session directory (docs/formats.md "Sessions", core/io/session.h):

    manifest.json   format version, config, creation time, program version
    metrics.log     framed JSON records (mnemoscope.framed_log): step, eval, probe, resume, error
    traces/         step-NNNNNNNNN.safetensors probe recordings (canonical trace keys per segment)
    checkpoints/    step-NNNNNNNNN.safetensors and `latest`, the newest good one

Everything here only reads: a session that `mnemoscope train` or a SessionWriter is still
writing can be opened, read and followed safely.
"""

import json
import math
import os
import re
import stat as _stat
import time
import warnings
from dataclasses import dataclass

import numpy as np

from . import _guard, _version
from .errors import FormatVersionError, MetricsWarning, RecordingError, SafetensorsError, SessionError, TraceKeyError
from .framed_log import LogError, LogGap, read_framed_log
from .keys import check_stored
from .safetensors import load_safetensors

_STEP_FILE = re.compile(r"^step-(\d+)\.safetensors$")


def step_name_in(name, steps):
    """The step of `steps` whose file name is `name`, else None."""
    for s in steps:
        if step_name(s) == name:
            return s
    return None


def step_name(step):
    """File name of a checkpoint or recording: step-%09d.safetensors."""
    return "step-%09d.safetensors" % step


def outside_session(root, rel):
    """"" when root/rel (names joined by '/') can be read without leaving `root`: no component
    below it is a symbolic link (a missing one is fine). Else why not, in the words of
    outside_session in core/io/session_manifest.h (docs/reliability.md#sessions)."""
    if not rel or rel.startswith("/"):
        return "'%s' is not a path inside the session" % rel
    parts = rel.split("/")
    path = os.fspath(root)
    for i, part in enumerate(parts):
        if part in ("", ".", ".."):
            return "'%s' is not a path inside the session" % rel
        path = os.path.join(path, part)
        try:
            st = os.lstat(path)
        except OSError:
            return ""
        if _stat.S_ISLNK(st.st_mode):
            return "'%s' is a symbolic link; a session reads only files inside its directory" % "/".join(parts[:i + 1])
    return ""


def wrong_kind(root, rel, want="file"):
    """"" when root/rel is missing or of the kind the format expects there (want: "file", a
    regular file, or "dir"); else why not: "'metrics.log' is a FIFO (named pipe), not a regular
    file". Opening a FIFO for reading would block; a directory or a device is no session file."""
    kind = _guard.lstat_kind(os.path.join(os.fspath(root), rel))
    if kind is None or kind == "a symbolic link":  # links: outside_session's words
        return ""
    if want == "dir":
        return "" if kind == "a directory" else "'%s' is %s, not a directory" % (rel, kind)
    return "" if kind == "a regular file" else "'%s' is %s, not a regular file" % (rel, kind)


def _check_inside(root, rel):
    why = outside_session(root, rel)
    if why:
        raise SessionError("%s: %s; copy the real file into the session" % (os.fspath(root), why))
    why = wrong_kind(root, rel)
    if why:
        raise SessionError("%s: %s; a session reads only regular files" % (os.fspath(root), why))


def steps_in(directory):
    """Steps of the files named exactly step-<N>.safetensors in `directory`, ascending; symbolic
    links (and everything, when `directory` is one) are left out, as the C++ reader does."""
    if os.path.islink(directory):
        return []
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    out = []
    for n in names:
        m = _STEP_FILE.match(n)
        if m and n == step_name(int(m.group(1))) and not os.path.islink(os.path.join(directory, n)):
            out.append(int(m.group(1)))
    return sorted(out)


# ------------------------------------------------------------------------------ format version


def check_format(manifest, where):
    """Checks manifest.json's format version like core/io/session.cpp (check_session_format):
    a newer major version is rejected with a FormatVersionError naming both versions; a newer
    minor version of the same major one is accepted. Returns (major, minor)."""
    if not isinstance(manifest, dict):
        raise SessionError("%s: manifest is not a JSON object" % where)
    major = manifest.get("format_version")
    if isinstance(major, bool) or not isinstance(major, int) or major < 1:
        raise SessionError("%s: manifest has no format_version (a positive integer: the session format's major "
                           "version); it was not written by mnemoscope or its Python package" % where)
    minor = 0
    if "format_minor" in manifest:
        minor = manifest["format_minor"]
        if isinstance(minor, bool) or not isinstance(minor, int) or minor < 0:
            raise SessionError("%s: manifest's format_minor %s is not a non-negative integer"
                               % (where, json.dumps(manifest["format_minor"], separators=(",", ":"))))
    if major > _version.FORMAT_MAJOR:
        raise FormatVersionError(
            "%s: session format version %d.%d is newer than the %d.%d this reader supports (mnemoscope Python "
            "package %s); update mnemoscope to read it" % (where, major, minor, _version.FORMAT_MAJOR,
                                                           _version.FORMAT_MINOR, _version.__version__))
    return major, minor


def _reject_constant(c):
    raise ValueError("%s is not JSON" % c)


def _finite_float(text):
    # The C++ reader (nlohmann::json) refuses a number too large for a double ("1e999").
    v = float(text)
    if math.isinf(v):
        raise ValueError("number overflow parsing '%s'" % text)
    return v


def _checked_int(text):
    v = int(text)
    if v >= 2 ** 64 or v < -(2 ** 63):
        _finite_float(text)  # C++ keeps it as a double, if one can hold it
    return v


def _loads(text):
    """Strict JSON as the C++ readers parse it: no NaN/Infinity, no number a double cannot hold;
    nested at most MAX_JSON_DEPTH levels (deeper is a JsonDepthError, a ValueError)."""
    return _guard.loads(text, parse_constant=_reject_constant, parse_float=_finite_float, parse_int=_checked_int)


def parse_json_record(payload):
    """A metrics record as the C++ reader parses it (strict JSON: no NaN/Infinity, UTF-8)."""
    return _loads(payload.decode("utf-8"))


MAX_MANIFEST_BYTES = 1 << 20  # kMaxManifestBytes (core/io/session_manifest.h)


def read_manifest(directory):
    directory = os.fspath(directory)
    mpath = os.path.join(directory, "manifest.json")
    _check_inside(directory, "manifest.json")
    try:
        with os.fdopen(_guard.open_regular(mpath), "rb") as f:  # a FIFO put there would block a plain open
            text = f.read(MAX_MANIFEST_BYTES + 1)  # at most one byte past the cap
    except _guard.NotRegularFile as e:
        raise SessionError("%s: 'manifest.json' %s; a session reads only regular files" % (directory, e.why)) from None
    except OSError:
        raise SessionError("%s: not a session (no readable manifest.json); pass a session directory" % directory) from None
    if len(text) > MAX_MANIFEST_BYTES:
        raise SessionError("%s: manifest is larger than the limit of %d bytes; it is not a session manifest"
                           % (mpath, MAX_MANIFEST_BYTES))
    try:
        m = _loads(text.decode("utf-8"))
    except ValueError as e:
        raise SessionError("%s: manifest is not valid JSON (%s)" % (mpath, e)) from None
    check_format(m, mpath)
    return m


# ------------------------------------------------------------------------------ metrics


def _step_of(r):
    """The record's step as the C++ reader takes it (step_of in core/train/run_log.cpp): a JSON
    integer as an int64 (2^63..2^64-1 wrap to negative, as nlohmann's get<int64_t> does), -1
    for anything else."""
    s = r.get("step") if isinstance(r, dict) else None
    if not isinstance(s, int) or isinstance(s, bool) or not -2 ** 63 <= s < 2 ** 64:
        return -1
    return s - 2 ** 64 if s >= 2 ** 63 else s


RECORD_TYPES = ("step", "eval", "probe", "error")
# Record types whose "step" places them in the history (docs/training.md "Output").
STEPPED_TYPES = ("step", "eval", "probe", "error", "curriculum", "resume")
MAX_STEP = 2 ** 63 - 1


def _show(v):
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


def record_problem(r):
    """Why a parsed metrics record cannot join the history ("" when it can): not an object, a
    "type" that is not a string, or for the types placed by their step (STEPPED_TYPES) a "step"
    that is not an integer 0..2^63-1; an eval's "split" that is not a string, a "final" or
    "zero_memory" (and a step record's "non_finite") that is not true or false. A record with
    a problem is skipped and reported (Metrics.invalid), never applied: a {"type": "resume",
    "step": -1} would otherwise drop the whole history."""
    if not isinstance(r, dict):
        return "the record is %s, not a JSON object" % _show(r)[:40]
    t = r.get("type")
    if "type" in r and not isinstance(t, str):
        return "field 'type' is %s, not a string" % _show(t)[:40]
    if t not in STEPPED_TYPES:
        return ""
    if "step" not in r:
        return "a %s record without a field 'step'" % t
    s = r["step"]
    if isinstance(s, bool) or not isinstance(s, int) or not 0 <= s <= MAX_STEP:
        return "field 'step' is %s, not a step number (an integer 0..%d)" % (_show(s)[:40], MAX_STEP)
    if t == "eval" and "split" in r and not isinstance(r["split"], str):
        return "field 'split' is %s, not a string" % _show(r["split"])[:40]
    for k in (("final", "zero_memory") if t == "eval" else ("non_finite",) if t == "step" else ()):
        if k in r and not isinstance(r[k], bool):
            return "field '%s' is %s, not true or false" % (k, _show(r[k])[:40])
    return ""


@dataclass
class InvalidRecord:
    """A checksummed JSON record the history leaves out (record_problem): where its frame starts
    (None when not known), the record, and why."""
    offset: object
    record: object
    reason: str

    def describe(self):
        at = "the record at byte %d" % self.offset if self.offset is not None else "a record"
        return "skipped %s: %s" % (at, self.reason)


@dataclass
class Column:
    """One metric over training: `step` (int64), `value` (float64; NaN where the log has null —
    a NaN or Inf that was logged — or a non-number), `non_finite` (bool: the log has null there,
    i.e. the value was NaN or Inf when it was written)."""
    name: str
    step: np.ndarray
    value: np.ndarray
    non_finite: np.ndarray

    def __len__(self):
        return len(self.step)

    def __array__(self, dtype=None):
        return self.value if dtype is None else self.value.astype(dtype)

    @property
    def non_finite_steps(self):
        """Steps whose value was NaN/Inf when logged."""
        return self.step[self.non_finite]

    def finite(self):
        """(step, value) of the finite points only."""
        ok = np.isfinite(self.value)
        return self.step[ok], self.value[ok]

    def __repr__(self):
        return "Column(%r, %d points, %d non-finite)" % (self.name, len(self.step), int(self.non_finite.sum()))


def _flatten(prefix, v, out):
    if isinstance(v, dict):
        for k, x in v.items():
            _flatten(prefix + "." + k if prefix else k, x, out)
    elif isinstance(v, list):
        for i, x in enumerate(v):
            _flatten("%s[%d]" % (prefix, i), x, out)
    else:
        out[prefix] = v


def _get_path(r, name):
    """The value at a flattened field name ("loss", "slot_types.retain", "rmt_block_mass.0[1]"), or KeyError."""
    flat = {}
    _flatten("", r, flat)
    return flat[name]


def _num(v):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return math.nan
    return float(v)


class Metrics:
    """metrics.log read like the C++ run log (core/train/run_log.h): records by type in step
    order, with a "resume" record dropping the step/eval/probe/error records of later steps
    written before it (the steps a crash lost and the resumed run does again).

    records     every record read, in file order
    invalid     the records left out of the history (InvalidRecord: offset, record, reason): a
                step that is not an integer 0..2^63-1, a field of the wrong type (record_problem)
    steps, evals, probes, errors   the records of each type after resumes, in step order
    read        what the reader met (good_bytes, file_bytes, clean, gaps, stop_reason)
    gaps        damaged ranges skipped (MetricsGap: bytes, reason, the steps around them)
    column(name, type="step", split=None, final=None, zero_memory=False) -> Column; metrics["loss"] is column("loss")
    columns(type="step") -> {name: Column} for every numeric field (nested ones flattened:
                "slot_types.retain", "rmt_block_mass.0[1]")
    """

    def __init__(self, records, read):
        self.records = records
        self.read = read
        self.gaps = []
        self.by_type = {}
        self.resumes = 0
        self.invalid = []
        offsets = list(getattr(read, "offsets", None) or [])
        for i, r in enumerate(records):
            why = record_problem(r)
            if why:
                self.invalid.append(InvalidRecord(offsets[i] if i < len(offsets) else None, r, why))
                continue
            self._apply(r)
        if self.invalid and read is not None:
            read.clean = False

    def _apply(self, r):
        """One record, as apply_run_record does; True when a resume dropped records."""
        if not isinstance(r, dict):
            return False
        t = r.get("type")
        t = t if isinstance(t, str) else ""
        if t == "resume":
            s = _step_of(r)
            before = sum(len(v) for v in self.by_type.values())
            for k in self.by_type:
                self.by_type[k] = [x for x in self.by_type[k] if _step_of(x) <= s]
            self.resumes += 1
            return sum(len(v) for v in self.by_type.values()) != before
        lst = self.by_type.setdefault(t, [])
        # Records arrive in step order; an out-of-order one is placed stably.
        s = _step_of(r)
        i = len(lst)
        while i > 0 and _step_of(lst[i - 1]) > s:
            i -= 1
        lst.insert(i, r)
        return False

    @property
    def clean(self):
        return self.read.clean

    @property
    def stop_reason(self):
        return self.read.stop_reason

    @property
    def steps(self):
        return self.by_type.get("step", [])

    @property
    def evals(self):
        return self.by_type.get("eval", [])

    @property
    def probes(self):
        return self.by_type.get("probe", [])

    @property
    def errors(self):
        return self.by_type.get("error", [])

    @property
    def types(self):
        return sorted(k for k, v in self.by_type.items() if v)

    def of_type(self, type):
        return self.by_type.get(type, [])

    def last_step(self):
        """Highest step of any step/eval/probe/error record (-1 when none)."""
        return max([_step_of(r) for t in RECORD_TYPES for r in self.of_type(t)], default=-1)

    def _select(self, type, split, final, zero_memory=False):
        out = []
        for r in self.of_type(type):
            if split is not None and r.get("split") != split:
                continue
            if final is not None and bool(r.get("final", False)) != final:
                continue
            # Evaluations with the memory zeroed (the ablation run beside every evaluation) are
            # a curve of their own, as in the C++ reader: left out unless asked for.
            if zero_memory is not None and bool(r.get("zero_memory", False)) != zero_memory:
                continue
            out.append(r)
        return out

    def fields(self, type="step"):
        """Flattened field names of the records of `type` (sorted), "type" and "step" left out."""
        names = set()
        for r in self.of_type(type):
            flat = {}
            _flatten("", r, flat)
            names.update(flat)
        return sorted(names - {"type", "step"})

    def column(self, name, type="step", split=None, final=None, zero_memory=False):
        """The records of `type` (and `split`, and final / not final when given) that have field
        `name`, as a Column. Evaluations with the memory zeroed are left out (zero_memory=True:
        only those; None: both). KeyError listing the fields there are when none has it."""
        steps, values, bad = [], [], []
        recs = self._select(type, split, final, zero_memory)
        for r in recs:
            try:
                v = r[name] if name in r else _get_path(r, name)
            except KeyError:
                continue
            steps.append(_step_of(r))
            values.append(_num(v))
            bad.append(v is None)
        if not steps and not any(name in r for r in recs):
            raise KeyError("no %s record has a field '%s'; fields: %s" % (
                type, name, ", ".join(self.fields(type)) or "(none)"))
        return Column(name, np.array(steps, dtype=np.int64), np.array(values, dtype=np.float64),
                      np.array(bad, dtype=bool))

    def columns(self, type="step", split=None, final=None, zero_memory=False):
        """Every field of the records of `type` that holds numbers (or null) as a Column
        (zero_memory as in column())."""
        out = {}
        recs = self._select(type, split, final, zero_memory)
        flat_recs = []
        for r in recs:
            flat = {}
            _flatten("", r, flat)
            flat_recs.append(flat)
        names = sorted(set().union(*[set(f) for f in flat_recs]) - {"type", "step"}) if flat_recs else []
        for n in names:
            vals = [f[n] for f in flat_recs if n in f]
            if not any(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
                continue
            steps = [_step_of(r) for r, f in zip(recs, flat_recs) if n in f]
            out[n] = Column(n, np.array(steps, dtype=np.int64), np.array([_num(v) for v in vals], dtype=np.float64),
                            np.array([v is None for v in vals], dtype=bool))
        return out

    def __getitem__(self, name):
        return self.column(name)

    def __contains__(self, name):
        return name in self.fields("step")

    @property
    def non_finite_steps(self):
        """Steps of the step records marked non_finite (a NaN/Inf loss or gradient stopped training there)."""
        return np.array([_step_of(r) for r in self.steps if r.get("non_finite") is True], dtype=np.int64)

    def __repr__(self):
        return "Metrics(%d records: %s%s)" % (
            len(self.records), ", ".join("%d %s" % (len(self.of_type(t)), t) for t in self.types),
            "".join("; " + g.describe() for g in self.gaps)
            + ("; stops early: " + self.stop_reason if self.stop_reason else ""))


def parse_failure(e):
    """The gap reason of a checksummed record parse_json_record refused."""
    if isinstance(e, _guard.JsonDepthError):
        return "record nests deeper than %d levels" % _guard.MAX_JSON_DEPTH
    return "record is not valid JSON"


def parse_records(raw_records, offsets=None):
    """Parses framed-log payloads like Session::read_metrics: a checksummed record that is not
    valid JSON is skipped and becomes a gap ("record is not valid JSON") over its frame's bytes,
    and so does one nested deeper than MAX_JSON_DEPTH ("record nests deeper than 64 levels").
    Returns (records, their offsets, the gaps of records that are not JSON)."""
    out, kept, gaps = [], [], []
    offsets = list(offsets) if offsets is not None else [None] * len(raw_records)
    for rec, off in zip(raw_records, offsets):
        try:
            out.append(parse_json_record(rec))
            kept.append(off)
        except ValueError as e:
            if off is not None:
                gaps.append(LogGap(off, off + 12 + len(rec), parse_failure(e)))
    return out, kept, gaps


@dataclass
class MetricsGap:
    """A damaged range of metrics.log the reader skipped, between the training steps of the
    records around it (MetricsGap in core/train/run_log.h)."""
    begin: int
    end: int
    reason: str
    step_before: int = -1  # step of the last record before it (-1: none)
    step_after: int = -1   # step of the first record after it (-1: none)

    def describe(self):
        """As describe_gap in core/train/run_log.h (and `mnemoscope export`, and the dashboard)."""
        if self.step_before >= 0 and self.step_after >= 0:
            where = " between step %d and step %d" % (self.step_before, self.step_after)
        elif self.step_before >= 0:
            where = " after step %d" % self.step_before
        elif self.step_after >= 0:
            where = " before step %d" % self.step_after
        else:
            where = ""
        return "skipped bytes %d-%d of metrics.log (%s)%s" % (self.begin, self.end, self.reason, where)


def place_gaps(records, offsets, gaps, last_step=-1, placed=None):
    """MetricsGaps for `gaps` between the steps of the records (in file order, at `offsets`)
    around them, as the C++ run log places them. `placed`: earlier gaps still waiting for a
    step after them (a follower's). Returns (gaps, step of the last record with a step)."""
    placed = placed if placed is not None else []
    gaps = sorted(gaps, key=lambda g: g.begin)
    g = 0
    for rec, off in zip(records, offsets):
        while g < len(gaps) and gaps[g].begin < off:
            placed.append(MetricsGap(gaps[g].begin, gaps[g].end, gaps[g].reason, last_step))
            g += 1
        st = _step_of(rec) if rec is not None else -1
        if st < 0:
            continue
        last_step = st
        for mg in reversed(placed):
            if mg.step_after >= 0:
                break
            mg.step_after = st
    for lg in gaps[g:]:
        placed.append(MetricsGap(lg.begin, lg.end, lg.reason, last_step))
    return placed, last_step


def read_metrics(path, warn=True):
    """metrics.log at `path` as Metrics. Damage in the middle (and a record that is not JSON) is
    skipped and listed in `gaps`, each named by its bytes and the steps around it; a tail that
    does not form a record is named in stop_reason. Each is warned about (MetricsWarning) in the
    words `mnemoscope export` uses."""
    r = read_framed_log(path)
    records, offsets, bad = parse_records(r.records, r.offsets)
    if bad:
        r.clean = False
        r.gaps = sorted(r.gaps + bad, key=lambda g: g.begin)
    r.offsets = offsets
    r.records = []
    m = Metrics(records, r)
    m.gaps, _ = place_gaps(records, offsets, r.gaps)
    if warn:
        for g in m.gaps:
            warnings.warn("%s: %s; the records after it were read" % (path, g.describe()), MetricsWarning, stacklevel=3)
        for x in m.invalid:
            warnings.warn("%s: %s; the records around it were read" % (path, x.describe()), MetricsWarning,
                          stacklevel=3)
        if r.stop_reason:
            warnings.warn("%s: stops at byte %d of %d (%s); reading the %d records before it"
                          % (path, r.good_bytes, r.file_bytes, r.stop_reason, len(records)), MetricsWarning,
                          stacklevel=3)
    return m


# ------------------------------------------------------------------------------ recordings


_STOLL = re.compile(r"^[ \t\n\v\f\r]*([+-]?[0-9]+)")


def _stoll(s):
    """std::stoll: the leading integer of `s` (leading blanks allowed, trailing text ignored)."""
    m = _STOLL.match(s)
    if not m:
        raise ValueError("no integer")
    v = int(m.group(1))
    if not -2**63 <= v < 2**63:
        raise ValueError("out of range")
    return v


class Recording:
    """A probe recording (traces/step-N.safetensors, core/train/recorder.h): the probe document
    and, for each of its segments, the traced tensors by canonical key.

    step          training step it was recorded at (-1 when the file does not say)
    segment_len   tokens per segment
    document      the probe document's bytes (one token per byte); text: decoded for display
    ids           probe.ids (token ids) when present
    segments      list, one dict {canonical key: numpy array} per segment; rec[i] is segments[i]
    loss          per-segment probe loss (NaN where none), non_finite: first NaN/Inf key per segment ("" none)
    token_range(i) -> (first token, length) of segment i
    stack(key)    the key's arrays of every segment that has it, stacked on a new first axis
    """

    def __init__(self, path, validate=True):
        self.path = os.fspath(path)
        f = load_safetensors(self.path)
        self.tensors = f
        self.metadata = f.metadata
        self._read(f, validate)

    def _fail(self, what):
        return RecordingError("recording '%s' %s; it was not written by `mnemoscope train` or a Python SessionWriter "
                              "(record it again, or pick another step)" % (self.path, what))

    def _read(self, f, validate):
        meta = f.metadata
        if "probe" not in meta:
            raise self._fail('has no "probe" metadata')
        try:
            probe = _loads(meta["probe"])
        except ValueError as e:
            raise self._fail('has unreadable "probe" metadata (%s)' % e) from None
        self.probe = probe
        self.step = -1
        if "step" in meta:
            try:
                self.step = _stoll(meta["step"])
            except ValueError:
                raise self._fail("has a bad \"step\" metadata value '%s'" % meta["step"]) from None
        def is_int(v):
            return isinstance(v, int) and not isinstance(v, bool)
        if not isinstance(probe, dict) or not is_int(probe.get("segments")) or not is_int(probe.get("segment_len")):
            raise self._fail('has "probe" metadata without segments / segment_len')
        n = probe["segments"]
        self.segment_len = probe["segment_len"]
        if n < 1 or n > 1000000 or self.segment_len < 1:
            raise self._fail("has absurd probe sizes")
        b = f.tensors.get("probe.bytes")
        if b is None or f.dtypes.get("probe.bytes") != "U8" or b.ndim != 1:
            raise self._fail("has no probe.bytes [N] uint8 tensor")
        self.document = b.tobytes()
        if len(self.document) == 0:
            raise self._fail("has an empty probe document")
        expect = (len(self.document) + self.segment_len - 1) // self.segment_len
        if expect != n:
            raise self._fail("says %d segments but its probe document has %d segments of %d"
                             % (n, expect, self.segment_len))
        self.ids = f.tensors.get("probe.ids")
        segs = [dict() for _ in range(n)]
        for k in sorted(f.tensors):  # the C++ reader walks a std::map: sorted names
            if len(k) < 3 or k[0] != "s":
                continue
            slash = k.find("/")
            if slash < 2:
                continue
            try:
                i = _stoll(k[1:slash])
            except ValueError:
                raise self._fail("has a tensor with a bad segment name '%s'" % k) from None
            if i < 0 or i >= n:
                raise self._fail("has a tensor '%s' for a segment outside 0..%d" % (k, n - 1))
            segs[i][k[slash + 1:]] = f.tensors[k]
        self.segments = segs
        losses = probe.get("loss") if isinstance(probe.get("loss"), list) else []
        bad = probe.get("non_finite") if isinstance(probe.get("non_finite"), list) else []
        self.loss = [float(losses[i]) if i < len(losses) and isinstance(losses[i], (int, float))
                     and not isinstance(losses[i], bool) else math.nan for i in range(n)]
        self.non_finite = [bad[i] if i < len(bad) and isinstance(bad[i], str) else "" for i in range(n)]
        if validate:  # as the C++ reader (read_recording) does, key by key in name order
            for k in sorted(f.tensors):
                if len(k) < 3 or k[0] != "s" or k.find("/") < 2:
                    continue
                i = _stoll(k[1:k.find("/")])
                try:
                    check_stored(k[k.find("/") + 1:], f.tensors[k], f.dtypes[k])
                except TraceKeyError as e:
                    raise TraceKeyError(str(self._fail("segment %d: %s" % (i, e)))) from None

    @property
    def text(self):
        return self.document.decode("utf-8", errors="replace")

    def __len__(self):
        return len(self.segments)

    def __getitem__(self, i):
        return self.segments[i]

    def __iter__(self):
        return iter(self.segments)

    def keys(self):
        """Every trace key of any segment, sorted."""
        return sorted(set().union(*[set(s) for s in self.segments]))

    def token_range(self, i):
        first = i * self.segment_len
        return first, min(self.segment_len, len(self.document) - first)

    def stack(self, key):
        arrs = [s[key] for s in self.segments if key in s]
        if not arrs:
            raise KeyError("recording '%s' has no trace key '%s'; keys: %s" % (self.path, key, ", ".join(self.keys())))
        return np.stack(arrs)

    def __repr__(self):
        return "Recording(step %d, %d segments of %d, %d keys)" % (
            self.step, len(self.segments), self.segment_len, len(self.keys()))


def read_recording(path, validate=True):
    """A probe recording file (traces/step-N.safetensors) as a Recording."""
    return Recording(path, validate)


# ------------------------------------------------------------------------------ step output


class Trace:
    """One trace.safetensors written by `mnemoscope step` (DIR/step-NNNN/trace.safetensors):
    `tensors` by canonical key, `segment` (int), `model` (the model config), `metadata`."""

    def __init__(self, path, validate=True):
        self.path = os.fspath(path)
        f = load_safetensors(self.path)
        self.tensors = dict(f.tensors)
        self.metadata = f.metadata
        seg = f.metadata.get("segment")
        self.segment = int(seg) if seg is not None and re.fullmatch(r"-?[0-9]+", seg) else None
        try:
            self.model = _loads(f.metadata["model"]) if "model" in f.metadata else None
        except ValueError:
            self.model = None
        if validate:
            for key, arr in self.tensors.items():
                try:
                    check_stored(key, arr, f.dtypes[key])
                except TraceKeyError as e:
                    raise TraceKeyError("%s: %s" % (self.path, e)) from None

    def __getitem__(self, key):
        try:
            return self.tensors[key]
        except KeyError:
            raise KeyError("%s has no trace key '%s'; keys: %s" % (self.path, key, ", ".join(sorted(self.tensors)))) from None

    def __contains__(self, key):
        return key in self.tensors

    def keys(self):
        return sorted(self.tensors)

    def __repr__(self):
        return "Trace(segment %s, %d keys)" % (self.segment, len(self.tensors))


def read_trace(path, validate=True):
    """The trace of one `mnemoscope step` segment: a trace.safetensors file, or a step-NNNN
    directory holding one. For a whole `step` output directory use read_traces()."""
    path = os.fspath(path)
    if os.path.isdir(path):
        inner = os.path.join(path, "trace.safetensors")
        if not os.path.exists(inner):
            raise SafetensorsError("%s: a directory without trace.safetensors; pass a step-NNNN directory of "
                                   "`mnemoscope step` output or the file itself (read_traces() reads them all)" % path)
        path = inner
    return Trace(path, validate)


def read_traces(directory, validate=True):
    """Every DIR/step-NNNN/trace.safetensors of a `mnemoscope step --out DIR` run, in step order."""
    directory = os.fspath(directory)
    dirs = sorted(d for d in os.listdir(directory)
                  if re.fullmatch(r"step-[0-9]+", d) and os.path.exists(os.path.join(directory, d, "trace.safetensors")))
    if not dirs:
        raise SafetensorsError("%s: no step-NNNN/trace.safetensors inside; pass the --out directory of `mnemoscope step`"
                               % directory)
    return [read_trace(os.path.join(directory, d), validate) for d in dirs]


# ------------------------------------------------------------------------------ checkpoints


class Checkpoint:
    """A checkpoint: `tensors` (name -> numpy array), `metadata`, `dtypes`, `step`, `path`, and
    `skipped`: "file: reason" for each newer checkpoint that did not load."""

    def __init__(self, step, path, f, skipped):
        self.step = step
        self.path = path
        self.tensors = dict(f.tensors)
        self.metadata = f.metadata
        self.dtypes = f.dtypes
        self.skipped = skipped

    def __getitem__(self, name):
        return self.tensors[name]

    def __contains__(self, name):
        return name in self.tensors

    def keys(self):
        return self.tensors.keys()

    def __repr__(self):
        return "Checkpoint(step %d, %d tensors%s)" % (self.step, len(self.tensors),
                                                      ", %d skipped" % len(self.skipped) if self.skipped else "")


# ------------------------------------------------------------------------------ the session


class Session:
    """An open session (read-only). See open_session()."""

    def __init__(self, path):
        self.path = os.fspath(path)
        self.manifest = read_manifest(self.path)
        self.format_version = check_format(self.manifest, os.path.join(self.path, "manifest.json"))
        self._metrics = None

    @property
    def config(self):
        return self.manifest.get("config")

    @property
    def metrics_path(self):
        return os.path.join(self.path, "metrics.log")

    @property
    def metrics(self):
        """metrics.log as Metrics (read on first use; read_metrics() reads it again)."""
        if self._metrics is None:
            _check_inside(self.path, "metrics.log")
            self._metrics = read_metrics(self.metrics_path)
        return self._metrics

    def read_metrics(self, warn=True):
        _check_inside(self.path, "metrics.log")
        self._metrics = read_metrics(self.metrics_path, warn)
        return self._metrics

    # recordings
    @property
    def recording_steps(self):
        return steps_in(os.path.join(self.path, "traces"))

    def recording_path(self, step):
        return os.path.join(self.path, "traces", step_name(step))

    def recording(self, step=None, validate=True):
        """The probe recording of training step `step` (the newest when None)."""
        steps = self.recording_steps
        if step is None:
            if not steps:
                raise SessionError("%s: has no probe recordings (traces/ is empty); record with "
                                   "`train.record_every` > 0 or SessionWriter.record()" % self.path)
            step = steps[-1]
        elif step not in steps:
            raise SessionError("%s: no recording at step %d; recorded steps: %s" % (
                self.path, step, ", ".join(str(s) for s in steps) or "none"))
        return Recording(self.recording_path(step), validate)

    def recordings(self, validate=True):
        for s in self.recording_steps:
            yield self.recording(s, validate)

    # checkpoints
    @property
    def checkpoint_steps(self):
        return steps_in(os.path.join(self.path, "checkpoints"))

    def checkpoint_path(self, step):
        return os.path.join(self.path, "checkpoints", step_name(step))

    def checkpoint(self, step=None):
        """The checkpoint of `step`; when None, the newest that loads, newer ones that do not
        listed as skipped, as Session::load_latest does (a `latest` naming an older step than
        what exists is stale: a training resumes from the newest readable checkpoint).
        None when the session has no checkpoint; SessionError when none loads."""
        if step is not None:
            f = load_safetensors(self.checkpoint_path(step))
            return Checkpoint(step, self.checkpoint_path(step), f, [])
        pointed = ""
        skipped = []
        latest = os.path.join(self.path, "checkpoints", "latest")
        try:
            if not outside_session(self.path, "checkpoints/latest"):
                # A FIFO here would block a plain open; `latest` holds one short line.
                with os.fdopen(_guard.open_regular(latest), "rb") as fh:
                    pointed = fh.read(4096).split(b"\n", 1)[0].decode("utf-8", errors="replace")
        except _guard.NotRegularFile as e:
            skipped.append("%s/checkpoints/latest: %s" % (self.path, e.why))
        except OSError:
            pass
        steps = self.checkpoint_steps
        order = list(reversed(steps))
        # Symbolic links among the checkpoints are not followed; say so, since they look present.
        try:
            names = sorted(os.listdir(os.path.join(self.path, "checkpoints")))
        except OSError:
            names = []
        for n in names:
            m = _STEP_FILE.match(n)
            why = outside_session(self.path, "checkpoints/" + n) if m and n == step_name(int(m.group(1))) else ""
            if why:
                skipped.append("%s/checkpoints/%s: %s" % (self.path, n, why))
        if pointed and step_name_in(pointed, steps) is None:
            skipped.append("%s/checkpoints/latest: names '%s', which is missing" % (self.path, pointed))
        for s in order:
            try:
                f = load_safetensors(self.checkpoint_path(s))
            except SafetensorsError as e:
                skipped.append(str(e))
                continue
            return Checkpoint(s, self.checkpoint_path(s), f, skipped)
        if skipped:
            raise SessionError("%s: no checkpoint loads:%s" % (self.path, "".join("\n  " + k for k in skipped)))
        return None

    # following
    def follower(self):
        return Follower(self.path)

    def follow(self, interval=0.5, timeout=None, idle_timeout=None, stop=None):
        """Yields every metrics record of the session, those already written first, then each
        new one as another process appends it (Follower.poll). Ends after
        `timeout` seconds in all, after `idle_timeout` seconds without a new record, or when
        stop() returns True (checked between polls); Ctrl-C ends it too."""
        return Follower(self.path).follow(interval, timeout, idle_timeout, stop)

    def __repr__(self):
        return "Session(%r, format %d.%d, %d recordings, %d checkpoints)" % (
            self.path, self.format_version[0], self.format_version[1], len(self.recording_steps),
            len(self.checkpoint_steps))


def open_session(path):
    """Opens a session directory for reading: checks its manifest and format version (a newer
    major version is a FormatVersionError naming both versions). Nothing is written."""
    return Session(path)


class Follower:
    """Follows a session another process may still be writing, like the app's RunLogFollower:
    each poll() reads only what was appended to metrics.log since the last one (a record still
    being written is picked up by a later poll) and lists traces/.

    poll() -> the new records (dicts), in order. When the log was cut (a resume repaired its
    tail), `epoch` increases and the log is read again from the start. Damage in the middle
    (and records that are not JSON) is skipped and added to `gaps` (MetricsGap, named by bytes
    and steps as the app names them), each warned about once. `problem` names a tail no poll got
    past ("" when none; a torn tail is reported only when it is still there, unchanged, at the
    next poll: it may be a record being written)."""

    def __init__(self, path):
        self.path = os.fspath(path)
        self.offset = 0
        self.epoch = 0
        self.problem = ""
        self.gaps = []
        self.recording_steps = []
        self.records_seen = 0
        self._last_step = -1
        self._tail_seen = None

    def poll(self):
        log = os.path.join(self.path, "metrics.log")
        why = outside_session(self.path, "metrics.log") or wrong_kind(self.path, "metrics.log")
        if why:  # a link out of the session is not followed, a FIFO not opened
            self.problem = why
            return []
        try:
            r = read_framed_log(log, self.offset)
            if r.shrunk:
                self.offset = 0
                self.epoch += 1
                self.gaps = []
                self._last_step = -1
                r = read_framed_log(log, 0)
        except LogError as e:  # swapped for something else between the check and the open
            self.problem = str(e)
            return []
        parsed = []
        bad = []
        for rec, off in zip(r.records, r.offsets):
            try:
                parsed.append(parse_json_record(rec))
            except ValueError as e:
                parsed.append(None)  # a record that is not JSON carries no curve point
                bad.append(LogGap(off, off + 12 + len(rec), parse_failure(e)))
        before = len(self.gaps)
        self.gaps, self._last_step = place_gaps(parsed, r.offsets, r.gaps + bad, self._last_step, self.gaps)
        for g in self.gaps[before:]:
            warnings.warn("%s: %s; the records after it were read" % (log, g.describe()), MetricsWarning,
                          stacklevel=2)
        out = [p for p in parsed if p is not None]
        self.offset = r.good_bytes
        problem = ""
        if r.stop_reason:
            if not r.torn_tail or self._tail_seen == r.file_bytes:
                problem = r.stop_reason
            self._tail_seen = r.file_bytes
        else:
            self._tail_seen = None
        if problem and problem != self.problem:
            warnings.warn("%s: stops early: %s" % (log, problem), MetricsWarning, stacklevel=2)
        self.problem = problem
        self.recording_steps = steps_in(os.path.join(self.path, "traces"))
        self.records_seen += len(out)
        return out

    def follow(self, interval=0.5, timeout=None, idle_timeout=None, stop=None):
        start = last = time.monotonic()
        while True:
            for rec in self.poll():
                last = time.monotonic()
                yield rec
            now = time.monotonic()
            if stop is not None and stop():
                return
            if timeout is not None and now - start >= timeout:
                return
            if idle_timeout is not None and now - last >= idle_timeout:
                return
            time.sleep(interval)
