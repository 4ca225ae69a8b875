"""Runs a test script's unittest cases the way the project's tests report (tests/support/skip.h):
failures exit 1; when every test that ran was skipped the script exits 77, which CTest reports
as skipped (SKIP_RETURN_CODE); skipped tests are listed with their reasons either way.

A test file imports this module first; `require_numpy()` exits 77 when numpy is missing."""

import atexit
import json
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


class Dump:
    """python/tests/session_dump.cpp answering a test file's requests in one process (`session_dump
    serve`: one line of JSON arguments in, one line of JSON out), instead of one process each
    (~0.8 CPU s of LibTorch start-up per process). dump("session", DIR) returns what
    `session_dump session DIR` prints; AssertionError, with its exit status, when it fails."""

    def __init__(self, path):
        self.path, self.proc = path, None
        atexit.register(self.close)

    def __call__(self, *args):
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen([self.path, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.proc.stdin.write(json.dumps([str(a) for a in args]) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError("session_dump %s ended with exit %s without an answer (its message is above)"
                                 % (" ".join(str(a) for a in args), self.proc.wait()))
        return json.loads(line)

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait()


class Mnemoscope:
    """`mnemoscope` command lines for a test file that runs dozens: answered by one process,
    python/tests/cli_serve.cpp (the program's own app::run_cli, a new command table per line),
    when ctest built it (MNEMO_CLI_SERVE); else one `binary` process each. Every process of the
    program spends ~0.8 CPU s starting LibTorch. cli(["step", ...]) returns the command's output
    (stdout then stderr) and raises AssertionError, with it, when the exit status is not 0;
    cli.run([...]) returns (exit status, output) whatever the status."""

    def __init__(self, binary):
        self.binary, self.serve, self.proc = binary, tool("MNEMO_CLI_SERVE"), None
        atexit.register(self.close)

    def run(self, args):
        args = [str(a) for a in args]
        if not self.serve:
            p = subprocess.run([self.binary] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            return p.returncode, p.stdout.decode(errors="replace")
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen([self.serve], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.proc.stdin.write(json.dumps(args) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError("cli_serve ended with exit %s on mnemoscope %s (its message is above)"
                                 % (self.proc.wait(), " ".join(args)))
        a = json.loads(line)
        return a["code"], a["out"] + a["err"]

    def __call__(self, args):
        code, out = self.run(args)
        if code != 0:
            raise AssertionError("mnemoscope %s failed (%d):\n%s" % (" ".join(str(a) for a in args), code, out))
        return out

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait()


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


def cpp_steps(cli, weights, doc_path, segments, tag="models-step"):
    """`mnemoscope step --checkpoint weights --doc doc_path` over segments 0..segments-1 (cli: a
    Mnemoscope), read back with mnemoscope.read_traces (the C++ reference of the model tests)."""
    import mnemoscope
    out = temp_dir(tag)
    cli(["step", "--checkpoint", weights, "--doc", doc_path, "--out", out, "--from", "0",
         "--to", str(segments - 1), "--format", "csv", "--force"])
    return mnemoscope.read_traces(out)


def finite_difference_check(test, model, loss_fn, picks, eps=1e-6, rtol=1e-5, atol=1e-8):
    """Analytic gradients of loss_fn() against central differences at `picks` random entries of
    every parameter (float64; test_models.py and test_models_mtn.py); returns the entries checked."""
    import torch
    g = torch.Generator().manual_seed(0)
    model.zero_grad()
    loss_fn().backward()
    checked = 0
    for name, p in model.named_parameters():
        if p.numel() == 0:
            continue
        flat = p.data.view(-1)
        grad = p.grad.view(-1) if p.grad is not None else torch.zeros(p.numel(), dtype=p.dtype)
        for i in torch.randint(0, p.numel(), (picks,), generator=g).tolist():
            old = flat[i].item()
            with torch.no_grad():
                flat[i] = old + eps
                up = loss_fn().item()
                flat[i] = old - eps
                down = loss_fn().item()
                flat[i] = old
            fd = (up - down) / (2 * eps)
            test.assertLessEqual(abs(fd - grad[i].item()), atol + rtol * abs(fd),
                                 "%s[%d]: analytic %.10g, finite difference %.10g" % (name, i, grad[i].item(), fd))
            checked += 1
    return checked
