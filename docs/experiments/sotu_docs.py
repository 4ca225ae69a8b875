"""Shared by the section-3 scripts of docs/experiments/text-memory.md: the State of the Union
addresses of the text task's split, made-up words, and a document scored by
`mnemoscope eval --doc --csv`."""
import bisect, csv, glob, json, os, string, subprocess, sys

DATA = os.path.expanduser("~/.cache/mnemoscope/datasets/sotu/package/data")


def addresses(data, keep):
    """Paths of the addresses whose year `keep(year)` accepts, in order; exits naming the fix
    when there are none."""
    files = [f for f in sorted(glob.glob(os.path.join(data, "*.json"))) if keep(int(os.path.basename(f)[:4]))]
    if not files:
        sys.exit(f"no SOTU addresses in {data}: bash .ci/fetch-data sotu")
    return files


def range_flag(args, flag, default, usage):
    """Takes `FLAG LO,HI` out of the argument list `args` (in place) and returns (LO, HI), or
    `default` without the flag; exits with `usage` when it is not two integers 0 < LO <= HI."""
    if flag not in args:
        return default
    i = args.index(flag)
    try:
        pair = tuple(int(v) for v in args[i + 1].split(","))
    except (IndexError, ValueError):
        sys.exit(usage)
    del args[i:i + 2]
    if len(pair) != 2 or not 0 < pair[0] <= pair[1]:
        sys.exit(usage)
    return pair


def text_of(path):
    return json.load(open(path))["text"]


def made_up_word(rng):
    """A capital and 7-13 random lower-case letters."""
    return rng.choice(string.ascii_uppercase) + "".join(rng.choices(string.ascii_lowercase, k=rng.randint(7, 13)))


def next_space(spaces, at):
    """The first entry of the sorted list `spaces` at or after `at`, or None."""
    i = bisect.bisect_left(spaces, at)
    return spaces[i] if i < len(spaces) else None


def score(binary, ckpt, doc_bytes, tmp):
    """The rows of `eval --doc --csv` (one per byte) for a document of `doc_bytes`."""
    doc, table = os.path.join(tmp, "doc.txt"), os.path.join(tmp, "doc.csv")
    with open(doc, "wb") as out:
        out.write(doc_bytes)
    subprocess.run([binary, "--threads", "1", "eval", "--checkpoint", ckpt, "--doc", doc, "--csv", table, "--json"],
                   check=True, stdout=subprocess.DEVNULL)
    return list(csv.DictReader(open(table)))
