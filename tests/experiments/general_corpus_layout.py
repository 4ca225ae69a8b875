#!/usr/bin/env python3
"""ctest general_corpus_layout: .ci/general_corpus.py, the builder of the `general` corpus
(docs/datasets.md#general).

- The layout rule on hand-made text: greedy wrap at 72 columns between words, a long word on a
  line of its own, whitespace runs as one space; paragraphs of whole sentences ending at the
  first sentence end at or after 480 characters; blank lines between paragraphs.
- The split rule: index % 10 == 0 test, 5 valid; last digit for years and chapters.
- Determinism: two builds of the same (made-up) sources give the same bytes and MANIFEST, every
  genre is written, every file ends with one newline and holds no carriage return; a non-empty
  output folder is refused.
- The cached corpus, when there: every file's sha256 is the one its MANIFEST lists and the
  MANIFEST's own sha256 is the pin in .ci/fetch-general (reported skipped, exit 77, only when
  the cache has no general corpus and everything else passed).
Usage: general_corpus_layout.py SOURCE_DIR"""
import hashlib, json, os, re, stat, subprocess, sys, tempfile

root = sys.argv[1]
sys.path.insert(0, os.path.join(root, ".ci"))
import general_corpus as g  # noqa: E402

fail = []


def check(cond, what):
    if not cond:
        fail.append(what)


# Wrap.
words = "the quick brown fox jumps over the lazy dog".split()
text = " ".join(words * 5)
wrapped = g.wrap(text)
lines = wrapped.split("\n")
check(all(len(l) <= 72 for l in lines), "a wrapped line is longer than 72")
check(" ".join(lines) == text, "wrapping changed the words")
for a, b in zip(lines, lines[1:]):
    check(len(a) + 1 + len(b.split()[0]) > 72, f"greedy: '{b.split()[0]}' would have fit on '{a}'")
check(g.wrap("a  b\tc\n d") == "a b c d", "whitespace runs are one space")
long = "x" * 80
check(g.wrap("ab " + long + " cd") == "ab\n" + long + "\ncd", "a long word keeps a line of its own")
# Paragraphs of sentences.
s = "Alpha beta gamma delta. " * 30  # 24-character sentences
paras = g.paragraphs_of_sentences(s.strip())
check(len(paras) == 2, f"paragraphs: {len(paras)} (want 2: 21 sentences, the first end at 480 or more, then the rest)")
check(all(p.endswith(".") for p in paras), "a paragraph does not end at a sentence end")
check(len(paras[0]) == 503 and paras[0].count(".") == 21, f"first paragraph {len(paras[0])} characters")
check(g.paragraphs_of_sentences("Mr. smith came. " * 40)[0].endswith("came."),
      "a period before a lower-case word is no sentence end")
check(g.paragraphs_of_sentences('He said "Go." Then ' + "x" * 500 + ". End") ==
      ['He said "Go." Then ' + "x" * 500 + ".", "End"], "closing quote after the period")
check(g.layout(["a b", "", "c"]) == "a b\n\nc\n", "layout: blank line between, one newline at the end")
check(g.tidy("a \r\nb\r\n\n\n") == "a\nb\n", "tidy")
# Split rule.
check([g.split_of_index(i) for i in (0, 1, 5, 10, 15, 19)] == ["test", "train", "valid", "test", "valid", "train"],
      "split_of_index")
check([g.split_of_last_digit(y) for y in (1790, 1795, 1791)] == ["test", "valid", "train"], "split_of_last_digit")


