"""CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) and the masked CRC of the framed
metrics log, as core/io/framed_log.h computes them.

crc32c() is table-driven pure Python. crc32c_many() computes the CRCs of many byte ranges of
one buffer at once with numpy, one byte position at a time across all ranges, which is what
makes reading a long metrics.log fast (every record is an independent range).
"""

import numpy as np

_POLY = 0x82F63B78


def _make_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ _POLY if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _make_table()
_TABLE_NP = np.array(_TABLE, dtype=np.uint32)


def crc32c(data, crc=0):
    """CRC-32C of `data` (bytes-like), continuing from `crc`. crc32c(b"123456789") == 0xE3069283."""
    crc ^= 0xFFFFFFFF
    t = _TABLE
    for b in bytes(data):
        crc = t[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def mask_crc(crc):
    """Masked CRC (rotate right 15, add 0xa282ead8), stored next to the data it covers."""
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


# Ranges longer than this are done one at a time (a numpy pass per byte over few ranges is slower).
_VECTOR_MAX_LEN = 4096


def crc32c_many(buf, starts, lengths):
    """CRC-32C of buf[starts[i] : starts[i] + lengths[i]] for every i, as a uint32 array."""
    starts = np.asarray(starts, dtype=np.int64)
    lengths = np.asarray(lengths, dtype=np.int64)
    out = np.zeros(len(starts), dtype=np.uint32)
    if len(starts) == 0:
        return out
    data = np.frombuffer(buf, dtype=np.uint8)
    long_ = lengths > _VECTOR_MAX_LEN
    for i in np.flatnonzero(long_):
        s, n = int(starts[i]), int(lengths[i])
        out[i] = crc32c(data[s:s + n].tobytes())
    idx = np.flatnonzero(~long_)
    if len(idx):
        # Longest first, so the ranges still running at byte p are a prefix.
        order = idx[np.argsort(-lengths[idx], kind="stable")]
        st = starts[order]
        ln = lengths[order]
        crc = np.full(len(order), 0xFFFFFFFF, dtype=np.uint32)
        active = len(order)
        for p in range(int(ln[0]) if len(ln) else 0):
            while active and ln[active - 1] <= p:
                active -= 1
            c = crc[:active]
            b = data[st[:active] + p]
            crc[:active] = _TABLE_NP[(c ^ b) & 0xFF] ^ (c >> np.uint32(8))
        out[order] = crc ^ np.uint32(0xFFFFFFFF)
    return out


def mask_crc_many(crc):
    """mask_crc of a uint32 array."""
    crc = np.asarray(crc, dtype=np.uint32)
    rot = (crc >> np.uint32(15)) | (crc << np.uint32(17))
    return (rot + np.uint32(0xA282EAD8)).astype(np.uint32)
