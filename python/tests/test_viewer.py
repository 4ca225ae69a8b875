"""mnemoscope.show (the HTML viewer inline in a notebook, without Jupyter) and mnemoscope.plots
(matplotlib figures), docs/python.md#notebooks.

* show(page.html) gives a Viewer whose _repr_html_ is an iframe holding the very page;
  show(step folder) re-steps it through `mnemoscope html` and its data are the step's traces.
* The plots hold the traces' and the log's values. MNEMO_PLOTS_DIR=DIR keeps the PNGs.

Skipped pieces: the program (MNEMOSCOPE_BIN), the zoo's default model, matplotlib."""

import html as _html
import os
import re
import subprocess
import unittest

import harness

harness.require_numpy()
import numpy as np  # noqa: E402

import mnemoscope  # noqa: E402
from mnemoscope.errors import MnemoscopeError  # noqa: E402

PROGRAM = harness.tool("MNEMOSCOPE_BIN")
SOURCE = os.environ.get("MNEMO_SOURCE_DIR", os.path.dirname(harness.PACKAGE_ROOT))
DEFAULT_MODEL = os.path.join(SOURCE, "assets", "models", "memformer-general.safetensors")
TEXT = (b"Call me Ishmael. Some years ago - never mind how long precisely - having little or no money in my purse, "
        b"and nothing particular to interest me on shore, I thought I would sail about a little.\n")

try:
    import matplotlib
    matplotlib.use("Agg")
    HAVE_MPL = True
except ImportError:
    HAVE_MPL = False

CAN_STEP = bool(PROGRAM) and os.path.exists(DEFAULT_MODEL)
WHY_NOT = "needs the built program (MNEMOSCOPE_BIN, run through ctest) and assets/models/memformer-general.safetensors"


