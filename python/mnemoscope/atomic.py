"""Atomic file replacement, as core/io/atomic_file.h does it: write a fresh temporary file in
the target's directory, fsync it, rename it over the target, fsync the directory. Readers see
the old file or the complete new one, never a partial write; on any failure the temporary file
is removed and a previous target is left untouched.

Temporary files are named ".<name>.tmp-<pid>-<counter>-<8 hex>", the pattern the C++ side
removes when it opens a session for writing (Session::remove_stale_temp_files), so a crash of
either language leaves nothing the other does not clean up.
"""

import itertools
import os
import secrets

from .errors import MnemoscopeError

_MAX_TEMP_STEM_CHARS = 96  # keeps temp names under NAME_MAX
_counter = itertools.count()


class AtomicWriteError(MnemoscopeError, OSError):
    """Writing a file atomically failed; the previous file (if any) is intact."""


def fsync_directory(directory):
    """fsyncs `directory` so a rename or create inside it is durable (EINVAL is accepted)."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as e:
        raise AtomicWriteError("%s: cannot open directory for fsync: %s" % (directory, e.strerror or e)) from e
    try:
        os.fsync(fd)
    except OSError as e:
        if e.errno != 22:  # EINVAL: the file system cannot fsync a directory
            raise AtomicWriteError("%s: fsync of directory failed: %s" % (directory, e.strerror or e)) from e
    finally:
        os.close(fd)


def write_file_atomic(path, chunks):
    """Replaces `path` with the concatenation of `chunks` (bytes-like, or an iterable of them)."""
    path = os.fspath(path)
    if not path:
        raise AtomicWriteError("cannot write a file with an empty path")
    if isinstance(chunks, (bytes, bytearray, memoryview)):
        chunks = [chunks]
    directory, name = os.path.split(path)
    directory = directory or "."
    stem = name[:_MAX_TEMP_STEM_CHARS]
    tmp = None
    fd = -1
    err = None
    for _ in range(64):
        candidate = os.path.join(os.path.dirname(path), ".%s.tmp-%d-%d-%s" % (
            stem, os.getpid(), next(_counter), secrets.token_hex(4)))
        try:
            fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
            tmp = candidate
            break
        except FileExistsError:
            continue
        except OSError as e:
            err = e
            break
    if tmp is None:
        raise AtomicWriteError("%s: cannot create a temporary file in directory '%s': %s"
                               % (path, directory, (err.strerror if err else "too many name collisions")))
    try:
        try:
            for chunk in chunks:
                view = memoryview(chunk).cast("B")
                while view:
                    n = os.write(fd, view)
                    view = view[n:]
        except OSError as e:
            raise AtomicWriteError("%s: writing the temporary file failed: %s" % (path, e.strerror or e)) from e
        try:
            os.fsync(fd)
        except OSError as e:
            raise AtomicWriteError("%s: fsync of the temporary file failed: %s" % (path, e.strerror or e)) from e
        os.close(fd)
        fd = -1
        try:
            os.rename(tmp, path)
        except OSError as e:
            raise AtomicWriteError("%s: cannot rename the temporary file over the target: %s"
                                   % (path, e.strerror or e)) from e
        tmp = None
        fsync_directory(directory)
    finally:
        if fd >= 0:
            os.close(fd)
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
