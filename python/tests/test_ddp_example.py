"""python/examples/train_text_ddp.py end to end: a tiny RMT trained on a text file for 20 steps by
2 processes under torch.distributed (Gloo), rank 0 recording the session. The session is
complete (every step, the evaluations with the memory carried and zeroed, probe recordings,
checkpoints); both processes end with the same weights; the app's replay reads it without
errors; `mnemoscope step --checkpoint SESSION` steps its weights to the losses the PyTorch
module gives; bad input exits 2 naming the problem. Skipped (exit 77) without python3-torch."""

import harness

harness.require_numpy()
if not harness.have_torch():
    harness.skip_all("PyTorch is not installed for this python3; install python3-torch (bash .ci/setup does)")

import json
import os
import re
import subprocess
import sys
import time
import unittest

import torch

import mnemoscope as ms
from mnemoscope import models as mm

EXAMPLE = os.path.join(harness.PACKAGE_ROOT, "examples", "train_text_ddp.py")
SRC = os.environ.get("MNEMO_SOURCE_DIR", os.path.dirname(harness.PACKAGE_ROOT))
TEXT = os.path.join(SRC, "assets", "tours", "sotu-1830-jackson.txt")  # 4,643 bytes of prose
TINY = {"model": "rmt", "slots": 4, "segment_len": 16, "dim": 32, "heads": 2, "layers": 2, "ff": 64}


def example(args):
    return subprocess.run([sys.executable, EXAMPLE] + args, capture_output=True, text=True)


def example_here(args):
    """The script's main(args) in this process: (exit status, stderr). argparse's refusals exit
    through SystemExit, the script's own return 2."""
    import contextlib
    import importlib.util
    import io
    if not hasattr(example_here, "module"):
        sys.path.insert(0, os.path.dirname(EXAMPLE))  # as for the script: its app_path.py beside it
        spec = importlib.util.spec_from_file_location("train_text_ddp", EXAMPLE)
        example_here.module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(example_here.module)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = example_here.module.main(list(args))
        except SystemExit as e:
            code = e.code
    return code, err.getvalue()


