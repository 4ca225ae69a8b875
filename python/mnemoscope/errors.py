"""Errors of the mnemoscope package. Every message names the file and the problem, and where
there is one, the fix (the same contract as the C++ readers, docs/formats.md)."""


class MnemoscopeError(Exception):
    """Base class of every error this package raises on bad files or bad input."""


class SafetensorsError(MnemoscopeError, ValueError):
    """A safetensors file that cannot be read or written (core/io/safetensors.h)."""


class SessionError(MnemoscopeError):
    """A session directory problem a user can act on (core/io/session.h)."""


class SessionLockedError(SessionError):
    """Another writer (a `mnemoscope train` of the session, its --resume, or another
    SessionWriter) holds the session's write lock (docs/formats.md "The write lock")."""


class FormatVersionError(SessionError):
    """A session written in a newer major format version than this package reads."""


class RecordingError(MnemoscopeError, ValueError):
    """A probe recording (traces/step-N.safetensors) that is not one (core/train/recorder.h)."""


class TraceKeyError(MnemoscopeError, ValueError):
    """A trace tensor whose name, shape or dtype does not fit its canonical key (docs/formats.md)."""


class MetricsWarning(UserWarning):
    """metrics.log stops before its end (a torn tail or a damaged record); the records before it are read."""
