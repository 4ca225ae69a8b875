"""python/examples/record_rmt.py end to end: a tiny plain-PyTorch RMT trained on copy for 300
steps and recorded with SessionWriter; the session is complete, the model uses its memory
(valid accuracy far above the memory-reset ablation), and the C++ readers and the app's replay
read every recording. Wall and CPU time are printed (not asserted: speed is measured in
docs/python.md). Skipped (exit 77) without python3-torch."""

import harness

harness.require_numpy()
if not harness.have_torch():
    harness.skip_all("PyTorch is not installed for this python3; install python3-torch (bash .ci/setup does)")

import csv
import json
import os
import resource
import subprocess
import sys
import time
import unittest

import mnemoscope as ms

EXAMPLE = os.path.join(harness.PACKAGE_ROOT, "examples", "record_rmt.py")


class Example(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = os.path.join(harness.temp_dir("example"), "py-rmt")
        t0 = time.time()
        c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cls.proc = subprocess.run([sys.executable, EXAMPLE, "--out", cls.dir], capture_output=True, text=True)
        c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        print("record_rmt.py: %.1f s wall, %.1f s CPU, load average %s" % (
            time.time() - t0, (c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime),
            " ".join("%.2f" % x for x in os.getloadavg())))
        print(cls.proc.stdout)

    def test_it_ran_and_wrote_a_complete_session(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stdout + self.proc.stderr)
        s = ms.open_session(self.dir)
        self.assertEqual(s.config["model"]["model"], "rmt")
        m = s.metrics
        self.assertTrue(m.clean)
        self.assertEqual(m["loss"].step.tolist(), list(range(1, 301)))
        self.assertEqual(s.recording_steps, list(range(0, 301, 25)))
        self.assertEqual(s.checkpoint_steps, [100, 200, 300])
        self.assertEqual(s.checkpoint().step, 300)
        rec = s.recording()
        self.assertEqual((rec.step, len(rec), rec.segment_len), (300, 2, 13))
        self.assertEqual(rec.keys(), ["input.tokens", "rmt.attn.0", "rmt.attn.1", "rmt.block_mass.0", "rmt.block_mass.1",
                                      "rmt.memory", "rmt.memory_prev"])
        self.assertEqual(rec[1]["rmt.attn.0"].shape, (1, 4, 29, 29))
        self.assertEqual([p["step"] for p in m.probes], s.recording_steps)

    def test_the_model_uses_its_memory(self):
        m = ms.open_session(self.dir).metrics
        final = m.column("accuracy", type="eval", split="valid", final=True).value[-1]
        reset = m.column("accuracy", type="eval", split="valid", zero_memory=True, final=True).value[-1]
        print("final valid accuracy %.3f; with the memory reset between segments %.3f" % (final, reset))
        self.assertGreater(final, 0.9)
        self.assertLess(reset, final - 0.2)

    def test_export_draws_every_evaluation(self):
        # The valid curves reach the last step, with memory and with it zeroed, and the end-of-run
        # evaluations are exported (they were missing when the script named its own split).
        exe = harness.tool("MNEMOSCOPE_BIN")
        if not exe:
            self.skipTest("mnemoscope is not built (run through ctest)")
        out = os.path.join(harness.temp_dir("example-export"), "figs")
        r = subprocess.run([exe, "export", "--session", self.dir, "--figure", "accuracy", "--out", out, "--format", "csv"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(os.path.join(out, "accuracy.csv"), newline="") as f:
            rows = list(csv.reader(f))[1:]
        last = {}
        for series, step, _ in rows:
            last[series] = max(last.get(series, 0), int(step))
        self.assertEqual(last.get("valid"), 300, last)
        self.assertEqual(last.get("valid, memory zeroed"), 300, last)
        with open(os.path.join(out, "final_evaluation.csv"), newline="") as f:
            final = list(csv.reader(f))
        self.assertEqual(final[0], ["split", "zero_memory", "step", "loss", "accuracy", "bits_per_token"])
        self.assertEqual([row[:3] for row in final[1:]], [["valid", "false", "300"], ["valid", "true", "300"]])
        m = ms.open_session(self.dir).metrics
        acc = m.column("accuracy", type="eval", split="valid", final=True).value[-1]
        self.assertAlmostEqual(float(final[1][4]), acc, places=5)

    def test_the_cpp_readers_and_the_apps_replay_read_it(self):
        dump, replay = harness.tool("MNEMO_SESSION_DUMP"), harness.tool("MNEMO_SESSION_REPLAY")
        if not dump:
            self.skipTest("session_dump is not built (run through ctest)")
        ref = json.loads(subprocess.run([dump, "session", self.dir], capture_output=True, text=True, check=True).stdout)
        self.assertEqual(len(ref["traces"]), 13)
        for t in ref["traces"]:
            self.assertEqual(t["recording"].get("segments"), 2, t)
        if replay:
            r = json.loads(subprocess.run([replay, self.dir, "1"], capture_output=True, text=True, check=True).stdout)
            self.assertEqual(r["errors"], [])
            self.assertEqual({s["attention_kind"] for rec in r["recordings"] for s in rec["segments"]}, {"RMT"})


if __name__ == "__main__":
    harness.main()
