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

from .crc32c import crc32c_many, crc32c, mask_crc, mask_crc_many
from .errors import MnemoscopeError

MAX_RECORD_BYTES = 64 << 20  # 64 MiB: larger lengths are damage (kMaxRecordBytes)

# Candidate frame starts checked at once while resynchronising (one numpy pass per header byte).
_SCAN_WINDOW = 1 << 16


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


def _walk(data, arr, at):
    """Frames from `at` on, as check_frame in the C++ reader judges them one after another.
    Returns (starts, lens, fault): the good frames and the first fault as (why, position,
    damaged) or None when the data ends at a frame's end."""
    n = len(data)
    starts, lens = [], []
    stop = None  # (why, position, header_complete) of the structural stop
    unpack = struct.Struct("<I").unpack_from
    while at < n:
        if n - at < 8:
            stop = ("torn tail: incomplete record header", at, False)
            break
        length = unpack(data, at)[0]
        if length > MAX_RECORD_BYTES:
            stop = ("record length %d over the limit" % length, at, True)
            break
        if n - at - 8 < length + 4:
            stop = ("torn tail: record of %d bytes is incomplete" % length, at, True)
            break
        starts.append(at)
        lens.append(length)
        at += 8 + length + 4
    # Checksums, vectorised; the length's CRC is checked before anything else.
    hdr = starts + ([stop[1]] if stop is not None and stop[2] else [])
    len_ok = mask_crc_many(crc32c_many(data, hdr, [4] * len(hdr))) == _u32_at(arr, [s + 4 for s in hdr])
    st = np.asarray(starts, dtype=np.int64)
    ln = np.asarray(lens, dtype=np.int64)
    pay_ok = mask_crc_many(crc32c_many(data, st + 8, ln)) == _u32_at(arr, st + 8 + ln)
    bad = np.flatnonzero(~len_ok[:len(starts)] | ~pay_ok)
    if len(bad):
        k = int(bad[0])
        why = "checksum mismatch in record length" if not len_ok[k] else "checksum mismatch in record payload"
        return starts[:k], lens[:k], (why, starts[k], True)
    if stop is None:
        return starts, lens, None
    why, pos, complete = stop
    if complete and not len_ok[len(starts)]:
        return starts, lens, ("checksum mismatch in record length", pos, True)
    return starts, lens, (why, pos, not why.startswith("torn tail"))


def _next_frame(data, arr, at):
    """The first position after `at` where a whole frame checks out, or None."""
    n = len(data)
    p = at + 1
    while p + 12 <= n:
        cand = np.arange(p, min(p + _SCAN_WINDOW, n - 11), dtype=np.int64)
        ok = mask_crc_many(crc32c_many(data, cand, np.full(len(cand), 4))) == _u32_at(arr, cand + 4)
        cand = cand[ok]
        if len(cand):
            ln = _u32_at(arr, cand).astype(np.int64)
            fits = (ln <= MAX_RECORD_BYTES) & (n - cand - 8 >= ln + 4)
            for c, l in zip(cand[fits], ln[fits]):
                c, l = int(c), int(l)
                if mask_crc(crc32c(data[c + 8:c + 8 + l])) == _u32_at(arr, [c + 8 + l])[0]:
                    return c
        p += _SCAN_WINDOW
    return None


def read_framed_log(path, offset=0):
    """Reads a framed log from byte `offset` (a previous result's good_bytes, to follow a log that
    another process is appending to: a torn tail there may be a record still being written, so
    read again from good_bytes later). Offsets in the result are absolute. A missing file reads as
    empty and clean. Raises LogError only when the file exists but cannot be read."""
    r = LogReadResult()
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            r.file_bytes = size
            r.good_bytes = offset
            if offset > size:  # the file was cut (a resume repaired its tail): read it again from 0
                r.clean = False
                r.shrunk = True
                r.good_bytes = 0
                r.stop_reason = "the log is shorter (%d bytes) than the offset %d" % (size, offset)
                return r
            f.seek(offset)
            data = f.read()
    except FileNotFoundError:
        return r
    except OSError as e:
        raise LogError("%s: cannot read log: %s" % (path, e.strerror or e)) from e

    arr = np.frombuffer(data, dtype=np.uint8)
    at = 0
    while True:
        starts, lens, fault = _walk(data, arr, at)
        r.records.extend(data[s + 8:s + 8 + l] for s, l in zip(starts, lens))
        r.offsets.extend(offset + s for s in starts)
        if starts:
            r.good_bytes = offset + starts[-1] + 8 + lens[-1] + 4
        if fault is None:
            break
        why, pos, damaged = fault
        nxt = _next_frame(data, arr, pos) if damaged else None
        r.clean = False
        if nxt is None:  # a torn tail, or damage no whole frame follows
            r.stop_reason = "%s at byte %d" % (why, offset + pos)
            break
        r.gaps.append(LogGap(offset + pos, offset + nxt, why))
        at = nxt
    return r


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
        try:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
        except OSError as e:
            raise LogError("%s: cannot open log for appending: %s" % (self.path, e.strerror or e)) from e

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
