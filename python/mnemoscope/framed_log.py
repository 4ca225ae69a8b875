"""The append-only framed log of a session (metrics.log), as core/io/framed_log.h writes and
reads it. Each record is

    u32 length | u32 masked CRC32C of the 4 length bytes | payload | u32 masked CRC32C of payload

all little-endian. The reader returns every complete, checksummed record. Damage in the middle
(a flipped or scrambled byte) is skipped: the reader scans forward byte by byte for the next
position where a length and its checksum, and then a payload and its checksum, agree, and
reports the skipped byte range as a gap. Bytes at the end that do not form a record (a torn tail
after a crash, or a record still being written) are the tail, named in stop_reason. Same words,
same bytes as the C++ reader, so both languages recover the same records.
"""

import os
import struct
from dataclasses import dataclass, field
from typing import List

import numpy as np

from . import _guard
from .crc32c import _TABLE_NP, crc32c_many, crc32c, mask_crc, mask_crc_many
from .errors import MnemoscopeError

MAX_RECORD_BYTES = 64 << 20  # 64 MiB: larger lengths are damage (kMaxRecordBytes)

# Candidate frame starts checked at once while resynchronising (a few numpy passes each).
_SCAN_WINDOW = 1 << 18
# The log is read this many bytes at a time; frames are checked in batches of at most
# _BATCH_FRAMES frames and _BATCH_BYTES bytes (plus the record that crosses the limit).
_CHUNK = 4 << 20
_BATCH_FRAMES = 8192
_BATCH_BYTES = 8 << 20


class LogError(MnemoscopeError, OSError):
    """metrics.log exists but cannot be read or appended to."""


@dataclass
class LogGap:
    """A damaged byte range [begin, end) the reader skipped; records after it were read."""
    begin: int
    end: int
    reason: str  # the first fault at `begin` ("checksum mismatch in record payload")

    def describe(self):
        """"bytes B-E (reason)", as describe_gap in core/io/framed_log.h."""
        return "bytes %d-%d (%s)" % (self.begin, self.end, self.reason)


@dataclass
class LogReadResult:
    records: List[bytes] = field(default_factory=list)  # every complete, checksummed record
    offsets: List[int] = field(default_factory=list)    # absolute byte where each record's frame starts
    gaps: List[LogGap] = field(default_factory=list)    # damaged ranges skipped between records
    good_bytes: int = 0       # bytes up to the end of the last good record (absolute)
    file_bytes: int = 0
    clean: bool = True        # False when there is a gap or a tail
    stop_reason: str = ""     # why reading stopped before the end: "torn tail: ... at byte N", "checksum mismatch ..."
    shrunk: bool = False      # the file is shorter than the offset asked for

    @property
    def torn_tail(self):
        """True when reading stopped at an incomplete last record (a crash, or a record still being written)."""
        return self.stop_reason.startswith("torn tail")


def _u32_at(arr, positions):
    """Little-endian u32 at each position of a uint8 array."""
    positions = np.asarray(positions, dtype=np.int64)
    if len(positions) == 0:
        return np.zeros(0, dtype=np.uint32)
    b = arr[positions[:, None] + np.arange(4)].astype(np.uint32)
    return b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16) | (b[:, 3] << 24)


class _Window:
    """The bytes [base, base + len(buf)) of an open log, read on demand in chunks and dropped
    once passed, so a reader holds a few MiB of the file (and at most one record of up to
    64 MiB more), never the whole file. `end` is the file's size when it was opened (less when
    it shrank while being read)."""

    def __init__(self, f, start, end):
        self.f, self.base, self.end = f, start, end
        self.buf = b""
        self._arr = None
        f.seek(start)

    def reach(self, upto):
        """Reads on until the window holds the bytes before `upto` (or the file ends)."""
        have = self.base + len(self.buf)
        if upto > have and have < self.end:
            want = min(self.end, max(upto, have + _CHUNK)) - have
            parts = [self.buf]
            got = 0
            while got < want:
                b = self.f.read(want - got)
                if not b:  # the file shrank while it was read: it ends here
                    self.end = have + got
                    break
                parts.append(b)
                got += len(b)
            self.buf = b"".join(parts)
            self._arr = None
        return self.base + len(self.buf)

    def drop(self, before):
        """Forgets the bytes before `before`."""
        if before - self.base > _CHUNK:  # copying the rest is worth it only past a chunk
            self.buf = self.buf[before - self.base:]
            self.base = before
            self._arr = None

    def arr(self):
        if self._arr is None:
            self._arr = np.frombuffer(self.buf, dtype=np.uint8)
        return self._arr

    def u32(self, at):
        return _U32(self.buf, at - self.base)[0]

    def bytes(self, begin, end):
        return self.buf[begin - self.base:end - self.base]


