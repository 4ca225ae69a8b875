"""The self-contained HTML viewer inline in Jupyter (docs/python.md#notebooks).

    import mnemoscope
    v = mnemoscope.show("doc.html")           # a file from `mnemoscope html` or the app's File > Export HTML...
    v = mnemoscope.show("steps/")             # a `mnemoscope step --out` folder: the same segments, re-stepped
    v = mnemoscope.show("runs/copy-rmt", doc="probe.txt")   # a training session: its newest checkpoint
    v                                          # a notebook cell shows it (IPython's display protocol)
    v.save("copy.html")

The viewer page is one file, viewer.html beside this module; the program embeds the same file
at build time. Its data are packed by the program only (`mnemoscope html`, app/figures/html_viewer.h):
they are the app's own numbers (the publisher's StepData, memory reads and provenance), which a
second packer in Python would have to recompute. So show() of a step folder or a session runs the
program; show() of an HTML file needs nothing but this package.
"""

import html as _html
import json
import os
import shutil
import subprocess
import tempfile

from ..errors import MnemoscopeError

VIEWER_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "viewer.html")
DATA_PLACEHOLDER = "__MNEMOSCOPE_VIEWER_DATA__"
TITLE_PLACEHOLDER = "__MNEMOSCOPE_VIEWER_TITLE__"


def viewer_template():
    """The viewer page with its two placeholders (the program's embedded copy is this file)."""
    with open(VIEWER_FILE, encoding="utf-8") as f:
        return f.read()


class Viewer:
    """One viewer page. `html`: the whole self-contained page; `_repr_html_()` puts it in an
    iframe (srcdoc, scripts allowed, nothing fetched) so a notebook shows it inline."""

    def __init__(self, html, source="", height=760):
        if "mnemo-data" not in html or DATA_PLACEHOLDER in html:
            raise MnemoscopeError("%s: not a Mnemoscope viewer page (no data block); write one with "
                                  "`mnemoscope html --doc FILE --out FILE.html`" % (source or "the page"))
        self.html = html
        self.source = source
        self.height = int(height)

    def _repr_html_(self):
        return ('<iframe title="Mnemoscope viewer" srcdoc="%s" style="width:100%%;height:%dpx;border:1px solid #ddd" '
                'sandbox="allow-scripts"></iframe>' % (_html.escape(self.html, quote=True), self.height))

    def data(self):
        """The page's data as the viewer reads them: the JSON header (docs/formats.md#html-viewer)
        with every array reference {"t", "o", "n"} replaced by a numpy array (float32, int32 or uint8)."""
        return unpack(self.html)

    def save(self, path):
        """Writes the page to `path` (refuses to replace an existing file)."""
        path = os.fspath(path)
        if os.path.exists(path):
            raise MnemoscopeError("%s exists; choose another name" % path)
        with open(path, "x", encoding="utf-8") as f:
            f.write(self.html)
        return path

    def __repr__(self):
        return "Viewer(%s, %d bytes)" % (self.source or "page", len(self.html))


def unpack(page):
    """The data block of a viewer page: base64 -> zlib -> [u32 JSON length | JSON | arrays], each
    float32 / int32 array stored as its four little-endian byte planes."""
    import base64
    import re
    import zlib

    import numpy as np

    m = re.search(r'<script id="mnemo-data" type="application/octet-stream">([^<]*)</script>', page)
    if not m:
        raise MnemoscopeError("not a Mnemoscope viewer page (no data block)")
    raw = zlib.decompress(base64.b64decode(m.group(1)))
    n = int.from_bytes(raw[:4], "little")
    meta = json.loads(raw[4:4 + n].decode("utf-8"))
    buf = np.frombuffer(raw, dtype=np.uint8, offset=4 + n)

    def array(ref):
        o, k = ref["o"], ref["n"]
        if ref["t"] == "u8":
            return buf[o:o + k].copy()
        planes = buf[o:o + 4 * k].reshape(4, k)
        return np.ascontiguousarray(planes.T).view("<f4" if ref["t"] == "f32" else "<i4").reshape(k)

    def walk(v):
        if isinstance(v, dict):
            if set(v) == {"t", "o", "n"}:
                return array(v)
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v

    return walk(meta)


