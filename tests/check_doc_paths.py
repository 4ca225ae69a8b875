#!/usr/bin/env python3
"""Every repository path that a document or a code comment names exists, and nothing cites the
design outside the repository (docs/architecture.md, "Conventions"). Usage: check_doc_paths.py ROOT

Checked: Markdown links to relative files (README.md, docs/**.md, python/**.md), and
`top/…` paths (top = a folder of the repository) in Markdown and in source files. A path with
a placeholder (NAME, <name>, *, N, …) is checked up to the placeholder. Exit 1 listing each
missing path with its file and line."""
import os
import re
import subprocess
import sys

root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
tops = ["core", "app", "families", "viz", "kernels", "tests", "docs", "assets", "sessions", "python", "cmake", ".ci"]
files = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True, check=True).stdout.split()
if not files:  # not a checkout: walk the tree
    for d, _, fs in os.walk(root):
        if "/build" in d or "/.git" in d:
            continue
        files += [os.path.relpath(os.path.join(d, f), root) for f in fs]
src_ext = (".h", ".cpp", ".cu", ".cuh", ".sh", ".py", ".txt", ".cmake")
path_re = re.compile(r"(?<![\w./-])((?:%s)/[\w./<>*{}+-]*[\w>*}])" % "|".join(re.escape(t) for t in tops))
link_re = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
forbidden = [(re.compile(r"DESIGN\s*§"), "cites DESIGN §N (outside the repository): cite docs/architecture.md or docs/models.md"),
             (re.compile(r"\.\./shared/|(?<![\w/])papers/\w+\.txt"), "names a file outside the repository: cite docs/references.md"),
             (re.compile(r"\b[Ii]ssue\s+#?\d+"), "cites an issue number (no tracker in the repository): cite the docs")]
placeholder = re.compile(r"[<>*{}]|\b[A-Z]{2,}\b|\bN\b|\.\.\.")


def ignored(p):
    """A path git ignores is made at run time (build outputs, downloads), not shipped."""
    return any(subprocess.run(["git", "-C", root, "check-ignore", "-q", "--no-index", q]).returncode == 0
               for q in (p, p.rstrip("/") + "/"))


def exists(p, base):
    p = p.rstrip(".,;:)")
    m = placeholder.search(p)
    if m:  # check the folder part before the placeholder
        p = p[: m.start()]
        p = p[: p.rfind("/") + 1] if "/" in p else ""
        if not p:
            return True
    full = os.path.normpath(os.path.join(base, p))
    # A module named without its extension (core/io/safetensors = .h + .cpp).
    return any(os.path.exists(full + ext) for ext in ("", ".h", ".cpp", ".md", ".json", ".py", ".sh"))


missing = []
for f in files:
    if f.startswith("docs/experiments/") and "/logs/" in f:
        continue
    is_md = f.endswith(".md")
    # CMake checks its own source lists; logs are records of what was.
    if os.path.basename(f) == "CMakeLists.txt" or not (is_md or f.endswith(src_ext) or f.startswith(".ci/")):
        continue
    hash_comments = f.endswith((".sh", ".py", ".cmake")) or f.startswith(".ci/")
    full = os.path.join(root, f)
    try:
        text = open(full, encoding="utf-8").read()
    except (UnicodeDecodeError, OSError):
        continue
    in_fence = False
    for no, line in enumerate(text.splitlines(), 1):
        if is_md and line.lstrip().startswith("```"):
            in_fence = not in_fence
        for rx, why in forbidden:
            if rx.search(line) and f != "tests/check_doc_paths.py":
                missing.append(f"{f}:{no}: {why}")
        if is_md and not in_fence:
            for m in link_re.finditer(line):
                target = m.group(1)
                if re.match(r"^[a-z]+:", target) or target.startswith("mailto:"):
                    continue
                if not exists(target, os.path.dirname(full)):
                    missing.append(f"{f}:{no}: link to '{target}' that does not exist")
        if f == "tests/check_doc_paths.py":
            continue
        scan = line
        if not is_md:  # code: only its comments name paths for readers
            cut = line.find("#") if hash_comments else line.find("//")
            if cut < 0:
                continue
            scan = line[cut:]
        for m in path_re.finditer(scan):
            p = m.group(1)
            if not exists(p, root):
                # Paths made at run time (build outputs, runs, downloads) are not repository paths.
                if re.search(r"(^|/)(build|runs|out|tmp)(/|$)", p) or ignored(p.rstrip(".,;:)")):
                    continue
                missing.append(f"{f}:{no}: names '{p}', which is not in the repository")
if missing:
    print("paths named in documents and comments that do not exist (fix the path or the text):")
    print("\n".join(missing))
    sys.exit(1)
print(f"check_doc_paths: {len(files)} files, every named repository path exists")
