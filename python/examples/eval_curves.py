#!/usr/bin/env python3
"""The evaluation records of a training session as one CSV (for `mnemoscope plot`):
every valid evaluation with and without memory, and the segment count a curriculum was at.

    PYTHONPATH=python python3 python/examples/eval_curves.py SESSION_DIR OUT.csv [METRIC]

Columns: step, series ("valid" or "valid with memory zeroed"), METRIC (default accuracy), segments.
Then, e.g.:
    mnemoscope plot --csv OUT.csv --x step --y accuracy --group series --out curve
"""
import csv
import sys

from mnemoscope.framed_log import read_framed_log
from mnemoscope.session import parse_json_record


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    session, out = argv[1], argv[2]
    metric = argv[3] if len(argv) > 3 else "accuracy"
    log = read_framed_log(session + "/metrics.log")
    segments = None
    rows = []
    for payload in log.records:
        try:
            r = parse_json_record(payload)
        except ValueError:
            continue  # a record that is not JSON (the app skips it too)
        if r.get("type") == "curriculum":
            segments = r.get("to", segments)
        elif "segments" in r and r.get("type") == "run":
            segments = r["segments"]
        if r.get("type") != "eval" or r.get("split") != "valid" or r.get("final") or metric not in r:
            continue
        series = "valid with memory zeroed" if r.get("zero_memory") else "valid"
        rows.append([r["step"], series, r[metric], r.get("segments", segments if segments is not None else "")])
    if not rows:
        sys.exit(f"{session}/metrics.log has no valid evaluations with '{metric}'")
    with open(out, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["step", "series", metric, "segments"])
        w.writerows(rows)
    print(f"{len(rows)} evaluations -> {out}")


if __name__ == "__main__":
    main(sys.argv)
