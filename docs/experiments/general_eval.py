#!/usr/bin/env python3
"""A text model on the held-out documents of the `general` corpus (docs/datasets.md#general), by
genre: bits per byte with the memory carried across each document, reset to its initial value at
every segment, and zeroed; what a line break costs; and whether the slots read a made-up name back
from two or more segments earlier.

Each document is scored whole, as `mnemoscope eval --doc FILE --csv` scores a user's file
(--max-bytes N: its first N bytes only). Made-up names: in the first 3,000 bytes of the first
NAMES_DOCS documents of each genre, a made-up word (a capital and 7-13 random lower-case letters,
seed 1) after a space every 150-450 bytes, repeated after the first space 64-112 bytes later (two
or more 32-byte segments back: out of the decoder's view of the previous segment); the mean bits
of its letters 2.. at the second mention, with the memory carried and reset.

Usage: general_eval.py MNEMOSCOPE CKPT [--split test|valid] [--max-bytes N] [--json OUT]
       [--names-docs K] [--no-names]
Prints a Markdown table; --json writes every figure.
"""
import csv, glob, json, math, os, random, subprocess, sys, tempfile

from sotu_docs import made_up_word, next_space  # the made-up words of section 3, drawn the same way

GENRES = ["speeches", "novel", "scripture", "fortunes", "jargon", "mail"]
BITS = 1 / math.log(2)


def flag(args, name, default, cast=str):
    if name not in args:
        return default
    i = args.index(name)
    v = cast(args[i + 1])
    del args[i:i + 2]
    return v


