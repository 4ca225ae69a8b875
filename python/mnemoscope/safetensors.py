"""Safetensors files with numpy, byte for byte as core/io/safetensors.h writes and reads them.

Layout: u64 little-endian header length N, N bytes of UTF-8 JSON header
    {"__metadata__": {str: str}, name: {"dtype": "F32", "shape": [..], "data_offsets": [b, e]}}
(offsets relative to the data section that follows the header), then raw little-endian data.

Writer: "__metadata__" first (omitted when empty, keys sorted), then the tensors in the given
order, each entry with keys dtype, shape, data_offsets; compact JSON padded with spaces so the
data section starts at a multiple of 8 bytes; tensor data packed back to back. Written
atomically (mnemoscope.atomic).

Reader: every problem is a SafetensorsError naming the file, the problem and, where there is
one, the tensor; the checks are the C++ reader's (header cap, truncation, unknown dtypes,
shape/size mismatches, offsets outside the data section, overlapping tensors, BOOL bytes).
Tensors come back ordered by data offset. numpy has no bfloat16: BF16 tensors are returned as
float32 (exact) and TensorFile.dtypes keeps the stored dtype.
"""

import json
import os
import stat as _stat
import struct

import numpy as np

from . import _guard
from .atomic import AtomicWriteError, write_file_atomic
from .errors import SafetensorsError

MAX_HEADER_BYTES = 100 * 1024 * 1024  # kMaxHeaderBytes
MAX_TENSORS = 65536                   # kMaxTensors: entries in one file
MAX_RANK = 16                         # kMaxRank: dimensions of one tensor
_METADATA_KEY = "__metadata__"
_ALIGN = 8

# safetensors dtype -> (numpy dtype, bytes per element); the order of core/io/safetensors.cpp.
DTYPES = {
    "F64": (np.dtype("<f8"), 8),
    "F32": (np.dtype("<f4"), 4),
    "F16": (np.dtype("<f2"), 2),
    "BF16": (np.dtype("<u2"), 2),  # raw bits; converted to float32 on load
    "I64": (np.dtype("<i8"), 8),
    "I32": (np.dtype("<i4"), 4),
    "I16": (np.dtype("<i2"), 2),
    "I8": (np.dtype("i1"), 1),
    "U8": (np.dtype("u1"), 1),
    "BOOL": (np.dtype("?"), 1),
}
_SUPPORTED = ", ".join(DTYPES)
_NUMPY_TO_NAME = {
    np.dtype("f8"): "F64", np.dtype("f4"): "F32", np.dtype("f2"): "F16",
    np.dtype("i8"): "I64", np.dtype("i4"): "I32", np.dtype("i2"): "I16", np.dtype("i1"): "I8",
    np.dtype("u1"): "U8", np.dtype("?"): "BOOL",
}


class RawTensor:
    """A tensor given as its safetensors dtype, shape and raw little-endian bytes (for dtypes
    numpy lacks, e.g. a PyTorch bfloat16 tensor: mnemoscope.pytorch makes these)."""

    def __init__(self, dtype, shape, data):
        if dtype not in DTYPES:
            raise SafetensorsError("RawTensor: unknown dtype '%s' (supported: %s)" % (dtype, _SUPPORTED))
        self.dtype = dtype
        self.shape = tuple(int(d) for d in shape)
        self.data = bytes(data)
        need = DTYPES[dtype][1] * int(np.prod(self.shape, dtype=np.int64))
        if len(self.data) != need:
            raise SafetensorsError("RawTensor: shape %s with dtype %s needs %d bytes, got %d"
                                   % (list(self.shape), dtype, need, len(self.data)))


def dtype_name(dtype):
    """Safetensors name of a numpy dtype ("F32", ...); None when it has none."""
    dt = np.dtype(dtype)
    return _NUMPY_TO_NAME.get(dt.newbyteorder("=") if dt.byteorder not in ("=", "|") else dt)


def bf16_to_float32(bits):
    """bfloat16 bit patterns (uint16 array) -> float32, exactly."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32)


def float32_to_bf16(x):
    """float32 -> bfloat16 bit patterns (uint16), rounded to nearest even like PyTorch; NaN stays NaN."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    u = x.view(np.uint32)
    rounded = ((u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)).astype(np.uint16)
    nan = np.isnan(x)
    if nan.any():
        rounded[nan] = ((u[nan] >> np.uint32(16)) | np.uint32(0x40)).astype(np.uint16)
    return rounded


# ------------------------------------------------------------------------------ reading


