#!/usr/bin/env python3
"""A training corpus that rewards copying and nothing else: the State of the Union addresses
of the training split (years ending in neither 0 nor 5), each with made-up words inserted -
a capital and 7-13 random lower-case letters, which no model can predict from the language -
every one repeated 48-112 bytes later (--gap LO,HI), both times between words. A made-up
word's repeat costs about 4.7 bits per letter unless the model reads it back from what it
holds, so the only way to lower the loss on it is retrieval by content (an induction head).
The held-out addresses are not written: evaluate on the real corpus (`eval --doc`,
repeated_passage.py).

Usage: random_repeats_corpus.py OUT_DIR [SOTU_DATA_DIR] [--every BYTES] [--gap LO,HI]
       [--no-prose]
(one pair per BYTES of text, default 160; the second mention LO-HI bytes after the first,
default 48,112, drawn once per pair with --gap; seed 0; --no-prose: in place of each address,
as many bytes of random lower-case words of 2-9 letters, so that the made-up words' repeats are
the only structure beyond letter frequencies; docs/experiments/text-memory.md, section 3)."""
import os, random, string, sys

from sotu_docs import DATA, addresses, made_up_word, next_space, range_flag, text_of

args = sys.argv[1:]
every = 160
no_prose = "--no-prose" in args
if no_prose:
    args.remove("--no-prose")
if "--every" in args:
    i = args.index("--every")
    every = int(args[i + 1])
    del args[i:i + 2]
legacy_gap = "--gap" not in args
gap = range_flag(args, "--gap", (48, 112), __doc__)
if not args:
    sys.exit(__doc__)
out = args[0]
files = addresses(args[1] if len(args) > 1 else DATA, lambda year: year % 5 != 0)
os.makedirs(out, exist_ok=True)
rng = random.Random(0)
pairs = 0
for f in files:
    text = text_of(f)
    if no_prose:
        words, size = [], 0
        while size < len(text):
            words.append("".join(rng.choices(string.ascii_lowercase, k=rng.randint(2, 9))))
            size += len(words[-1]) + 1
        text = " ".join(words)
    spaces = [i for i, c in enumerate(text) if c == " "]
    inserts = {}  # position of a space -> word to put after it
    at = 0
    while True:
        at += rng.randint(every // 2, every * 3 // 2)
        first = next_space(spaces, at)
        if first is None:
            break
        # Without --gap, the gap is drawn anew for each space tried (one draw per space from the
        # text's start), which favours the short end of 48-112: kept as the documented corpus and
        # figures were made. With --gap, one draw per pair: the gaps spread evenly over LO-HI.
        if legacy_gap:
            second = next((s for s in spaces if s >= first + rng.randint(*gap)), None)
        else:
            second = next_space(spaces, first + rng.randint(*gap))
        if second is None:
            break
        word = made_up_word(rng)
        inserts[first] = word
        inserts[second] = word
        pairs += 1
        at = second
    pieces, last = [], 0
    for s in sorted(inserts):
        pieces.append(text[last:s + 1] + inserts[s] + " ")
        last = s + 1
    pieces.append(text[last:])
    with open(os.path.join(out, os.path.basename(f)[:-5] + ".txt"), "w") as w:
        w.write("".join(pieces))
print(f"{len(files)} training addresses, {pairs} made-up words each written twice -> {out}")