_U32 = struct.Struct("<I").unpack_from


def _walk(win, at):
    """Frames from `at` on, as check_frame in the C++ reader judges them one after another, at
    most one batch (_BATCH_FRAMES frames, _BATCH_BYTES bytes plus one record) at a time.
    Returns (starts, lens, fault, more): the good frames, the first fault as (why, position,
    damaged) or None, and whether the log goes on after the batch (call again from its end)."""
    starts, lens = [], []
    stop = None  # (why, position, header_complete) of the structural stop
    first = at
    more = False
    while True:
        n = win.end
        if at >= n:
            break
        if n - at < 8:
            win.reach(n)
            stop = ("torn tail: incomplete record header", at, False)
            break
        if win.reach(at + 8) < at + 8:
            continue  # the file shrank: judge again against its new end
        length = win.u32(at)
        if length > MAX_RECORD_BYTES:
            stop = ("record length %d over the limit" % length, at, True)
            break
        if n - at - 8 < length + 4:
            stop = ("torn tail: record of %d bytes is incomplete" % length, at, True)
            break
        end = at + 12 + length
        if starts and (len(starts) >= _BATCH_FRAMES or end - first > _BATCH_BYTES):
            more = True  # check this batch before reading further
            break
        if not starts and length > _CHUNK:
            # A long record is read only once its length's checksum holds: a damaged length
            # never makes the reader take 64 MiB it does not need.
            if mask_crc(crc32c(win.bytes(at, at + 4))) != win.u32(at + 4):
                return [], [], ("checksum mismatch in record length", at, True), False
        if win.reach(end) < end:
            continue
        starts.append(at)
        lens.append(length)
        at = end
    # Checksums, vectorised; the length's CRC is checked before anything else.
    arr = win.arr()
    base = win.base
    hdr = [x - base for x in starts] + ([stop[1] - base] if stop is not None and stop[2] else [])
    len_ok = mask_crc_many(crc32c_many(win.buf, hdr, [4] * len(hdr))) == _u32_at(arr, [h + 4 for h in hdr])
    st = np.asarray(starts, dtype=np.int64) - base
    ln = np.asarray(lens, dtype=np.int64)
    pay_ok = mask_crc_many(crc32c_many(win.buf, st + 8, ln)) == _u32_at(arr, st + 8 + ln)
    bad = np.flatnonzero(~len_ok[:len(starts)] | ~pay_ok)
    if len(bad):
        k = int(bad[0])
        why = "checksum mismatch in record length" if not len_ok[k] else "checksum mismatch in record payload"
        return starts[:k], lens[:k], (why, starts[k], True), False
    if stop is None:
        return starts, lens, None, more
    why, pos, complete = stop
    if complete and not len_ok[len(starts)]:
        return starts, lens, ("checksum mismatch in record length", pos, True), False
    return starts, lens, (why, pos, not why.startswith("torn tail")), False


def _header_ok(arr, rel, k):
    """Whether the length checksum holds at each of the k positions rel, rel+1, ... of arr
    (which holds 8 bytes past the last): contiguous slices, no gather."""
    b = [arr[rel + j:rel + j + k] for j in range(8)]
    crc = np.full(k, 0xFFFFFFFF, dtype=np.uint32)
    for j in range(4):
        crc = _TABLE_NP[(crc ^ b[j]) & 0xFF] ^ (crc >> np.uint32(8))
    stored = (b[4].astype(np.uint32) | (b[5].astype(np.uint32) << 8) | (b[6].astype(np.uint32) << 16)
              | (b[7].astype(np.uint32) << 24))
    return mask_crc_many(crc ^ np.uint32(0xFFFFFFFF)) == stored


def _next_frame(win, at):
    """The first position after `at` where a whole frame checks out, or None."""
    p = at + 1
    while True:
        win.drop(p)
        if p + 12 > win.end:
            return None
        hi = min(p + _SCAN_WINDOW, win.end - 11)  # candidates p..hi-1; each needs 12 bytes
        if win.reach(hi + 11) < hi + 11:
            continue  # the file shrank: judge again against its new end
        arr = win.arr()
        ok = _header_ok(arr, p - win.base, hi - p)
        for c in (np.flatnonzero(ok) + p).tolist():
            l = win.u32(c)
            if l > MAX_RECORD_BYTES or win.end - c - 8 < l + 4:
                continue
            if win.reach(c + 12 + l) < c + 12 + l:
                continue
            if mask_crc(crc32c(win.bytes(c + 8, c + 8 + l))) == win.u32(c + 8 + l):
                return c
        p = hi