class TensorFile:
    """A loaded safetensors file: a mapping name -> numpy array (ordered by data offset), with
    the file's `metadata` (str -> str), the stored `dtypes` (name -> "F32", ...) and its `path`."""

    def __init__(self, path, tensors, metadata, dtypes):
        self.path = path
        self.tensors = tensors
        self.metadata = metadata
        self.dtypes = dtypes

    def __getitem__(self, name):
        try:
            return self.tensors[name]
        except KeyError:
            raise KeyError("%s has no tensor '%s' (it has %d: %s)" % (
                self.path, name, len(self.tensors), ", ".join(list(self.tensors)[:20]))) from None

    def __contains__(self, name):
        return name in self.tensors

    def __iter__(self):
        return iter(self.tensors)

    def __len__(self):
        return len(self.tensors)

    def keys(self):
        return self.tensors.keys()

    def items(self):
        return self.tensors.items()

    def values(self):
        return self.tensors.values()

    def __repr__(self):
        return "TensorFile(%r, %d tensors, metadata keys %s)" % (self.path, len(self.tensors), sorted(self.metadata))


def _fail(path, problem):
    raise SafetensorsError("%s: %s" % (path, problem))


def _fail_tensor(path, name, problem):
    raise SafetensorsError("%s: tensor '%s': %s" % (path, name, problem))


def _as_unsigned(v):
    """(value, None) for a non-negative JSON integer, else (None, problem)."""
    if isinstance(v, bool) or not isinstance(v, int):
        return None, "is not an integer (%s)" % json.dumps(v)
    if v < 0:
        return None, "is negative (%d)" % v
    return v, None


def _parse_entry(path, name, spec, data_size):
    if name == "":
        _fail(path, "header has a tensor with an empty name")
    if not isinstance(spec, dict):
        _fail_tensor(path, name, "header entry is not a JSON object")
    if "dtype" not in spec:
        _fail_tensor(path, name, 'header entry is missing "dtype"')
    dtype = spec["dtype"]
    if not isinstance(dtype, str):
        _fail_tensor(path, name, '"dtype" is not a string')
    if dtype not in DTYPES:
        _fail_tensor(path, name, "unknown dtype '%s' (supported: %s)" % (dtype, _SUPPORTED))
    if "shape" not in spec:
        _fail_tensor(path, name, 'header entry is missing "shape"')
    shape_v = spec["shape"]
    if not isinstance(shape_v, list):
        _fail_tensor(path, name, '"shape" is not an array')
    if len(shape_v) > MAX_RANK:
        _fail_tensor(path, name, "shape has %d dimensions, over the limit of %d" % (len(shape_v), MAX_RANK))
    shape = []
    for i, d in enumerate(shape_v):
        v, problem = _as_unsigned(d)
        if problem:
            _fail_tensor(path, name, "shape dimension %d %s" % (i, problem))
        if v > 2**63 - 1:
            _fail_tensor(path, name, "shape dimension %d is too large" % i)
        shape.append(v)
    if "data_offsets" not in spec:
        _fail_tensor(path, name, 'header entry is missing "data_offsets"')
    offs_v = spec["data_offsets"]
    if not isinstance(offs_v, list) or len(offs_v) != 2:
        _fail_tensor(path, name, '"data_offsets" is not an array of two integers')
    offs = []
    for i, o in enumerate(offs_v):
        v, problem = _as_unsigned(o)
        if problem:
            _fail_tensor(path, name, "data_offsets %s%s" % ("end " if i else "begin ", problem))
        offs.append(v)
    begin, end = offs
    if begin > end:
        _fail_tensor(path, name, "data_offsets [%d, %d] have begin after end" % (begin, end))
    if 0 in shape:
        need = 0
    else:
        need = DTYPES[dtype][1]
        for d in shape:
            need *= d
    overflow = need >= 2**64
    span = end - begin
    if overflow or need != span:
        _fail_tensor(path, name, "shape %s with dtype %s needs %s bytes but data_offsets [%d, %d] span %d bytes "
                     "(shape/size mismatch)" % ("[" + ", ".join(str(d) for d in shape) + "]", dtype,
                                                "more than 2^64" if overflow else str(need), begin, end, span))
    if end > data_size:
        _fail_tensor(path, name, "data_offsets [%d, %d] run past the end of the data section (%d bytes); "
                     "the file is truncated or corrupt" % (begin, end, data_size))
    return {"name": name, "dtype": dtype, "shape": shape, "begin": begin, "end": end}