def corpus_dir():
    base = os.environ.get("MNEMO_DATA_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "mnemoscope", "datasets")
    d = os.path.join(base, "general", "package")
    if not os.path.exists(os.path.join(base, "general", ".complete")):
        sys.exit(f"no general corpus in {base}: bash .ci/fetch-data general")
    return d


def score(binary, ckpt, path, tmp):
    table = os.path.join(tmp, "doc.csv")
    subprocess.run([binary, "--threads", "1", "eval", "--checkpoint", ckpt, "--doc", path, "--csv", table, "--json"],
                   check=True, stdout=subprocess.DEVNULL)
    return list(csv.DictReader(open(table)))


def with_names(text, rng):
    """text with made-up word pairs; returns (new text bytes, [(first, second, length)] byte offsets)."""
    spaces = [i for i, c in enumerate(text) if c == " "]
    out, size, words, last, at = [], 0, [], 0, 0
    while True:
        at += rng.randint(150, 450)
        first = next_space(spaces, at)
        second = None if first is None else next_space(spaces, first + rng.randint(64, 112))
        if second is None:
            break
        word = made_up_word(rng)
        pair = []
        for s in (first, second):
            prefix = text[last:s + 1]
            size += len(prefix.encode("utf-8"))
            pair.append(size)
            out += [prefix, word + " "]
            size += len(word) + 1
            last = s + 1
        words.append((pair[0], pair[1], len(word)))
        at = second
    out.append(text[last:])
    return "".join(out).encode("utf-8"), words


def main():
    args = sys.argv[1:]
    split = flag(args, "--split", "test")
    max_bytes = flag(args, "--max-bytes", 0, int)
    out_json = flag(args, "--json", "")
    names_docs = flag(args, "--names-docs", 2, int)
    no_names = "--no-names" in args
    if no_names:
        args.remove("--no-names")
    if len(args) != 2:
        sys.exit(__doc__)
    binary, ckpt = args
    root = corpus_dir()
    result = {"checkpoint": ckpt, "split": split, "max_bytes": max_bytes, "genres": {}}
    rng = random.Random(1)
    with tempfile.TemporaryDirectory() as tmp:
        for genre in GENRES:
            files = sorted(glob.glob(os.path.join(root, split, genre, "*.txt")))
            g = {"documents": len(files), "bytes": 0, "nats": [0.0, 0.0, 0.0], "newlines": 0, "newline_nats": 0.0,
                 "name_letters": 0, "name_nats": [0.0, 0.0], "first_nats": 0.0}
            for k, f in enumerate(files):
                whole = open(f, "rb").read()
                data = whole[:max_bytes] if max_bytes else whole
                path = os.path.join(tmp, "doc.txt")
                open(path, "wb").write(data)
                for row in score(binary, ckpt, path, tmp):
                    w = float(row["nats_memory"])
                    if math.isnan(w):
                        continue
                    g["bytes"] += 1
                    for i, key in enumerate(("nats_memory", "nats_reset", "nats_zeroed")):
                        g["nats"][i] += float(row[key])
                    if int(row["byte"]) == 10:
                        g["newlines"] += 1
                        g["newline_nats"] += w
                if no_names or k >= names_docs:
                    continue
                text = whole[:3000].decode("utf-8", "ignore")
                named, words = with_names(text, rng)
                open(path, "wb").write(named)
                rows = score(binary, ckpt, path, tmp)
                for a, b, n in words:
                    assert int(rows[b]["byte"]) == named[b] and 65 <= named[b] <= 90, "rows != bytes"
                    for i in range(1, n):
                        g["name_letters"] += 1
                        g["name_nats"][0] += float(rows[b + i]["nats_memory"])
                        g["name_nats"][1] += float(rows[b + i]["nats_reset"])
                        g["first_nats"] += float(rows[a + i]["nats_memory"])
            n = max(g["bytes"], 1)
            summary = {"documents": g["documents"], "bytes": g["bytes"],
                       "bits_per_byte": g["nats"][0] / n * BITS, "reset": g["nats"][1] / n * BITS,
                       "zeroed": g["nats"][2] / n * BITS,
                       "newlines": g["newlines"],
                       "newline_bits": g["newline_nats"] / max(g["newlines"], 1) * BITS if g["newlines"] else None}
            if g["name_letters"]:
                m = g["name_letters"]
                summary.update({"name_letters": m, "name_bits": g["name_nats"][0] / m * BITS,
                                "name_bits_reset": g["name_nats"][1] / m * BITS, "first_bits": g["first_nats"] / m * BITS})
            result["genres"][genre] = {**summary, "_sums": g}
            print(f"{genre}: {json.dumps(summary)}", file=sys.stderr)
    tot = [sum(result["genres"][x]["_sums"]["nats"][i] for x in GENRES) for i in range(3)]
    nb = sum(result["genres"][x]["_sums"]["bytes"] for x in GENRES)
    nl = sum(result["genres"][x]["_sums"]["newlines"] for x in GENRES)
    nln = sum(result["genres"][x]["_sums"]["newline_nats"] for x in GENRES)
    ml = sum(result["genres"][x]["_sums"]["name_letters"] for x in GENRES)
    mn = [sum(result["genres"][x]["_sums"]["name_nats"][i] for x in GENRES) for i in range(2)]
    # The mean over genres (each genre weighs the same) and over bytes.
    result["mean_of_genres"] = sum(result["genres"][x]["bits_per_byte"] for x in GENRES) / len(GENRES)
    result["all_bytes"] = {"bytes": nb, "bits_per_byte": tot[0] / nb * BITS, "reset": tot[1] / nb * BITS,
                           "zeroed": tot[2] / nb * BITS, "newline_bits": nln / max(nl, 1) * BITS, "newlines": nl}
    if ml:
        result["names"] = {"letters": ml, "bits": mn[0] / ml * BITS, "bits_reset": mn[1] / ml * BITS}
    for x in GENRES:
        del result["genres"][x]["_sums"]
    print(f"| genre | docs | bytes | bits/byte | reset (saves) | zeroed (saves) | line break, bits | made-up name 64-112 B back: memory / reset |")
    print("|---|---|---|---|---|---|---|---|")
    for x in GENRES:
        r = result["genres"][x]
        nb_ = f"{r['newline_bits']:.2f}" if r["newline_bits"] is not None else "-"
        names = f"{r['name_bits']:.2f} / {r['name_bits_reset']:.2f}" if "name_bits" in r else "-"
        print(f"| {x} | {r['documents']} | {r['bytes']:,} | {r['bits_per_byte']:.4f} | {r['reset']:.4f} "
              f"({r['reset'] - r['bits_per_byte']:+.4f}) | {r['zeroed']:.4f} ({r['zeroed'] - r['bits_per_byte']:+.4f}) "
              f"| {nb_} | {names} |")
    a = result["all_bytes"]
    names = f"{result['names']['bits']:.2f} / {result['names']['bits_reset']:.2f}" if "names" in result else "-"
    print(f"| all (by bytes) | | {a['bytes']:,} | {a['bits_per_byte']:.4f} | {a['reset']:.4f} ({a['reset'] - a['bits_per_byte']:+.4f}) "
          f"| {a['zeroed']:.4f} ({a['zeroed'] - a['bits_per_byte']:+.4f}) | {a['newline_bits']:.2f} | {names} |")
    print(f"| mean of genres | | | {result['mean_of_genres']:.4f} | | | | |")
    if out_json:
        json.dump(result, open(out_json, "w"), indent=1)


if __name__ == "__main__":
    main()
