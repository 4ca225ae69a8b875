"""Runs a test script's unittest cases the way the project's tests report (tests/support/skip.h):
failures exit 1; when every test that ran was skipped the script exits 77, which CTest reports
as skipped (SKIP_RETURN_CODE); skipped tests are listed with their reasons either way.

A test file imports this module first; `require_numpy()` exits 77 when numpy is missing."""

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_ROOT = os.path.dirname(HERE)  # python/: the package is usable in place from here
if PACKAGE_ROOT not in sys.path:
    sys.path.insert(0, PACKAGE_ROOT)


def skip_all(reason):
    print("SKIPPED: " + reason)
    sys.exit(SKIP)


def require_numpy():
    try:
        import numpy  # noqa: F401
    except ImportError:
        skip_all("numpy is not installed for %s; install python3-numpy (bash .ci/setup does)" % sys.executable)


def have_torch():
    try:
        import torch  # noqa: F401
        return True
    except ImportError:
        return False


def tool(env_name):
    """Path of a built program named by an environment variable (set by python/CMakeLists.txt)."""
    p = os.environ.get(env_name, "")
    return p if p and os.path.exists(p) else None


_TEMP_DIRS = []


def temp_dir(tag):
    """A fresh directory, removed when the script ends (kept when MNEMO_KEEP_TMP is set)."""
    d = tempfile.mkdtemp(prefix="mnemo-py-%s-" % tag)
    _TEMP_DIRS.append(d)
    return d


@atexit.register
def _remove_temp_dirs():
    if not os.environ.get("MNEMO_KEEP_TMP"):
        for d in _TEMP_DIRS:
            shutil.rmtree(d, ignore_errors=True)


def main():
    import __main__
    suite = unittest.defaultTestLoader.loadTestsFromModule(__main__)
    result = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(suite)
    if result.skipped:
        print("\nskipped (%d; not counted as passed):" % len(result.skipped))
        for test, why in result.skipped:
            print("  %s  - %s" % (test.id(), why))
    if not result.wasSuccessful():
        sys.exit(1)
    if result.testsRun == 0 or len(result.skipped) == result.testsRun:
        sys.exit(SKIP)
    sys.exit(0)


def run_ok(args):
    """Runs a program; its output (stdout and stderr), or AssertionError with it when it fails."""
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if p.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s" % (" ".join(args), p.returncode, p.stdout.decode(errors="replace")))
    return p.stdout.decode(errors="replace")


def cpp_steps(binary, weights, doc_path, segments, tag="models-step"):
    """`mnemoscope step --checkpoint weights --doc doc_path` over segments 0..segments-1, read
    back with mnemoscope.read_traces (the C++ reference of the model tests)."""
    import mnemoscope
    out = temp_dir(tag)
    run_ok([binary, "step", "--checkpoint", weights, "--doc", doc_path, "--out", out, "--from", "0",
            "--to", str(segments - 1), "--format", "csv", "--force"])
    return mnemoscope.read_traces(out)
