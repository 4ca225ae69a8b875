#!/usr/bin/env python3
"""seed_costs.py COSTS BUILD_DIR: prints ctest's timing file (Testing/Temporary/CTestCostData.txt)
for BUILD_DIR's tests from COSTS (tests/ci/ctest_costs.txt, a measured run's), which .ci/run
seeds a fresh build folder with so that `ctest -j` starts the long tests first.

A file's grouped test is named with its case count ("core/test_rmt.cpp: its 12 test cases in one
process"), so adding a case renames it, and ctest, which matches names exactly, would start the
renamed test last as if it cost nothing. An entry whose name no test has any more is given to the
test of the same file ("FILE: its N test cases ..." with the same ending) when there is one;
entries for tests that are gone are left out. Prints how many entries it renamed on stderr."""

import json
import re
import subprocess
import sys

GROUPED = re.compile(r"^(.*): its \d+ test cases in one process(.*)$")


def main(argv):
    if len(argv) != 3:
        print("usage: seed_costs.py COSTS BUILD_DIR  (prints the timing file on stdout)", file=sys.stderr)
        return 2
    costs, build = argv[1], argv[2]
    info = json.loads(subprocess.run(["ctest", "--show-only=json-v1"], cwd=build, check=True,
                                     capture_output=True, text=True).stdout)
    names = [t["name"] for t in info["tests"]]
    current = set(names)
    by_file = {}
    for n in names:
        m = GROUPED.match(n)
        if m:
            by_file[(m.group(1), m.group(2))] = n
    exact, moved = {}, {}
    with open(costs, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line == "---":
                break
            parts = line.rsplit(" ", 2)
            if len(parts) != 3:
                continue
            if parts[0] in current:
                exact[parts[0]] = parts[1:]
                continue
            m = GROUPED.match(parts[0])
            name = by_file.get((m.group(1), m.group(2))) if m else None
            if name is not None:
                moved[name] = parts[1:]
    renamed = {n: v for n, v in moved.items() if n not in exact}  # a test's own entry wins
    out = ["%s %s %s" % (n, v[0], v[1]) for n, v in list(exact.items()) + list(renamed.items())]
    sys.stdout.write("\n".join(out + ["---"]) + "\n")
    print("seed_costs: %d timings, %d of them renamed to their file's test of today" % (len(out), len(renamed)),
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