def fake_sources(d):
    """Sources shaped like the packages, small."""
    data = os.path.join(d, "sotu", "package", "data")
    os.makedirs(data)
    for y in range(1790, 1812):
        json.dump({"year": y, "name": f"P {y}", "party": "n", "text": f"Sentence one of {y}. " * 60},
                  open(os.path.join(data, f"{y}_p_n.json"), "w"))
    data = os.path.join(d, "moby-dick", "package", "data")
    os.makedirs(data)
    for n in range(1, 13):
        json.dump({"chapter": str(n), "title": f"T{n}", "text": f"Para {n} " * 40 + "\n\n" + "Second para. " * 20},
                  open(os.path.join(data, f"chapter_{n}.json"), "w"))
    bible = os.path.join(d, "bible", "usr", "bin")
    os.makedirs(bible)
    os.makedirs(os.path.join(d, "bible", "usr", "lib"))
    prog = os.path.join(bible, "bible")
    with open(prog, "w") as w:
        w.write("#!/bin/sh\n# args: -p DIR -l 72 REF\nprintf '\\n%s\\n\\n  1 In the beginning of the book %s there was text\\r\\nand more text, enough of it to pass the check of the builder, which wants two hundred bytes or more of each book it is given.\\n  2 And more.\\n' \"$5\" \"$5\"\n")
    os.chmod(prog, os.stat(prog).st_mode | stat.S_IEXEC)
    f = os.path.join(d, "fortunes", "usr", "share", "games", "fortunes")
    os.makedirs(f)
    for name in ("ascii-art", "art", "love", "zen"):
        open(os.path.join(f, name + ".u8"), "w").write(f"A {name} saying\n\t\t-- Someone\n%\nAnother one\n")
        open(os.path.join(f, name), "w").write("latin-1 twin, not read\n")
    j = os.path.join(d, "jargon", "usr", "share", "doc", "jargon-text")
    os.makedirs(j)
    import gzip
    with gzip.open(os.path.join(j, "jargon.txt.gz"), "wt") as w:
        w.write("\n\n".join(f"entry {i}\n   what it means " + "z" * 300 for i in range(300)))
    for group in ("easy-ham-1", "easy-ham-2"):
        m = os.path.join(d, "spam", "package", "data", group)
        os.makedirs(m)
        for i in range(120):
            body = f"Hello list,\n\nmessage {i} of {group} says something useful here.\n" if i % 7 else "<html>x</html>"
            raw = f"From: a@b.c\nSubject: topic {i}\nContent-Type: text/plain\n\n{body}"
            json.dump({"id": str(i), "group": group, "text": raw}, open(os.path.join(m, f"{i:05d}.x.json"), "w"))


with tempfile.TemporaryDirectory() as tmp:
    src = os.path.join(tmp, "src")
    fake_sources(src)
    outs = []
    for k in range(2):
        out = os.path.join(tmp, f"out{k}")
        r = subprocess.run([sys.executable, os.path.join(root, ".ci", "general_corpus.py"), src, out],
                           capture_output=True, text=True)
        check(r.returncode == 0, f"build {k} failed: {r.stderr[-500:]}")
        outs.append(out)
    if not fail:
        m0 = open(os.path.join(outs[0], "MANIFEST")).read()
        check(m0 == open(os.path.join(outs[1], "MANIFEST")).read(), "two builds differ")
        genres = set()
        for line in m0.splitlines():
            sha, n, rel = line.split("  ")
            data = open(os.path.join(outs[0], rel), "rb").read()
            check(hashlib.sha256(data).hexdigest() == sha and len(data) == int(n), f"MANIFEST wrong for {rel}")
            check(data.endswith(b"\n") and not data.endswith(b"\n\n") and b"\r" not in data, f"{rel}: line ends")
            genres.add(rel.split("/")[1])
            check(rel.split("/")[0] in ("train", "valid", "test"), f"{rel}: not in a split folder")
        check(genres == {x for x, _ in g.GENRES}, f"genres written: {sorted(genres)}")
        check(not any("ascii-art" in l for l in m0.splitlines()), "ascii-art was not left out")
        check(os.path.exists(os.path.join(outs[0], "test", "speeches", "1790_p_n.txt")), "1790 is not test")
        check(not os.path.exists(os.path.join(outs[0], "train", "speeches", "1792_p_n.txt")),
              "an even-year training address was kept")
        mail = open(os.path.join(outs[0], "test", "mail", "mail-000.txt")).read()
        check(mail.startswith("Subject: topic 1\n\nHello list,") and "<html" not in mail and "From:" not in mail,
              "mail layout")
        r = subprocess.run([sys.executable, os.path.join(root, ".ci", "general_corpus.py"), src, outs[0]],
                           capture_output=True, text=True)
        check(r.returncode != 0 and "is not empty" in r.stderr + r.stdout, "a non-empty output folder was not refused")

# The cached corpus.
base = os.environ.get("MNEMO_DATA_DIR") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "mnemoscope", "datasets")
pkg = os.path.join(base, "general", "package")
cached = os.path.exists(os.path.join(base, "general", ".complete"))
if cached:
    pin = re.search(r'corpus_sha="([0-9a-f]{64})"', open(os.path.join(root, ".ci", "fetch-general")).read()).group(1)
    manifest = open(os.path.join(pkg, "MANIFEST"), "rb").read()
    check(hashlib.sha256(manifest).hexdigest() == pin, "the cached MANIFEST is not the pinned one")
    for line in manifest.decode().splitlines():
        sha, n, rel = line.split("  ")
        check(hashlib.sha256(open(os.path.join(pkg, rel), "rb").read()).hexdigest() == sha, f"cached {rel} changed")

if fail:
    print("FAILED:\n  " + "\n  ".join(fail[:20]))
    sys.exit(1)
if not cached:
    print(f"skipped: the builder's checks passed; no general corpus in {base} to check (bash .ci/fetch-data general)")
    sys.exit(77)
print("ok: layout, split, determinism and the cached corpus")
