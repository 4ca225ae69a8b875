#!/usr/bin/env python3
"""A corpus where half of every document is a copy: passages of random lower-case words
(2-9 letters, 40-60 bytes) each written twice in a row, "w1 w2 ... wn w1 w2 ... wn ". Nothing
but the copies can be predicted beyond letter and word-length frequencies (about 4.4 bits per
byte), and the second half of each passage is free to a model that reads it back from the
first by content: an induction head. It is the first stage of the copying curriculum of
docs/experiments/text-memory.md, section 6, where models trained on prose alone never learnt
to copy.

Usage: doubled_passages_corpus.py OUT_DIR [--docs N] [--bytes B] [--passage LO,HI]
(N documents, default 200, of at least B bytes each, default 50,000; passages of LO-HI bytes
before their copy, default 40,60: a copy starts 41-61 bytes after its source, more than a
32-byte segment; 8,24 puts most copies inside one; seed 0)."""
import os, random, string, sys

from sotu_docs import range_flag

args = sys.argv[1:]
passage_len = range_flag(args, "--passage", (40, 60), __doc__)
opts = {"--docs": 200, "--bytes": 50000}
for flag in list(opts):
    if flag in args:
        i = args.index(flag)
        opts[flag] = int(args[i + 1])
        del args[i:i + 2]
if len(args) != 1 or opts["--docs"] < 1 or opts["--bytes"] < 1:
    sys.exit(__doc__)
out = args[0]
if os.path.exists(out) and os.listdir(out):
    sys.exit(f"{out} is not empty: give a new or empty folder (nothing was written)")
os.makedirs(out, exist_ok=True)
rng = random.Random(0)
for f in range(opts["--docs"]):
    pieces, size = [], 0
    while size < opts["--bytes"]:
        words, n = [], 0
        target = rng.randint(*passage_len)
        while n < target:
            w = "".join(rng.choices(string.ascii_lowercase, k=rng.randint(2, 9)))
            words.append(w)
            n += len(w) + 1
        passage = " ".join(words)
        piece = passage + " " + passage + " "
        pieces.append(piece)
        size += len(piece)
    with open(os.path.join(out, f"doc{f:03d}.txt"), "w") as fh:
        fh.write("".join(pieces))
print(f"{opts['--docs']} documents of doubled passages -> {out}")
