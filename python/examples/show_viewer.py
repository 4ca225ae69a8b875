#!/usr/bin/env python3
"""The notebook viewer without a notebook: what a Jupyter cell shows for mnemoscope.show(...),
written to a file a browser opens (docs/python.md#notebooks).

    PYTHONPATH=python python3 python/examples/show_viewer.py --doc FILE --out OUT.html [--segments A B]
    PYTHONPATH=python python3 python/examples/show_viewer.py --steps STEP_DIR --out OUT.html
    PYTHONPATH=python python3 python/examples/show_viewer.py --page PAGE.html --out OUT.html

--doc steps FILE with `mnemoscope step` (the default text model) into a temporary folder and
shows that folder; --steps shows a `mnemoscope step --out` folder; --page an exported page.
OUT.html is the notebook's cell output: the iframe of Viewer._repr_html_() in a page of its own.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import mnemoscope
from mnemoscope.viewer import find_program


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--doc")
    src.add_argument("--steps")
    src.add_argument("--page")
    ap.add_argument("--segments", nargs=2, type=int, default=(0, 3), metavar=("A", "B"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--program", help="the mnemoscope binary (default: $MNEMOSCOPE, build/mnemoscope, PATH)")
    a = ap.parse_args()
    if os.path.exists(a.out):
        sys.exit("%s exists; choose another name" % a.out)
    with tempfile.TemporaryDirectory() as d:
        if a.doc:
            steps = os.path.join(d, "steps")
            subprocess.run([find_program(a.program), "step", "--doc", a.doc, "--from", str(a.segments[0]), "--to",
                            str(a.segments[1]), "--format", "csv", "--out", steps], check=True)
            v = mnemoscope.show(steps, program=a.program)
        else:
            v = mnemoscope.show(a.steps or a.page, program=a.program)
    with open(a.out, "x", encoding="utf-8") as f:
        f.write("<!DOCTYPE html><meta charset=\"utf-8\"><title>mnemoscope.show</title>\n" + v._repr_html_() + "\n")
    d = v.data()
    print("%s: %s, %d segments (%d..%d), the cell output in %s" % (
        v.source, d["model"], len(d["segments"]), d["from"], d["to"], a.out))


if __name__ == "__main__":
    main()