def _parse_header(path, text):
    dup = []

    def pairs(items):
        seen = set()
        for k, _ in items:
            if k in seen and not dup:
                dup.append(k)
            seen.add(k)
        return dict(items)

    def no_constants(c):
        raise ValueError("%s is not JSON" % c)

    try:
        header = _guard.loads(text.decode("utf-8"), object_pairs_hook=pairs, parse_constant=no_constants)
    except UnicodeDecodeError as e:
        _fail(path, "header is not valid JSON: invalid UTF-8 (%s)" % e)
    except ValueError as e:
        _fail(path, "header is not valid JSON: %s" % e)
    if not isinstance(header, dict):
        _fail(path, "header is not a JSON object")
    # Only duplicate top-level names matter (the C++ reader checks depth 1); a nested duplicate
    # inside an entry would also have been flagged here, so re-check at the top level only.
    if dup:
        top = set()
        for k in _top_level_keys(text):
            if k in top:
                _fail(path, "header lists '%s' more than once" % k)
            top.add(k)
    return header


def _top_level_keys(text):
    """The top-level keys of a JSON object, in order, duplicates kept."""
    keys = []
    json.loads(text.decode("utf-8"), object_pairs_hook=lambda items: keys.append([k for k, _ in items]) or dict(items))
    return keys[-1] if keys else []


def load_safetensors(path, bf16="float32"):
    """Reads every tensor of `path`. Returns a TensorFile (a mapping name -> numpy array ordered by
    data offset, ties by name, with .metadata and .dtypes). bf16="float32" converts bfloat16
    tensors to float32 (exact); bf16="raw" returns their bit patterns as uint16."""
    path = os.fspath(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)  # a FIFO opens at once, refused below
    except FileNotFoundError:
        _fail(path, "file does not exist")
    except IsADirectoryError:
        _fail(path, "is a directory, not a safetensors file")
    except OSError as e:
        _fail(path, "cannot open file: %s" % (e.strerror or e))
    st = os.fstat(fd)
    if not _stat.S_ISREG(st.st_mode):
        os.close(fd)
        _fail(path, "is a directory, not a safetensors file" if _stat.S_ISDIR(st.st_mode)
              else "is %s, not a regular file" % _guard.kind_of(st.st_mode))
    with os.fdopen(fd, "rb") as f:
        size = st.st_size
        if size < 8:
            _fail(path, "file is %d bytes, shorter than the 8-byte header length prefix; the file is truncated "
                  "or not a safetensors file" % size)
        prefix = f.read(8)
        if len(prefix) != 8:
            _fail(path, "unexpected end of file while reading the header length")
        header_len = struct.unpack("<Q", prefix)[0]
        if header_len > MAX_HEADER_BYTES:
            _fail(path, "header length %d bytes exceeds the limit of %d bytes; the file is corrupt or not a "
                  "safetensors file" % (header_len, MAX_HEADER_BYTES))
        after = size - 8
        if header_len > after:
            _fail(path, "header length %d bytes runs past the end of the file (%d bytes follow the length prefix); "
                  "the file is truncated or corrupt" % (header_len, after))
        text = f.read(header_len)
        if len(text) != header_len:
            _fail(path, "unexpected end of file while reading the header (the file changed while loading?)")
        header = _parse_header(path, text)
        data_start = 8 + header_len
        data_size = size - data_start

        metadata = {}
        entries = []
        tensors = len(header) - (1 if _METADATA_KEY in header else 0)
        if tensors > MAX_TENSORS:
            _fail(path, "header lists %d tensors, over the limit of %d" % (tensors, MAX_TENSORS))
        for key in sorted(header):  # the C++ reader's JSON object iterates by sorted key
            value = header[key]
            if key == _METADATA_KEY:
                if not isinstance(value, dict):
                    _fail(path, '"__metadata__" is not a JSON object')
                for mk, mv in value.items():
                    if not isinstance(mv, str):
                        _fail(path, "\"__metadata__\" value for key '%s' is not a string" % mk)
                    metadata[mk] = mv
                continue
            entries.append(_parse_entry(path, key, value, data_size))
        entries.sort(key=lambda e: (e["begin"], e["end"]))  # stable: ties keep the sorted-name order
        reach = None
        for e in entries:
            if e["begin"] == e["end"]:
                continue
            if reach is not None and e["begin"] < reach["end"]:
                _fail_tensor(path, e["name"], "data_offsets [%d, %d] overlap tensor '%s' [%d, %d]" % (
                    e["begin"], e["end"], reach["name"], reach["begin"], reach["end"]))
            if reach is None or e["end"] > reach["end"]:
                reach = e

        tensors, dtypes = {}, {}
        for e in entries:
            nbytes = e["end"] - e["begin"]
            f.seek(data_start + e["begin"])
            raw = f.read(nbytes)
            if len(raw) != nbytes:
                _fail_tensor(path, e["name"], "unexpected end of file while reading data (the file changed while loading?)")
            np_dtype = DTYPES[e["dtype"]][0]
            if e["dtype"] == "BOOL":
                u = np.frombuffer(raw, dtype=np.uint8)
                big = np.flatnonzero(u > 1)
                if len(big):
                    i = int(big[0])
                    _fail_tensor(path, e["name"], "BOOL data holds byte value %d at element %d; expected 0 or 1"
                                 % (int(u[i]), i))
            arr = np.frombuffer(raw, dtype=np_dtype).reshape(e["shape"]).copy()
            if e["dtype"] == "BF16" and bf16 != "raw":
                arr = bf16_to_float32(arr).reshape(e["shape"])
            tensors[e["name"]] = arr
            dtypes[e["name"]] = e["dtype"]
    return TensorFile(path, tensors, metadata, dtypes)