def find_program(program=None):
    """The `mnemoscope` program: `program`, $MNEMOSCOPE, the checkout's build/mnemoscope, or PATH."""
    if program is not None:
        if os.path.isfile(program) and os.access(program, os.X_OK):
            return os.path.abspath(program)
        raise MnemoscopeError("program=%s is not an executable file; pass the built mnemoscope (build/mnemoscope)"
                              % program)
    cands = [os.environ.get("MNEMOSCOPE"),
             os.path.join(os.path.dirname(VIEWER_FILE), "..", "..", "..", "build", "mnemoscope"),
             shutil.which("mnemoscope")]
    for c in cands:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return os.path.abspath(c)
    raise MnemoscopeError("the `mnemoscope` program is needed to pack a step folder or a session for the viewer "
                          "(pass program=PATH or set MNEMOSCOPE); an HTML file from `mnemoscope html` needs no program")


def _run_html(program, args):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "viewer.html")
        p = subprocess.run([program, "html"] + args + ["--out", out], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True)
        if p.returncode != 0:
            raise MnemoscopeError("`mnemoscope html %s` failed (exit %d):\n%s" % (" ".join(args), p.returncode, p.stdout))
        with open(out, encoding="utf-8") as f:
            return f.read()


def show(source, doc=None, program=None, height=760, segments=None):
    """A Viewer of `source`:

    * an HTML file written by `mnemoscope html` or the app (read as is);
    * a `mnemoscope step --out` folder: its manifest's document, checkpoint, seed and segments
      stepped again by `mnemoscope html` (the same model and document give the same numbers);
    * a training session folder (or a mnemoscope.Session): its newest checkpoint over `doc`
      (default: the text of its newest probe recording).

    `segments` = (from, to) overrides the range; `program` names the mnemoscope binary."""
    from ..session import Session  # noqa: avoid an import cycle at package import
    if isinstance(source, Session):
        source = source.path
    path = os.fspath(source)
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as f:
            return Viewer(f.read(), path, height)
    if not os.path.isdir(path):
        raise MnemoscopeError("%s does not exist; pass an HTML file, a `mnemoscope step` folder or a session folder" % path)
    manifest = os.path.join(path, "manifest.json")
    if not os.path.isfile(manifest):
        raise MnemoscopeError("%s has no manifest.json: not a `mnemoscope step` folder nor a session" % path)
    with open(manifest, encoding="utf-8") as f:
        m = json.load(f)
    rng = []
    if os.path.isdir(os.path.join(path, "checkpoints")) or "format_version" in m and "document" not in m:
        from ..session import open_session
        s = open_session(path)
        steps = s.checkpoint_steps
        if not steps:
            raise MnemoscopeError("%s: the session has no checkpoint yet; wait for `train` to write one" % path)
        ckpt = s.checkpoint_path(steps[-1])
        with tempfile.TemporaryDirectory() as d:
            if doc is None:
                rec = s.recording()
                doc = os.path.join(d, "probe.txt")
                with open(doc, "wb") as f:
                    f.write(bytes(rec.document))
            if segments:
                rng = ["--from", str(segments[0]), "--to", str(segments[1])]
            page = _run_html(find_program(program), ["--doc", os.fspath(doc), "--checkpoint", ckpt] + rng)
        return Viewer(page, path, height)
    if m.get("program") != "mnemoscope" or "document" not in m:
        raise MnemoscopeError("%s: manifest.json is not one `mnemoscope step` writes" % path)
    fr, to = segments if segments else (m.get("from", 0), m.get("to", m.get("from", 0)))
    args = ["--doc", m["document"], "--seed", str(m.get("seed", 0)), "--from", str(fr), "--to", str(to)]
    if m.get("segment_len") and m.get("trained_segment_len") not in (None, m.get("segment_len")):
        args += ["--segment-len", str(m["segment_len"])]
    with tempfile.TemporaryDirectory() as d:
        if m.get("checkpoint"):
            args += ["--checkpoint", m["checkpoint"]]
        else:  # a randomly initialised model: its config, under the same seed
            cfg = os.path.join(d, "model.json")
            with open(cfg, "w", encoding="utf-8") as f:
                json.dump({"model": m.get("model", {})}, f)
            args += ["--config", cfg, "--random"]
        return Viewer(_run_html(find_program(program), args), path, height)
