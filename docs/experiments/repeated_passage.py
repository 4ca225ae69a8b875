#!/usr/bin/env python3
"""Does a text model copy a passage it has read? A direct check on held-out addresses.

For the first 12 test addresses of the `sotu` corpus (years ending in 0), takes the first
3,000 bytes, copies a 48-byte passage (its start drawn in 200..1,200, seed 0) to 96-296
bytes after its end, scores the result with `mnemoscope eval --doc --csv` and prints the
mean bits of bytes 8..47 of the repeat with the memory, with it reset, and of the same bytes
at their first occurrence. A model that read the repeat from its memory would predict it far
better than the first occurrence. Usage: repeated_passage.py MNEMOSCOPE CKPT [SOTU_DATA_DIR]
[--gap LO,HI] (the repeat starts LO..HI bytes after the passage's end; default 96,296)
(docs/experiments/text-memory.md, section 3)."""
import csv, glob, json, math, os, random, subprocess, sys, tempfile

args = sys.argv[1:]
gap = (96, 296)
if "--gap" in args:
    i = args.index("--gap")
    gap = tuple(int(v) for v in args[i + 1].split(","))
    del args[i:i + 2]
binary, ckpt = args[0:2]
data = args[2] if len(args) > 2 else os.path.expanduser("~/.cache/mnemoscope/datasets/sotu/package/data")
tests = [f for f in sorted(glob.glob(os.path.join(data, "*.json"))) if int(os.path.basename(f)[:4]) % 10 == 0]
if not tests:
    sys.exit(f"no SOTU addresses in {data}: bash .ci/fetch-data sotu")
rng = random.Random(0)
n, tot = 48, {"memory": 0.0, "reset": 0.0, "first": 0.0, "count": 0}
with tempfile.TemporaryDirectory() as tmp:
    doc, table = os.path.join(tmp, "doc.txt"), os.path.join(tmp, "doc.csv")
    for f in tests[:12]:
        text = json.load(open(f))["text"].encode()[:3000]
        a = rng.randint(200, 1200)
        b = a + n + gap[0] + rng.randint(0, gap[1] - gap[0])
        with open(doc, "wb") as out:
            out.write(text[:b] + text[a:a + n] + text[b:])
        subprocess.run([binary, "--threads", "1", "eval", "--checkpoint", ckpt, "--doc", doc, "--csv", table, "--json"],
                       check=True, stdout=subprocess.DEVNULL)
        rows = list(csv.DictReader(open(table)))
        for i in range(b + 8, b + n):
            tot["memory"] += float(rows[i]["nats_memory"])
            tot["reset"] += float(rows[i]["nats_reset"])
            tot["first"] += float(rows[a + i - b]["nats_memory"])
            tot["count"] += 1
k = tot["count"] * math.log(2)
print(f"bytes 8..47 of the repeat ({tot['count']} bytes): memory {tot['memory'] / k:.3f} bits/byte, "
      f"reset {tot['reset'] / k:.3f}; the same bytes at their first occurrence {tot['first'] / k:.3f}")
