"""Guards every reader shares against hostile files (docs/reliability.md):

* JSON nesting: the format's files and records nest a few levels (a probe record's
  rmt_block_mass is 3); Python's json module recurses once per level and raises an untyped
  RecursionError near 1,000 levels. Every parse here first checks the depth against
  MAX_JSON_DEPTH and raises JsonDepthError (a ValueError, so every caller that turns invalid
  JSON into its own typed error names the file) before json.loads sees the text.
* File kinds: opening a FIFO for reading blocks until a writer comes; a device may be endless.
  open_regular opens with O_NONBLOCK (which never blocks, and does nothing to a regular file)
  and checks with fstat that what it opened is a regular file.
"""

import json
import os
import re
import stat as _stat

import numpy as np

MAX_JSON_DEPTH = 64

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_STRING_B = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)
_OPEN = np.zeros(256, dtype=np.int8)
_OPEN[ord("[")] = _OPEN[ord("{")] = 1
_OPEN[ord("]")] = _OPEN[ord("}")] = -1


class JsonDepthError(ValueError):
    """JSON nested deeper than MAX_JSON_DEPTH levels."""

    def __init__(self, limit=MAX_JSON_DEPTH):
        super().__init__("it nests deeper than %d levels" % limit)


def json_depth(text):
    """The deepest nesting of arrays and objects in JSON text (str or bytes); brackets inside
    strings do not count. Linear in the text, no recursion."""
    b = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    if b.count(b"[") + b.count(b"{") == 0:
        return 0
    b = _STRING_B.sub(b"", b)
    steps = _OPEN[np.frombuffer(b, dtype=np.uint8)]
    steps = steps[steps != 0]
    if len(steps) == 0:
        return 0
    return int(np.cumsum(steps, dtype=np.int64).max())


def check_depth(text, limit=MAX_JSON_DEPTH):
    """Raises JsonDepthError when `text` nests deeper than `limit` levels."""
    b = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    if b.count(b"[") + b.count(b"{") > limit and json_depth(b) > limit:
        raise JsonDepthError(limit)


def loads(text, **kw):
    """json.loads with the depth checked first (JsonDepthError, a ValueError)."""
    check_depth(text)
    try:
        return json.loads(text, **kw)
    except RecursionError:  # cannot happen after the check; kept so no RecursionError escapes
        raise JsonDepthError() from None


def value_depth(v, limit=MAX_JSON_DEPTH, _depth=0):
    """True when the Python value `v` (dicts and lists of scalars) nests deeper than `limit`."""
    if isinstance(v, (dict, list, tuple)):
        if _depth + 1 > limit:
            return True
        items = v.values() if isinstance(v, dict) else v
        return any(value_depth(x, limit, _depth + 1) for x in items)
    return False


# ------------------------------------------------------------------------------ file kinds


def kind_of(mode):
    """'a FIFO (named pipe)', 'a directory', ... for an st_mode."""
    if _stat.S_ISREG(mode):
        return "a regular file"
    if _stat.S_ISDIR(mode):
        return "a directory"
    if _stat.S_ISLNK(mode):
        return "a symbolic link"
    if _stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if _stat.S_ISSOCK(mode):
        return "a socket"
    if _stat.S_ISCHR(mode):
        return "a character device"
    if _stat.S_ISBLK(mode):
        return "a block device"
    return "not a regular file"


class NotRegularFile(OSError):
    """open_regular found something else than a regular file; .kind says what ('a FIFO (named pipe)')."""

    def __init__(self, path, kind):
        super().__init__("%s: is %s, not a regular file" % (path, kind))
        self.path, self.kind = path, kind

    @property
    def why(self):
        """'is a FIFO (named pipe), not a regular file'."""
        return "is %s, not a regular file" % self.kind


def open_regular(path, flags=os.O_RDONLY):
    """An fd of `path` opened without blocking (a FIFO opens at once) and checked to be a regular
    file; NotRegularFile when it is anything else (closed again), OSError when it cannot be opened.
    The fd is left non-blocking, which changes nothing for a regular file."""
    fd = os.open(path, flags | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
    except OSError:
        os.close(fd)
        raise
    if not _stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise NotRegularFile(path, kind_of(st.st_mode))
    return fd


def lstat_kind(path):
    """kind_of(lstat(path)), or None when nothing is there."""
    try:
        return kind_of(os.lstat(path).st_mode)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return None