def read_framed_log(path, offset=0):
    """Reads a framed log from byte `offset` (a previous result's good_bytes, to follow a log that
    another process is appending to: a torn tail there may be a record still being written, so
    read again from good_bytes later). Offsets in the result are absolute. A missing file reads as
    empty and clean. Raises LogError when the file exists but cannot be read, or is not a regular
    file (a FIFO is refused without blocking). The file is read a few MiB at a time: memory grows
    with the records returned, not with the file (a huge run of damage costs a window)."""
    r = LogReadResult()
    try:
        fd = _guard.open_regular(path)
    except FileNotFoundError:
        return r
    except _guard.NotRegularFile as e:
        raise LogError("%s: %s; metrics.log must be a regular file" % (path, e.why)) from None
    except OSError as e:
        raise LogError("%s: cannot read log: %s" % (path, e.strerror or e)) from e
    try:
        with os.fdopen(fd, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            r.file_bytes = size
            r.good_bytes = offset
            if offset > size:  # the file was cut (a resume repaired its tail): read it again from 0
                r.clean = False
                r.shrunk = True
                r.good_bytes = 0
                r.stop_reason = "the log is shorter (%d bytes) than the offset %d" % (size, offset)
                return r
            _read_frames(_Window(f, offset, size), offset, r)
    except OSError as e:
        raise LogError("%s: cannot read log: %s" % (path, e.strerror or e)) from e
    return r


def _read_frames(win, at, r):
    while True:
        starts, lens, fault, more = _walk(win, at)
        r.records.extend(win.bytes(s + 8, s + 8 + l) for s, l in zip(starts, lens))
        r.offsets.extend(starts)
        if starts:
            at = starts[-1] + 12 + lens[-1]
            r.good_bytes = at
        if fault is None:
            if more:
                win.drop(at)
                continue
            break
        why, pos, damaged = fault
        nxt = _next_frame(win, pos) if damaged else None
        r.clean = False
        if nxt is None:  # a torn tail, or damage no whole frame follows
            r.stop_reason = "%s at byte %d" % (why, pos)
            break
        r.gaps.append(LogGap(pos, nxt, why))
        at = nxt


def frame(payload):
    """The bytes of one record."""
    payload = bytes(payload)
    if len(payload) > MAX_RECORD_BYTES:
        raise ValueError("log record of %d bytes is over the 64 MiB limit" % len(payload))
    head = struct.pack("<I", len(payload))
    return (head + struct.pack("<I", mask_crc(crc32c(head))) + payload
            + struct.pack("<I", mask_crc(crc32c(payload))))


class FramedLogWriter:
    """Appends records to `path` (created if missing), each flushed to the OS in one write();
    `sync` also fsyncs. A failed append leaves at most a torn tail, which readers skip."""

    def __init__(self, path):
        self.path = str(path)
        self._fd = None
        # O_NOFOLLOW: a link is not followed out of the session; O_NONBLOCK: a FIFO without a
        # reader is refused (ENXIO) instead of blocking, one with a reader caught by the fstat.
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW
                         | os.O_NONBLOCK, 0o644)
        except OSError as e:
            kind = _guard.lstat_kind(self.path)
            if kind and kind != "a regular file":
                raise LogError("%s: is %s, not a regular file; a log is appended only to a regular file"
                               % (self.path, kind)) from None
            raise LogError("%s: cannot open log for appending: %s" % (self.path, e.strerror or e)) from e
        kind = _guard.kind_of(os.fstat(fd).st_mode)
        if kind != "a regular file":
            os.close(fd)
            raise LogError("%s: is %s, not a regular file; a log is appended only to a regular file" % (self.path, kind))
        self._fd = fd

    def append(self, payload, sync=False):
        if self._fd is None:
            raise LogError("%s: the log writer is closed" % self.path)
        try:
            buf = frame(payload)
        except ValueError as e:
            raise LogError("%s: %s" % (self.path, e)) from None
        view = memoryview(buf)
        try:
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
            if sync:
                os.fsync(self._fd)
        except OSError as e:
            raise LogError("%s: cannot append to log: %s" % (self.path, e.strerror or e)) from e

    def close(self):
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
