#!/usr/bin/env python3
"""Turns the metrics.log of training sessions (mnemoscope train --out DIR) into one CSV of
curves for `mnemoscope plot`: run,step,train_loss,valid_loss,valid_bits, and
valid_bits_zero_memory when a session evaluated with the memory zeroed.

    python3 docs/experiments/curves.py OUT.csv NAME=DIR [NAME=DIR ...] [--smooth N]

train_loss is the mean of the training losses of the last N steps (default 25) at each
step that is a multiple of N; valid rows come from the periodic evaluations (not the
final ones)."""
import json, math, struct, sys

def records(path):
    """The JSON records of a framed metrics.log (core/io/framed_log.h): u32 length, u32 crc,
    payload, u32 crc; stops at a torn tail."""
    data = open(path, "rb").read()
    i = 0
    while i + 8 <= len(data):
        (n,) = struct.unpack_from("<I", data, i)
        if i + 8 + n + 4 > len(data):
            break
        yield json.loads(data[i + 8:i + 8 + n].decode("utf-8"))
        i += 8 + n + 4

def main(argv):
    smooth = 25
    if "--smooth" in argv:
        i = argv.index("--smooth"); smooth = int(argv[i + 1]); del argv[i:i + 2]
    out, runs = argv[0], [a.split("=", 1) for a in argv[1:]]
    rows = []
    for name, d in runs:
        window = []
        if True:
            for j in records(d + "/metrics.log"):
                if j.get("type") == "step":
                    window.append(j["loss"])
                    if j["step"] % smooth == 0:
                        rows.append((name, j["step"], sum(window) / len(window), "", "", ""))
                        window = []
                elif j.get("type") == "eval" and not j.get("final") and j.get("split") == "valid":
                    bits = j["loss"] / math.log(2)
                    if j.get("zero_memory"):
                        rows.append((name, j["step"], "", "", "", bits))
                    else:
                        rows.append((name, j["step"], "", j["loss"], bits, ""))
    # The evaluations with the memory zeroed get a column of their own, written only when a
    # session has them (a model with no recurrent memory has none).
    cols = 6 if any(r[5] != "" for r in rows) else 5
    with open(out, "w") as f:
        f.write("run,step,train_loss,valid_loss,valid_bits" + (",valid_bits_zero_memory" if cols == 6 else "") + "\n")
        for r in rows:
            r = r[:cols]
            f.write(",".join(x if isinstance(x, str) else ("%d" % x if isinstance(x, int) else "%.6f" % x) for x in r) + "\n")

if __name__ == "__main__":
    main(sys.argv[1:])