class DDPExample(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        tmp = harness.temp_dir("ddp")
        cls.config = os.path.join(tmp, "tiny-rmt.json")
        with open(cls.config, "w") as f:
            json.dump({"model": TINY}, f)
        cls.dir = os.path.join(tmp, "run")
        t0 = time.time()
        cls.proc = example(["--nproc", "2", "--config", cls.config, "--data", TEXT, "--out", cls.dir,
                            "--steps", "20", "--batch", "4", "--segments", "4", "--lr", "3e-3", "--warmup", "5",
                            "--eval-every", "10", "--record-every", "10", "--checkpoint-every", "10",
                            "--probe-segments", "3"])
        print("train_text_ddp.py, 2 processes, 20 steps: %.1f s wall" % (time.time() - t0))
        print(cls.proc.stdout + cls.proc.stderr)

    def test_it_ran_on_two_processes_that_agree(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stdout + self.proc.stderr)
        self.assertIn("2 processes x 4 windows of 4 segments", self.proc.stdout)
        self.assertIn("the 2 processes' weights differ by at most 0\n", self.proc.stdout)
        # The advice it prints names a program that exists (the repository's build, or one on PATH).
        app = re.search(r"follow or replay it:  (\S+) gui --session", self.proc.stdout).group(1)
        self.assertTrue(app == "mnemoscope" or os.path.isfile(app), app)

    def test_the_session_is_complete(self):
        s = ms.open_session(self.dir)
        cfg = s.config
        self.assertEqual(mm.Config.from_json(cfg["model"]), mm.Config(TINY))
        self.assertEqual(cfg["distributed"], {"world_size": 2, "backend": "gloo", "batch_per_rank": 4})
        self.assertEqual(cfg["train"]["batch"], 8)
        # The split of the one file: contiguous blocks, valid and test 5 % each.
        size = os.path.getsize(TEXT)
        sp = cfg["split"]
        self.assertEqual((sp["train"]["begin"], sp["test"]["end"]), (0, size))
        self.assertEqual(sp["train"]["end"], sp["valid"]["begin"])
        self.assertEqual(sp["valid"]["end"], sp["test"]["begin"])
        self.assertEqual(sp["test"]["end"] - sp["test"]["begin"], round(size * 0.05))
        m = s.metrics
        self.assertTrue(m.clean)
        self.assertEqual(m["loss"].step.tolist(), list(range(1, 21)))
        first, last = m["loss"].value[0], m["loss"].value[-1]
        self.assertLess(last, first - 0.5, "the loss fell from %.3f to %.3f" % (first, last))
        for zm in (False, True):
            ev = m.column("bits_per_token", type="eval", split="valid", zero_memory=zm)
            self.assertEqual(ev.step.tolist()[:2], [10, 20])
            fin = m.column("bits_per_token", type="eval", split="valid", zero_memory=zm, final=True)
            self.assertEqual(fin.step.tolist(), [20])
        self.assertEqual(s.recording_steps, [0, 10, 20])
        self.assertEqual(s.checkpoint_steps, [10, 20])
        rec = s.recording()
        self.assertEqual((rec.step, len(rec), rec.segment_len), (20, 3, 16))
        self.assertIn("rmt.block_mass.1", rec.keys())

    def test_the_recorded_evaluation_is_the_models(self):
        # The final valid bits/byte, recomputed here from the saved weights on the same windows.
        s = ms.open_session(self.dir)
        model = mm.load_weights(self.dir)
        sp = s.config["split"]["valid"]
        with open(TEXT, "rb") as f:
            data = f.read()
        window = 4 * 16 + 1
        lo, hi = sp["begin"], sp["end"]
        count = 32
        starts = [lo + (hi - window - lo) * i // (count - 1) for i in range(count)]
        w = torch.tensor([list(data[a:a + window]) for a in starts])
        with torch.no_grad():
            r = model(mm.window_segments(w, 16))
            z = model(mm.window_segments(w, 16), between="zero")
        bits = float(r.loss_sum / r.loss_count) / 0.6931471805599453
        hits = sum(int((o.logits.argmax(-1) == seg.targets).sum()) for o, seg in zip(r.outputs, mm.window_segments(w, 16)))
        accuracy = hits / w.shape[0] / (window - 1)
        zbits = float(z.loss_sum / z.loss_count) / 0.6931471805599453
        m = s.metrics
        got = m.column("bits_per_token", type="eval", split="valid", final=True)
        gotz = m.column("bits_per_token", type="eval", split="valid", zero_memory=True, final=True)
        self.assertAlmostEqual(got.value[-1], bits, places=4)
        self.assertAlmostEqual(gotz.value[-1], zbits, places=4)
        acc = m.column("accuracy", type="eval", split="valid", final=True)
        self.assertAlmostEqual(acc.value[-1], accuracy, places=6)
        self.assertNotAlmostEqual(bits, zbits, places=4)  # zeroing the memory changes the predictions

    def test_the_app_replays_it_and_steps_its_weights(self):
        exe, replay = harness.tool("MNEMOSCOPE_BIN"), harness.tool("MNEMO_SESSION_REPLAY")
        if not exe:
            self.skipTest("mnemoscope is not built (run through ctest)")
        if replay:
            r = json.loads(subprocess.run([replay, self.dir, "1"], capture_output=True, text=True, check=True).stdout)
            self.assertEqual(r["errors"], [])
            self.assertEqual((r["model"], r["probes"], r["steps"]), ("rmt", 3, 20))
            self.assertEqual({s["attention_kind"] for rec in r["recordings"] for s in rec["segments"]}, {"RMT"})
        out = os.path.join(harness.temp_dir("ddp-step"), "steps")
        p = subprocess.run([exe, "step", "--checkpoint", self.dir, "--doc", TEXT, "--to", "2", "--out", out],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        cpp = [float(x) for x in re.findall(r"segment \d+\s+loss\(next token\) ([0-9.]+)", p.stdout)]
        self.assertEqual(len(cpp), 3, p.stdout)
        model = mm.load_weights(self.dir)
        with open(TEXT, "rb") as f:
            segs = mm.document_segments(f.read(), 16)
        memory, py = None, []
        with torch.no_grad():
            for seg in segs[:3]:
                o, memory, _ = model.step(seg, memory)
                py.append(float(o.loss))
        for a, b in zip(cpp, py):
            self.assertAlmostEqual(a, b, places=4)

    def test_bad_input_exits_2_naming_the_problem(self):
        tmp = harness.temp_dir("ddp-bad")
        empty = os.path.join(tmp, "empty.txt")
        open(empty, "w").close()
        binary = os.path.join(tmp, "data.bin")
        with open(binary, "wb") as f:
            f.write(b"text\0\1\2" * 100)
        busy = os.path.join(tmp, "busy")
        os.makedirs(busy)
        with open(os.path.join(busy, "mine.txt"), "w") as f:
            f.write("a user's file")
        out = os.path.join(tmp, "out")
        cases = [
            (["--config", self.config, "--data", os.path.join(tmp, "missing.txt"), "--out", out], "no such file"),
            (["--config", self.config, "--data", empty, "--out", out], "is empty; pass a text file"),
            (["--config", self.config, "--data", binary, "--out", out], "looks binary"),
            (["--config", self.config, "--data", tmp, "--out", out], "is a directory; pass one text file"),
            (["--config", self.config, "--data", TEXT, "--out", out, "--segments", "50"],
             "less than one window of 801; pass a longer text or lower --segments"),
            (["--config", self.config, "--data", TEXT, "--out", busy], "exists and is not empty"),
            (["--config", os.path.join(tmp, "missing.json"), "--data", TEXT, "--out", out], "cannot be read"),
            (["--init", TEXT, "--data", TEXT, "--out", out], "--init:"),
        ]
        # The first case runs the script as a user would (its exit status and stderr); the others
        # call its main() here, which is what the script runs (`sys.exit(main())`): a process of
        # it spends about 2.5 CPU s importing torch before it reads its arguments. An exception
        # escaping main() (a traceback in the process) fails the test here too.
        for i, (args, words) in enumerate(cases):
            if i == 0:
                p = example(args)
                code, err = p.returncode, p.stderr
                self.assertNotIn("Traceback", err, args)
            else:
                code, err = example_here(args)
            self.assertEqual(code, 2, (args, err))
            self.assertIn(words, err, args)
            self.assertFalse(os.path.exists(out), args)
        with open(os.path.join(busy, "mine.txt")) as f:
            self.assertEqual(f.read(), "a user's file")


if __name__ == "__main__":
    harness.main()
