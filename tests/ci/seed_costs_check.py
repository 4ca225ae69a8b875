#!/usr/bin/env python3
"""seed_costs_check.py SEED_COSTS BUILD_DIR: tests/ci/seed_costs.py on a fixture timing file
against BUILD_DIR's tests (ctest `ci_seed_costs`). A file's grouped test whose case count changed
keeps its timing under today's name; a test's own entry wins over a renamed one; a test that is
gone is left out; the file ends with ctest's "---" line. Exits 1 naming what differs."""

import json
import os
import re
import subprocess
import sys
import tempfile


def main(seed, build):
    names = [t["name"] for t in json.loads(subprocess.run(
        ["ctest", "--show-only=json-v1"], cwd=build, check=True, capture_output=True, text=True).stdout)["tests"]]
    grouped = [n for n in names if re.match(r"^[^:]+\.cpp: its \d+ test cases in one process$", n)]
    if len(grouped) < 2:
        print("the build has fewer than two plain grouped tests to check with: %s" % grouped)
        return 1
    a, b = grouped[0], grouped[1]
    fa = a.split(": its ")[0]
    fb = b.split(": its ")[0]
    fixture = "\n".join([
        "%s: its 999 test cases in one process 1 42.5" % fa,      # renamed: a's file, another count
        "%s 3 7.25" % b,                                           # b's own entry ...
        "%s: its 998 test cases in one process 1 99" % fb,         # ... wins over a stale one of its file
        "no such test any more 1 5",                               # gone: left out
        "---",
        "a failed test's name",
    ]) + "\n"
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(fixture)
    try:
        r = subprocess.run([sys.executable, seed, f.name, build], capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    lines = r.stdout.splitlines()
    want = ["%s 3 7.25" % b, "%s 1 42.5" % a, "---"]
    if r.returncode != 0 or sorted(lines) != sorted(want) or lines[-1] != "---":
        print("seed_costs.py exit %d, wrote:\n%s\nwanted (in any order, '---' last):\n%s\nstderr: %s" % (
            r.returncode, r.stdout, "\n".join(want), r.stderr))
        return 1
    if "1 of them renamed" not in r.stderr:
        print("the count of renamed entries is not reported: %r" % r.stderr)
        return 1
    bad = subprocess.run([sys.executable, seed, "only-one-argument"], capture_output=True, text=True)
    if bad.returncode != 2 or "usage" not in bad.stderr:
        print("a wrong call is not refused with its usage (exit %d): %r" % (bad.returncode, bad.stderr))
        return 1
    print("renamed %r -> %r; kept %r; dropped the gone test" % (fa + ": its 999 ...", a, b))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
