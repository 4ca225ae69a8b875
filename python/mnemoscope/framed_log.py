"""The append-only framed log of a session (metrics.log), as core/io/framed_log.h writes and
reads it. Each record is

    u32 length | u32 masked CRC32C of the 4 length bytes | payload | u32 masked CRC32C of payload

all little-endian. The reader returns every complete, checksummed record before the first
damage (a torn tail after a crash, a flipped byte) and says where and why it stopped, in the
same words and at the same byte as the C++ reader, so both languages recover the same records.
"""

import os
import struct
from dataclasses import dataclass, field
from typing import List

import numpy as np

from .crc32c import crc32c, crc32c_many, mask_crc, mask_crc_many
from .errors import MnemoscopeError

MAX_RECORD_BYTES = 64 << 20  # 64 MiB: larger lengths are damage (kMaxRecordBytes)


class LogError(MnemoscopeError, OSError):
    """metrics.log exists but cannot be read or appended to."""


@dataclass
class LogReadResult:
    records: List[bytes] = field(default_factory=list)  # every complete record before the damage
    good_bytes: int = 0       # bytes up to the end of the last good record (absolute)
    file_bytes: int = 0
    clean: bool = True        # False when reading stopped before the end of the file
    stop_reason: str = ""     # "torn tail: ... at byte N (after record K)", "checksum mismatch ..."
    shrunk: bool = False      # the file is shorter than the offset asked for

    @property
    def torn_tail(self):
        """True when reading stopped at an incomplete last record (a crash, or a record still being written)."""
        return not self.clean and self.stop_reason.startswith("torn tail")


def _u32_at(arr, positions):
    """Little-endian u32 at each position of a uint8 array."""
    positions = np.asarray(positions, dtype=np.int64)
    if len(positions) == 0:
        return np.zeros(0, dtype=np.uint32)
    b = arr[positions[:, None] + np.arange(4)].astype(np.uint32)
    return b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16) | (b[:, 3] << 24)


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

    # Pass 1: walk the frames by their lengths, up to the first structural problem.
    n = len(data)
    starts, lens = [], []
    stop = None  # (why, at, header_complete)
    at = 0
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

    # Pass 2: checksums. For each record the length's CRC is checked before anything else.
    arr = np.frombuffer(data, dtype=np.uint8)
    hdr = starts + ([stop[1]] if stop is not None and stop[2] else [])
    len_ok = mask_crc_many(crc32c_many(data, hdr, [4] * len(hdr))) == _u32_at(arr, [s + 4 for s in hdr])
    st = np.asarray(starts, dtype=np.int64)
    ln = np.asarray(lens, dtype=np.int64)
    pay_ok = mask_crc_many(crc32c_many(data, st + 8, ln)) == _u32_at(arr, st + 8 + ln)
    bad = np.flatnonzero(~len_ok[:len(starts)] | ~pay_ok)
    if len(bad):
        k = int(bad[0])
        why = "checksum mismatch in record length" if not len_ok[k] else "checksum mismatch in record payload"
        stop = (why, starts[k], True)
        starts, lens = starts[:k], lens[:k]
    elif stop is not None and stop[2] and not len_ok[len(starts)]:
        stop = ("checksum mismatch in record length", stop[1], True)

    r.records = [data[s + 8:s + 8 + l] for s, l in zip(starts, lens)]
    if r.records:
        r.good_bytes = offset + starts[-1] + 8 + lens[-1] + 4
    if stop is not None:
        r.clean = False
        r.stop_reason = "%s at byte %d (after record %d)" % (stop[0], offset + stop[1], len(r.records))
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
