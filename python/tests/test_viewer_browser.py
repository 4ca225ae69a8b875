"""The exported HTML viewer in a real browser (docs/gui.md#html-export): Debian's chromium,
headless, loads a page written by `mnemoscope html` from a file with every network request
refused and none made; hovering tokens and heatmap cells (real mouse events through the
DevTools protocol) shows the values of `mnemoscope step`'s traces for the same document and
model; the arrow keys and p / n step through the segments; a screenshot shows the panels drawn.

Skipped (exit 77) when chromium, numpy, the built program or the zoo's default model is missing.
MNEMO_VIEWER_SCREENSHOT=FILE keeps the screenshot."""

import base64
import json
import os
import re
import select
import shutil
import struct
import subprocess
import sys
import time
import unittest
import zlib

import harness

harness.require_numpy()
import numpy as np  # noqa: E402

import mnemoscope  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
PROGRAM = harness.tool("MNEMOSCOPE_BIN")
SOURCE = os.environ.get("MNEMO_SOURCE_DIR", os.path.dirname(harness.PACKAGE_ROOT))
DEFAULT_MODEL = os.path.join(SOURCE, "assets", "models", "memformer-general.safetensors")
TEXT = (b"Call me Ishmael. Some years ago - never mind how long precisely - having little or no money in my purse, "
        b"and nothing particular to interest me on shore, I thought I would sail about a little and see the watery "
        b"part of the world.\nIt is a way I have of driving off the spleen.\n")

if not CHROMIUM:
    harness.skip_all("chromium is not installed; install it (bash .ci/setup does, unless MNEMO_BROWSER=OFF)")
if not PROGRAM:
    harness.skip_all("the built mnemoscope program is not here (MNEMOSCOPE_BIN; run through ctest)")
if not os.path.exists(DEFAULT_MODEL):
    harness.skip_all("assets/models/memformer-general.safetensors is not in this checkout (the zoo)")


class Browser:
    """Chromium headless, driven over --remote-debugging-pipe (fd 3: commands in, fd 4: events
    out, NUL-separated JSON): no port, nothing to find on the network."""

    def __init__(self, profile):
        to_child_r, self._w = os.pipe()
        self._r, from_child_w = os.pipe()

        def fds():
            os.dup2(to_child_r, 3)
            os.dup2(from_child_w, 4)

        args = [CHROMIUM, "--headless", "--disable-gpu", "--no-sandbox", "--remote-debugging-pipe",
                "--user-data-dir=" + profile, "--no-first-run", "--no-default-browser-check",
                "--disable-extensions", "--disable-background-networking", "--disable-sync",
                "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND",  # nothing reaches a network
                "--window-size=1500,1100", "--force-device-scale-factor=1", "about:blank"]
        self.proc = subprocess.Popen(args, pass_fds=(3, 4), preexec_fn=fds, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        os.close(to_child_r)
        os.close(from_child_w)
        self._buf = b""
        self._id = 0
        self.events = []
        self.session = None

    def close(self):
        try:
            self.send("Browser.close", session=False, wait=False)
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._w)
        os.close(self._r)

    def _read_message(self, timeout):
        end = time.time() + timeout
        while b"\0" not in self._buf:
            left = end - time.time()
            if left <= 0 or self.proc.poll() is not None:
                raise RuntimeError("chromium did not answer within %.0f s (exit %s)" % (timeout, self.proc.poll()))
            ready, _, _ = select.select([self._r], [], [], left)
            if ready:
                chunk = os.read(self._r, 1 << 20)
                if not chunk:
                    raise RuntimeError("chromium closed its DevTools pipe")
                self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg.decode("utf-8"))

    def send(self, method, params=None, session=True, wait=True, timeout=60):
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self._w, json.dumps(msg).encode("utf-8") + b"\0")
        if not wait:
            return None
        while True:
            m = self._read_message(timeout)
            if m.get("id") == self._id:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            self.events.append(m)

    def open(self, url):
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True}, session=False)["sessionId"]
        self.send("Network.enable")
        self.send("Page.enable")
        self.send("Emulation.setDeviceMetricsOverride", {"width": 1500, "height": 1100, "deviceScaleFactor": 1,
                                                           "mobile": False})
        self.send("Page.navigate", {"url": url})

    def eval(self, expr):
        r = self.send("Runtime.evaluate", {"expression": expr, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in r:
            raise RuntimeError("JavaScript failed: %s\n%s" % (expr, r["exceptionDetails"]))
        return r["result"].get("value")

    def wait_for(self, expr, timeout=60):
        end = time.time() + timeout
        while time.time() < end:
            v = self.eval(expr)
            if v:
                return v
            time.sleep(0.1)
        raise AssertionError("timed out waiting for %s" % expr)

    def mouse(self, x, y, kind="mouseMoved"):
        self.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left" if kind != "mouseMoved" else "none",
                                               "clickCount": 1 if kind != "mouseMoved" else 0})

    def click(self, x, y):
        self.mouse(x, y)
        self.mouse(x, y, "mousePressed")
        self.mouse(x, y, "mouseReleased")

    def key(self, key, code, vk):
        for kind in ("keyDown", "keyUp"):
            self.send("Input.dispatchKeyEvent", {"type": kind, "key": key, "code": code, "windowsVirtualKeyCode": vk,
                                                 "nativeVirtualKeyCode": vk})


