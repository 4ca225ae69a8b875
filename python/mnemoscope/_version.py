"""Version of the mnemoscope Python package and of the session format it reads and writes."""

__version__ = "0.1.0"

# Session format (docs/formats.md "Format version"): manifest.json's integer "format_version"
# is the major version, "format_minor" (absent = 0) the minor one. The same constants as
# core/io/session.h (kSessionFormatVersion, kSessionFormatMinor).
FORMAT_MAJOR = 1
FORMAT_MINOR = 0