def run(args):
    r = subprocess.run([PROGRAM] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    assert r.returncode == 0, r.stdout
    return r.stdout


@unittest.skipUnless(CAN_STEP, WHY_NOT)
class Show(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = harness.temp_dir("show")
        cls.doc = os.path.join(cls.dir, "doc.txt")
        with open(cls.doc, "wb") as f:
            f.write(TEXT)
        cls.page = os.path.join(cls.dir, "doc.html")
        run(["html", "--doc", cls.doc, "--from", "0", "--to", "2", "--out", cls.page])
        cls.steps = os.path.join(cls.dir, "steps")
        run(["step", "--doc", cls.doc, "--from", "0", "--to", "2", "--benefit", "--format", "csv", "--out", cls.steps])

    def test_html_file_inline(self):
        v = mnemoscope.show(self.page)
        with open(self.page, encoding="utf-8") as f:
            page = f.read()
        self.assertEqual(v.html, page)
        rep = v._repr_html_()
        m = re.fullmatch(r'<iframe title="Mnemoscope viewer" srcdoc="([^"]*)" style="[^"]*" sandbox="allow-scripts"></iframe>', rep)
        self.assertIsNotNone(m, rep[:200])
        self.assertEqual(_html.unescape(m.group(1)), page)
        self.assertIsNone(re.search(r"https?://", rep))

    def test_step_folder_has_the_traces_numbers(self):
        v = mnemoscope.show(self.steps, program=PROGRAM)
        d = v.data()
        self.assertEqual(d["format"], "mnemoscope-viewer")
        self.assertEqual([s["segment"] for s in d["segments"]], [0, 1, 2])
        L = d["segment_len"]
        for s, tr in zip(d["segments"], mnemoscope.read_traces(self.steps)):
            self.assertEqual(s["losses"]["first"], (s["segment"] + 1) * L)  # Memformer predicts the next segment
            got = s["losses"]["values"]
            np.testing.assert_array_equal(got, np.asarray(tr["lm.loss"][0, :len(got)], dtype=np.float32))
            np.testing.assert_array_equal(s["losses_reset"]["values"],
                                          np.asarray(tr["lm.loss_memory_reset"][0, :len(got)], dtype=np.float32))
            w = s["writer"]
            blocks = w["values"].reshape(w["heads"] + 1, w["slots"], w["cols"])
            n = s["length"]
            np.testing.assert_array_equal(blocks[1:, :, :1 + n], tr["memformer.writer_attn"][0, :, :, :1 + n])
        # The same page as `mnemoscope html` over the same document and model writes.
        self.assertEqual(d["segments"][0]["losses"]["values"].tobytes(),
                         mnemoscope.show(self.page).data()["segments"][0]["losses"]["values"].tobytes())

    def test_bad_sources_are_refused(self):
        with self.assertRaisesRegex(MnemoscopeError, "does not exist"):
            mnemoscope.show(os.path.join(self.dir, "nothing-here"))
        with self.assertRaisesRegex(MnemoscopeError, "not a Mnemoscope viewer page"):
            mnemoscope.show(self.doc)
        with self.assertRaisesRegex(MnemoscopeError, "no manifest.json"):
            mnemoscope.show(self.dir)
        with self.assertRaisesRegex(MnemoscopeError, "exists; choose another name"):
            mnemoscope.show(self.page).save(self.doc)
        out = os.path.join(self.dir, "copy.html")
        mnemoscope.show(self.page).save(out)
        with open(out, encoding="utf-8") as a, open(self.page, encoding="utf-8") as b:
            self.assertEqual(a.read(), b.read())


@unittest.skipUnless(PROGRAM, "needs the built program (MNEMOSCOPE_BIN, run through ctest)")
class ShowSession(unittest.TestCase):
    def test_session_newest_checkpoint_over_its_probe(self):
        d = os.path.join(harness.temp_dir("show-session"), "run")
        run(["train", "--config", os.path.join(SOURCE, "sessions", "copy-rmt-tiny.json"), "--steps", "12",
             "--set", "train.eval_every=6", "--set", "train.record_every=6", "--set", "train.save_every=6",
             "--set", "train.eval_batches=1", "--out", d])
        s = mnemoscope.open_session(d)
        for source in (d, s):
            v = mnemoscope.show(source, program=PROGRAM)
            data = v.data()
            self.assertEqual(data["model"], "rmt")
            self.assertIn("step-000000012.safetensors", data["model_note"])  # the newest checkpoint
            doc = s.recording().document
            self.assertEqual(bytes(data["doc"]), doc[:len(data["doc"])])  # its newest probe's document
            self.assertEqual(data["num_segments"], -(-len(doc) // data["segment_len"]))
        with self.assertRaisesRegex(MnemoscopeError, "no-such-program is not an executable file"):
            mnemoscope.show(d, program=os.path.join(d, "no-such-program"))
    test_session_newest_checkpoint_over_its_probe.__doc__ = "show(session): its newest checkpoint over its probe's text"


class Template(unittest.TestCase):
    def test_placeholders_once(self):
        from mnemoscope.viewer import DATA_PLACEHOLDER, TITLE_PLACEHOLDER, viewer_template
        t = viewer_template()
        self.assertEqual(t.count(DATA_PLACEHOLDER), 1)
        self.assertEqual(t.count(TITLE_PLACEHOLDER), 1)
        self.assertIsNone(re.search(r"https?://|\ssrc=|\shref=", t))


@unittest.skipUnless(CAN_STEP, WHY_NOT)
@unittest.skipUnless(HAVE_MPL, "matplotlib is not installed; install python3-matplotlib (bash .ci/setup does)")
class Plots(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = harness.temp_dir("plots")
        cls.doc = os.path.join(cls.dir, "doc.txt")
        with open(cls.doc, "wb") as f:
            f.write(TEXT)
        cls.steps = os.path.join(cls.dir, "steps")
        run(["step", "--doc", cls.doc, "--from", "0", "--to", "4", "--format", "csv", "--out", cls.steps])
        cls.keep = os.environ.get("MNEMO_PLOTS_DIR")

    def save(self, fig, name):
        if self.keep:
            os.makedirs(self.keep, exist_ok=True)
            fig.savefig(os.path.join(self.keep, name), dpi=110, bbox_inches="tight")
        import matplotlib.pyplot as plt
        plt.close(fig)

    def test_writer_attention(self):
        import mnemoscope.plots as mp
        tr = mnemoscope.read_traces(self.steps)[2]
        w = np.asarray(tr["memformer.writer_attn"][0], dtype=np.float64)  # [H, k, 1+L+C]
        fig = mp.writer_attention(os.path.join(self.steps, "step-0002"))
        img = np.asarray(fig.axes[0].images[0].get_array())
        self.assertEqual(img.shape, (w.shape[1], w.shape[2]))  # every position of this full segment
        np.testing.assert_allclose(img, w.mean(0), atol=1e-6)
        self.save(fig, "writer_attention.png")
        fig = mp.writer_attention(tr, head=3)
        np.testing.assert_array_equal(np.asarray(fig.axes[0].images[0].get_array()), w[3].astype(np.float32))
        import matplotlib.pyplot as plt
        plt.close(fig)
        with self.assertRaisesRegex(ValueError, "head 9"):
            mp.writer_attention(tr, head=9)

    def test_slot_types(self):
        import mnemoscope.plots as mp
        traces = mnemoscope.read_traces(self.steps)
        fig = mp.slot_types(self.steps)
        bars = fig.axes[0].containers
        self.assertEqual(len(bars), 3)
        for k, cont in enumerate(bars):
            heights = [b.get_height() for b in cont]
            want = [int((np.asarray(t["memformer.slot_type"][0]) == k).sum()) for t in traces]
            self.assertEqual(heights, want)
        # The writer's self mass at the app's thresholds gives the traced types.
        for t in traces:
            sm = mp.writer_map(t)[:, 0]
            ty = np.where(sm >= 0.9, 0, np.where(sm <= 0.1, 2, 1))
            np.testing.assert_array_equal(ty, np.asarray(t["memformer.slot_type"][0]))
        self.save(fig, "slot_types.png")

    def test_loss_curves(self):
        import mnemoscope.plots as mp
        d = os.path.join(harness.temp_dir("plots-session"), "run")
        with mnemoscope.SessionWriter(d, config={"model": {"model": "rmt", "slots": 4, "segment_len": 8, "dim": 16,
                                                            "heads": 2, "layers": 1}}) as w:
            for step in range(1, 41):
                w.log(step, loss=3.0 * np.exp(-step / 15.0) + 1.0)
                if step % 10 == 0:
                    w.log_eval(step, loss=2.8 * np.exp(-step / 18.0) + 1.1)
                    w.log_eval(step, zero_memory=True, loss=2.8 * np.exp(-step / 30.0) + 1.3)
        fig = mp.loss_curves(d)
        lines = {l.get_label(): l for l in fig.axes[0].get_lines()}
        self.assertEqual(set(lines), {"training loss", "valid loss", "valid loss, memory zeroed"})
        np.testing.assert_array_equal(lines["valid loss, memory zeroed"].get_xdata(), [10, 20, 30, 40])
        np.testing.assert_allclose(lines["valid loss, memory zeroed"].get_ydata(),
                                   [2.8 * np.exp(-s / 30.0) + 1.3 for s in (10, 20, 30, 40)])
        np.testing.assert_allclose(lines["valid loss"].get_ydata(), [2.8 * np.exp(-s / 18.0) + 1.1 for s in (10, 20, 30, 40)])
        self.assertEqual(len(lines["training loss"].get_xdata()), 40)
        self.save(fig, "loss_curves.png")


if __name__ == "__main__":
    harness.main()