def decode_png(data):
    """An 8-bit RGB / RGBA PNG (what chromium writes) as [h, w, channels] uint8."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6), "PNG of depth %d, colour type %d" % (depth, ctype)
            ch = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * ch
    out = np.zeros((h, stride), dtype=np.int32)
    prev = np.zeros(stride, dtype=np.int32)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = np.frombuffer(raw, dtype=np.uint8, count=stride, offset=y * (stride + 1) + 1).astype(np.int32)
        cur = np.zeros(stride, dtype=np.int32)
        if f in (0, 2):
            cur = (line + (prev if f == 2 else 0)) & 255
        else:
            for i in range(stride):
                a = cur[i - ch] if i >= ch else 0
                b = prev[i]
                c = prev[i - ch] if i >= ch else 0
                if f == 1:
                    pred = a
                elif f == 3:
                    pred = (a + b) >> 1
                else:
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                cur[i] = (line[i] + pred) & 255
        out[y] = cur
        prev = cur
    return out.reshape(h, w, ch).astype(np.uint8)


class ViewerInBrowser(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = harness.temp_dir("viewer")
        cls.doc = os.path.join(cls.dir, "doc.txt")
        with open(cls.doc, "wb") as f:
            f.write(TEXT)
        cls.page = os.path.join(cls.dir, "doc.html")
        r = subprocess.run([PROGRAM, "html", "--doc", cls.doc, "--from", "0", "--to", "4", "--out", cls.page],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
        assert r.returncode == 0, r.stdout
        cls.steps = os.path.join(cls.dir, "steps")
        r = subprocess.run([PROGRAM, "step", "--doc", cls.doc, "--from", "0", "--to", "4", "--benefit", "--format", "csv",
                            "--out", cls.steps], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
        assert r.returncode == 0, r.stdout
        cls.traces = {t.segment: t for t in mnemoscope.read_traces(cls.steps)}
        cls.L = cls.traces[0]["input.tokens"].shape[1]
        cls.browser = Browser(os.path.join(cls.dir, "profile"))
        cls.browser.open("file://" + cls.page)
        cls.browser.wait_for("document.body && (document.body.dataset.ready || document.body.dataset.error)")
        err = cls.browser.eval("document.body.dataset.error || ''")
        assert not err, "the viewer failed to start: " + err

    @classmethod
    def tearDownClass(cls):
        cls.browser.close()

    def center(self, selector):
        r = self.browser.eval("(() => { const e = document.querySelector(%s); if (!e) return null; e.scrollIntoView({block: 'center'});"
                              " const b = e.getBoundingClientRect(); return [b.left + b.width / 2, b.top + b.height / 2]; })()"
                              % json.dumps(selector))
        self.assertIsNotNone(r, "no element %s on the page" % selector)
        return r

    def tip(self):
        return self.browser.eval("document.getElementById('tip').textContent")

    def segment(self):
        return int(self.browser.eval("document.body.dataset.segment"))

    def go_to(self, seg):
        self.browser.eval("document.getElementById('seg-slider').value = %d;"
                          "document.getElementById('seg-slider').dispatchEvent(new Event('input'))" % seg)
        self.assertEqual(self.segment(), seg)

    def test_1_offline(self):
        """Nothing but the file itself was requested, and the page names no other resource."""
        urls = [e["params"]["request"]["url"] for e in self.browser.events if e.get("method") == "Network.requestWillBeSent"]
        self.assertTrue(urls, "the browser reported no request at all")
        self.assertEqual({u for u in urls if not u.startswith("data:")}, {"file://" + self.page})
        with open(self.page, encoding="utf-8") as f:
            html = f.read()
        self.assertIsNone(re.search(r"https?://|\ssrc=|\shref=|url\(", html))

    def test_2_token_hover_shows_the_trace_losses(self):
        """Hovering tokens shows 'loss %.4f nats' and the memory saved, from lm.loss* of the step
        that predicts the token (Memformer: token (s+1)L + j is row j of segment s's step)."""
        L = self.L
        for seg, j in ((0, 3), (1, 0), (2, 17), (3, L - 1)):
            t = (seg + 1) * L + j
            tr = self.traces[seg]
            loss = np.float32(tr["lm.loss"][0, j])
            reset = np.float32(tr["lm.loss_memory_reset"][0, j])
            zeroed = np.float32(tr["lm.loss_memory_zeroed"][0, j])
            ln2 = np.float32(np.log(np.float32(2)))
            self.go_to(seg + 1)  # the token's own segment is shown (its losses are known from every step anyway)
            x, y = self.center('#doc span[data-t="%d"]' % t)
            self.browser.mouse(x, y)
            tip = self.tip()
            self.assertIn("token #%d  (segment %d, position %d)" % (t, seg + 1, j), tip)
            b = TEXT[t]
            label = {32: "\u2423", 10: "\u21b5", 9: "\\t"}.get(b, chr(b) if 32 < b < 127 else "\\x%02X" % b)
            self.assertIn("id %d, bytes 0x%02X  '%s'" % (b, b, label), tip)  # as the app's describe_bytes, token_text
            want = "loss %.4f nats = %.4f bits (predicted at the step of segment %d)" % (loss, np.float32(loss / ln2), seg)
            self.assertIn(want, tip)
            saved = np.float32(np.float32(reset - loss) / ln2)
            self.assertIn("memory saved %+.4f bits: %.4f bits with the memory reset to the initial memory, %.4f zeroed"
                          % (saved, np.float32(reset / ln2), np.float32(zeroed / ln2)), tip)

    def test_3_writer_heatmap_hover_shows_trace_weights(self):
        """A cell of head 1's writer attention shows memformer.writer_attn[0, 1, slot, col] to 6 decimals."""
        self.go_to(2)
        self.browser.eval("const s = document.getElementById('writer-head'); s.value = '1'; s.dispatchEvent(new Event('change'))")
        w = self.traces[2]["memformer.writer_attn"][0, 1]
        cell = self.browser.eval("(() => { const c = document.getElementById('writer-canvas'); c.scrollIntoView({block: 'center'});"
                                 " const b = c.getBoundingClientRect(); return [b.left, b.top, b.width / c.width, c.width, c.height]; })()")
        left, top, scale, cw, ch = cell
        slots, cols = w.shape[0], self.browser.eval("S.data.segments[S.pos].writer.cols")
        cpx = cw / cols
        for slot, col in ((0, 0), (3, 5), (slots - 1, 12)):
            self.browser.mouse(left + (col + 0.5) * cpx * scale, top + (slot + 0.5) * (ch / slots) * scale)
            tip = self.tip()
            self.assertIn("slot %d\n" % slot, tip)
            self.assertIn("weight %.6f  (head 1)" % np.float32(w[slot, col]), tip)

    def test_4_click_token_shows_reads(self):
        """Clicking a token of the shown segment lists its memory reads; the slots' weights are
        memformer.read_attn.<last>'s row, mean over heads (to 4 decimals)."""
        self.go_to(2)
        t = 2 * self.L + 5
        x, y = self.center('#doc span[data-t="%d"]' % t)
        self.browser.click(x, y)
        line = self.browser.eval("document.getElementById('reads-line').textContent")
        self.assertIn("token #%d" % t, line)
        self.assertIn("read the slots", line)
        rows = self.browser.eval("[...document.querySelectorAll('#reads-list .read')].map(e => e.textContent)")
        self.assertEqual(len(rows), 3)
        tr = self.traces[2]
        last = max(int(k.rsplit(".", 1)[1]) for k in tr.keys() if k.startswith("memformer.read_attn."))
        row = np.asarray(tr["memformer.read_attn.%d" % last][0], dtype=np.float64).mean(0)[5]
        order = np.argsort(-row, kind="stable")[:3]
        for r, slot in zip(rows, order):
            m = re.match(r"\s+slot (\d+): ([0-9.]+)", r)
            self.assertIsNotNone(m, r)
            self.assertEqual(int(m.group(1)), int(slot))
            self.assertAlmostEqual(float(m.group(2)), row[slot], delta=6e-5)
        self.assertTrue(self.browser.eval("document.querySelectorAll('#doc .tok.held').length > 0"),
                        "what the slots held is outlined")

    def test_5_keyboard_steps(self):
        self.go_to(0)
        for key, code, vk, want in (("ArrowRight", "ArrowRight", 39, 1), ("ArrowRight", "ArrowRight", 39, 2),
                                    ("n", "KeyN", 78, 3), ("ArrowLeft", "ArrowLeft", 37, 2), ("p", "KeyP", 80, 1),
                                    ("ArrowLeft", "ArrowLeft", 37, 0), ("ArrowLeft", "ArrowLeft", 37, 0)):
            self.browser.key(key, code, vk)
            self.assertEqual(self.segment(), want, "after %s" % key)
            self.assertIn("segment %d of " % want, self.browser.eval("document.getElementById('seg-label').textContent"))
        # The current segment's tokens are the underlined ones.
        cur = self.browser.eval("[...document.querySelectorAll('#doc .tok.cur')].map(e => Number(e.dataset.t))")
        self.assertEqual(cur, list(range(0, self.L)))

    def test_6_screenshot_shows_the_panels(self):
        self.go_to(1)
        self.browser.eval("window.scrollTo(0, 0)")
        x, y = self.center('#doc span[data-t="%d"]' % (self.L + 9))
        self.browser.click(x, y)
        self.browser.eval("window.scrollTo(0, 0); document.getElementById('tip').style.display = 'none'")
        shot = base64.b64decode(self.browser.send("Page.captureScreenshot", {"format": "png"})["data"])
        keep = os.environ.get("MNEMO_VIEWER_SCREENSHOT")
        if keep:
            with open(keep, "wb") as f:
                f.write(shot)
        img = decode_png(shot)
        # The writer attention canvas: many viridis colours where it is drawn.
        b = self.browser.eval("(() => { const r = document.getElementById('writer-canvas').getBoundingClientRect();"
                              " return [r.left, r.top, r.right, r.bottom]; })()")
        x0, y0, x1, y1 = (int(round(v)) for v in b)
        self.assertLess(y0, img.shape[0], "the writer attention is below the screenshot")
        region = img[y0 + 1:min(y1, img.shape[0]) - 1, x0 + 1:x1 - 1, :3].reshape(-1, 3)
        self.assertGreater(len({tuple(p) for p in region[::7]}), 20, "the writer attention map is not drawn")
        # The document is tinted: its box holds the loss tint's magma colours, not only white and ink.
        b = self.browser.eval("(() => { const r = document.getElementById('doc').getBoundingClientRect();"
                              " return [r.left, r.top, r.right, Math.min(r.bottom, window.innerHeight)]; })()")
        x0, y0, x1, y1 = (int(round(v)) for v in b)
        region = img[y0:y1, x0:x1, :3].reshape(-1, 3).astype(int)
        coloured = np.abs(region - region.mean(1, keepdims=True)).max(1) > 40
        self.assertGreater(coloured.mean(), 0.05, "the document has no tint")

    def test_7_rmt_attention_hover(self):
        """An RMT page (rmt-general): a cell of the last layer's head 0 shows rmt.attn.<l>[0, 0, r, c]
        of `step`'s trace, its row and column named by block as the app's Attention panel does."""
        model = os.path.join(SOURCE, "assets", "models", "rmt-general.safetensors")
        if not os.path.exists(model):
            self.skipTest("assets/models/rmt-general.safetensors is not in this checkout")
        page = os.path.join(self.dir, "rmt.html")
        steps = os.path.join(self.dir, "rmt-steps")
        for args in (["html", "--doc", self.doc, "--zoo", "rmt-general", "--to", "1", "--out", page],
                     ["step", "--doc", self.doc, "--checkpoint", model, "--to", "1", "--format", "csv", "--out", steps]):
            r = subprocess.run([PROGRAM] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
            self.assertEqual(r.returncode, 0, r.stdout)
        tr = mnemoscope.read_trace(os.path.join(steps, "step-0001"))
        layer = max(int(k.rsplit(".", 1)[1]) for k in tr.keys() if k.startswith("rmt.attn."))
        att = tr["rmt.attn.%d" % layer][0, 0]  # [2m+L, 2m+L]: [read | tokens | write]
        m = (att.shape[0] - self.L) // 2
        self.browser.open("file://" + page)
        self.browser.wait_for("document.body && (document.body.dataset.ready || document.body.dataset.error)")
        self.browser.key("ArrowRight", "ArrowRight", 39)
        self.assertEqual(self.segment(), 1)
        self.browser.eval("const h = document.getElementById('attn-head-0'); h.value = '0'; h.dispatchEvent(new Event('change'))")
        left, top, cw, ch = self.browser.eval(
            "(() => { const c = document.getElementById('attn-canvas-0'); c.scrollIntoView({block: 'center'});"
            " const b = c.getBoundingClientRect(); return [b.left, b.top, c.width, c.height]; })()")
        n = att.shape[0]
        for r, c, rb, cb in ((m + 3, 2, "[tokens]  '", "[read]  "), (2 * m + self.L - 1, m + 5, "[write]  ", "[tokens]  '"),
                             (m + 10, m + 10, "[tokens]  '", "[tokens]  '")):
            self.browser.mouse(left + (c + 0.5) * cw / n, top + (r + 0.5) * ch / n)
            tip = self.tip()
            self.assertIn("weight %.6f  (layer %d, head 0)" % (np.float32(att[r, c]), layer), tip)
            self.assertIn("query " + rb, tip)
            self.assertIn("key   " + cb, tip)

    def test_8_notebook_iframe(self):
        """What a notebook cell shows, mnemoscope.show(page)._repr_html_(): the sandboxed iframe
        (srcdoc, scripts only) starts the viewer: its heatmap's colours appear in the frame (about 1,000 distinct colours drawn; the
        error or loading text alone gives under 200)."""
        host = os.path.join(self.dir, "cell.html")
        with open(host, "w", encoding="utf-8") as f:
            f.write("<!DOCTYPE html><meta charset='utf-8'>" + mnemoscope.show(self.page)._repr_html_())
        self.browser.open("file://" + host)
        self.browser.wait_for("document.readyState === 'complete'")
        x0, y0, x1, y1 = (int(round(v)) for v in self.browser.eval(
            "(() => { const r = document.querySelector('iframe').getBoundingClientRect();"
            " return [r.left, r.top, r.right, Math.min(r.bottom, window.innerHeight)]; })()"))
        colours = 0
        for _ in range(100):  # the frame decodes its data asynchronously
            img = decode_png(base64.b64decode(self.browser.send("Page.captureScreenshot", {"format": "png"})["data"]))
            colours = len({tuple(p) for p in img[y0:y1:3, x0:x1:3, :3].reshape(-1, 3)})
            if colours > 500:
                break
            time.sleep(0.2)
        self.assertGreater(colours, 500, "the viewer did not start inside the notebook's iframe")


if __name__ == "__main__":
    harness.main()
