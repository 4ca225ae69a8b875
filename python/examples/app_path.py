"""How the examples name the app in the advice they print: the repository's build of
`mnemoscope` when it is there (relative to the working directory when below it), else
`mnemoscope` (installed on PATH)."""

import os


def app_command():
    exe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "mnemoscope")
    if not os.path.isfile(exe):
        return "mnemoscope"
    rel = os.path.relpath(exe)
    return os.path.abspath(exe) if rel.startswith("..") else "./" + rel
