"""`pip install ./python` works offline with Debian's pip and setuptools (no network, no build
isolation), into a virtual environment that sees the system's numpy and into a --target
directory; the installed package (not the checkout) is the one imported, and it reads and writes
sessions. The checkout is copied first so the build leaves nothing in the source tree."""

import harness

harness.require_numpy()

import os
import shutil
import subprocess
import sys
import unittest

CHECK = r"""
import os, sys, tempfile
import numpy as np
import mnemoscope
assert os.path.realpath(mnemoscope.__file__).startswith(os.path.realpath(sys.argv[1])), mnemoscope.__file__
d = os.path.join(tempfile.mkdtemp(), "run")
with mnemoscope.SessionWriter(d) as w:
    w.log(1, loss=0.5)
s = mnemoscope.open_session(d)
assert s.metrics["loss"].value.tolist() == [0.5]
from mnemoscope.viewer import viewer_template  # the viewer page ships as package data
assert viewer_template().count("__MNEMOSCOPE_VIEWER_DATA__") == 1
print("installed", mnemoscope.__version__, "from", os.path.dirname(mnemoscope.__file__))
"""


def pip_available():
    return subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode == 0


class Install(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not pip_available():
            raise unittest.SkipTest("pip is not installed for %s; install python3-pip (bash .ci/setup does)" % sys.executable)
        cls.tmp = harness.temp_dir("install")
        cls.src = os.path.join(cls.tmp, "src")
        shutil.copytree(harness.PACKAGE_ROOT, cls.src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
        cls.env = dict(os.environ)
        cls.env.pop("PYTHONPATH", None)  # the checkout must not be what gets imported
        cls.env.update({"PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"})

    def run_ok(self, args, cwd=None):
        r = subprocess.run(args, capture_output=True, text=True, env=self.env, cwd=cwd or self.tmp)
        self.assertEqual(r.returncode, 0, "%s\n%s%s" % (" ".join(args), r.stdout, r.stderr))
        return r.stdout

    def test_into_a_virtual_environment(self):
        if subprocess.run([sys.executable, "-c", "import ensurepip"], capture_output=True).returncode != 0:
            self.skipTest("venv/ensurepip is not available; install python3-venv (bash .ci/setup does)")
        venv = os.path.join(self.tmp, "venv")
        # --without-pip: no copy of pip's bundled wheel into the venv (ensurepip: about 4 of this
        # file's 11 CPU s). `python -m pip` in the venv then runs the system's pip, which the
        # venv sees through --system-site-packages (docs/python.md's venv line), and installs
        # into the venv: the CHECK below asserts the package is imported from there.
        self.run_ok([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", venv])
        py = os.path.join(venv, "bin", "python")
        self.run_ok([py, "-m", "pip", "install", "--no-build-isolation", "--no-index", self.src])
        out = self.run_ok([py, "-c", CHECK, venv])
        self.assertIn("installed", out)

    def test_into_a_target_directory(self):
        target = os.path.join(self.tmp, "target")
        self.run_ok([sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-index", "--no-deps",
                     "--target", target, self.src])
        env = dict(self.env, PYTHONPATH=target)
        r = subprocess.run([sys.executable, "-c", CHECK, target], capture_output=True, text=True, env=env, cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


if __name__ == "__main__":
    harness.main()