# ------------------------------------------------------------------------------ writing


def _to_entry(path, i, name, value):
    """(dtype name, shape, bytes) of one tensor to save."""
    if isinstance(name, str) and name == "":
        _fail(path, "tensor #%d has an empty name" % i)
    if not isinstance(name, str):
        _fail(path, "tensor #%d has a name that is not a string (%r)" % (i, name))
    if isinstance(value, RawTensor):
        return value.dtype, list(value.shape), value.data
    if hasattr(value, "detach") and hasattr(value, "cpu") and not isinstance(value, np.ndarray):
        from .pytorch import to_saveable  # a torch.Tensor; torch is only needed when one is passed
        value = to_saveable(value)
        if isinstance(value, RawTensor):
            return value.dtype, list(value.shape), value.data
    if value is None:
        _fail_tensor(path, name, "tensor is undefined (None)")
    arr = np.asarray(value)
    name_of = dtype_name(arr.dtype)
    if name_of is None:
        _fail_tensor(path, name, "dtype %s is not supported (supported: %s)" % (arr.dtype, _SUPPORTED))
    arr = np.ascontiguousarray(arr, dtype=DTYPES[name_of][0])
    return name_of, list(arr.shape), arr.tobytes()


def encode_safetensors(tensors, metadata=None, path="<memory>"):
    """The bytes save_safetensors writes (a list of chunks: prefix + header, then each tensor's data)."""
    items = list(tensors.items()) if hasattr(tensors, "items") else list(tensors)
    header_parts = []
    if metadata:
        meta = {}
        for k in sorted(metadata):
            v = metadata[k]
            if not isinstance(k, str) or not isinstance(v, str):
                _fail(path, "metadata must map strings to strings; key %r has a %s value (json.dumps it first)"
                      % (k, type(v).__name__))
            meta[k] = v
        header_parts.append((_METADATA_KEY, meta))
    seen = set()
    datas = []
    offset = 0
    for i, item in enumerate(items):
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            _fail(path, "tensor #%d is not a (name, tensor) pair" % i)
        name, value = item
        if name == _METADATA_KEY:
            _fail_tensor(path, name, "the name is reserved for the metadata block")
        if name in seen:
            _fail_tensor(path, name, "duplicate tensor name")
        seen.add(name)
        dt, shape, data = _to_entry(path, i, name, value)
        header_parts.append((name, {"dtype": dt, "shape": shape, "data_offsets": [offset, offset + len(data)]}))
        datas.append(data)
        offset += len(data)
    try:
        text = json.dumps(dict(header_parts), ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError as e:
        _fail(path, "cannot encode the header (tensor names and metadata must be UTF-8): %s" % e)
    padded = (len(text) + _ALIGN - 1) // _ALIGN * _ALIGN
    text += b" " * (padded - len(text))
    return [struct.pack("<Q", len(text)) + text] + datas


def save_safetensors(path, tensors, metadata=None):
    """Writes `tensors` (a dict or a list of (name, array) pairs: numpy arrays, anything
    np.asarray takes, torch tensors, RawTensor) and `metadata` (str -> str) to `path`
    atomically. Everything is checked before the file system is touched; on failure a previous
    file at `path` is intact."""
    path = os.fspath(path)
    if not path:
        raise SafetensorsError("save_safetensors: the path is empty")
    chunks = encode_safetensors(tensors, metadata, path)
    try:
        write_file_atomic(path, chunks)
    except AtomicWriteError as e:
        raise SafetensorsError(str(e)) from None
