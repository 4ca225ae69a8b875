"""Read Mnemoscope sessions and traces in Python, and record a session from any training loop
so the app can watch and replay it (docs/python.md).

Reading needs numpy only:

    import mnemoscope
    s = mnemoscope.open_session("runs/copy-rmt")
    loss = s.metrics["loss"]                       # Column: .step, .value (NaN kept), .non_finite
    rec = s.recording()                            # newest probe recording: rec[i]["rmt.attn.0"]

Showing: mnemoscope.show(page.html | step folder | session) -> a Viewer a notebook draws inline;
figures with matplotlib: mnemoscope.plots.

Writing: mnemoscope.SessionWriter. PyTorch helpers: mnemoscope.pytorch; the models as torch
modules, weights both ways: mnemoscope.models (both need torch).
"""

from ._version import FORMAT_MAJOR, FORMAT_MINOR, __version__
from ._guard import MAX_JSON_DEPTH
from .errors import (FormatVersionError, MetricsWarning, MnemoscopeError, RecordingError, SafetensorsError,
                     SessionError, SessionLockedError, TraceKeyError)
from .framed_log import FramedLogWriter, LogGap, LogReadResult, read_framed_log
from .keys import KEYS, validate_segment
from .safetensors import RawTensor, TensorFile, load_safetensors, save_safetensors
from .session import (Checkpoint, Column, Follower, InvalidRecord, Metrics, Recording, Session, Trace, check_format,
                      open_session, read_metrics, read_recording, read_trace, read_traces)
from .viewer import Viewer, show
from .writer import SessionWriter, summarize_recording, validate_model_config

__all__ = [
    "__version__", "FORMAT_MAJOR", "FORMAT_MINOR",
    "open_session", "Session", "Metrics", "InvalidRecord", "Column", "Recording", "Checkpoint", "Follower", "Trace",
    "read_metrics", "read_recording", "read_trace", "read_traces", "check_format",
    "SessionWriter", "summarize_recording", "validate_model_config",
    "show", "Viewer",
    "load_safetensors", "save_safetensors", "TensorFile", "RawTensor",
    "read_framed_log", "FramedLogWriter", "LogGap", "LogReadResult",
    "KEYS", "validate_segment",
    "MnemoscopeError", "SafetensorsError", "SessionError", "SessionLockedError", "FormatVersionError", "RecordingError", "TraceKeyError",
    "MetricsWarning", "MAX_JSON_DEPTH",
]
