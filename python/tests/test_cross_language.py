"""C++ <-> Python (numpy only): the Python package reads what `mnemoscope train` and `mnemoscope
step` write with exactly the C++ readers' values, the C++ side (`mnemoscope export`, the app's
null-backend replay, the readers) reads what the Python writer writes, and damaged files — a torn
tail, flipped bytes, truncated safetensors, a trace key with the wrong dtype or shape, a newer
format version — end the same way in both languages.

The C++ reference is python/tests/session_dump.cpp (the C++ readers' view as JSON) and
python/tests/session_replay.cpp (the app's replay and dashboard, null ImGui backend)."""

import harness

harness.require_numpy()

import csv
import json
import math
import os
import re
import shutil
import subprocess
import unittest
import warnings

import numpy as np

import mnemoscope as ms
from mnemoscope import framed_log
from mnemoscope import safetensors as st
from mnemoscope.writer import dump_record

BIN = harness.tool("MNEMOSCOPE_BIN")
DUMP = harness.tool("MNEMO_SESSION_DUMP")
REPLAY = harness.tool("MNEMO_SESSION_REPLAY")
if not BIN or not DUMP:
    harness.skip_all("the C++ programs are not built (MNEMOSCOPE_BIN, MNEMO_SESSION_DUMP); run this test through ctest")


def run(args, ok=True):
    r = subprocess.run(args, capture_output=True, text=True)
    if ok and r.returncode != 0:
        raise AssertionError("%s exited %d:\n%s%s" % (" ".join(args), r.returncode, r.stdout, r.stderr))
    return r


dump = harness.Dump(DUMP)  # one session_dump process answers every request of this file
cli = harness.Mnemoscope(BIN)  # `mnemoscope step` per model family, one process for all


# A JSON number literal (bytes), for comparing records number by number.
NUMBER = re.compile(rb"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def read(p):
    with open(p, "rb") as f:
        return f.read()


def write(p, b):
    with open(p, "wb") as f:
        f.write(b)


def tensors_json(f):
    """A TensorFile as session_dump lists tensors (BF16 as raw bits)."""
    raw = None
    out = []
    for name, arr in f.items():
        if f.dtypes[name] == "BF16":
            raw = raw or st.load_safetensors(f.path, bf16="raw")
            arr = raw[name]
        out.append({"name": name, "dtype": f.dtypes[name], "shape": list(arr.shape), "hex": arr.tobytes().hex()})
    return out


def export_csv(session, figures, out):
    r = run([BIN, "export", "--session", session, "--figure", figures, "--format", "csv", "--out", out])
    series = {}
    for name in figures.split(","):
        path = os.path.join(out, name + ".csv")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            for row in csv.DictReader(f):
                series.setdefault((name, row["series"]), []).append((int(row["step"]), row["value"]))
    return series, r.stdout


def g9(v):
    """A value as `mnemoscope export` writes it in CSV (%.9g; nan, inf)."""
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return "%.9g" % v


def strip_path(msg, path):
    return msg.replace(path, "<file>")


TINY_RMT = {
    "model": {"model": "rmt", "slots": 4, "segment_len": 13, "dim": 32, "heads": 2, "layers": 2, "ff": 64},
    "task": {"name": "copy", "source_len": 8, "symbols": 26, "segments": 2, "train_size": 256, "valid_size": 32,
             "test_size": 32},
    "train": {"steps": 30, "batch": 8, "lr": 0.003, "warmup": 5, "eval_every": 10, "eval_batches": 2,
              "record_every": 10, "save_every": 10},
}


def cpp_session(name, config, extra=()):
    d = os.path.join(harness.temp_dir("cpp-" + name), "run")
    cfg = os.path.join(os.path.dirname(d), "config.json")
    write(cfg, json.dumps(config).encode())
    run([BIN, "train", "--config", cfg, "--out", d] + list(extra))
    return d


PY_MODEL = {"model": "rmt", "slots": 3, "segment_len": 5, "dim": 8, "heads": 2, "layers": 2}
PY_DOC = b"the quick brown fox"  # 19 bytes: 4 segments of 5


def softmax_rows(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def py_segments(rng, m=3, l=5, layers=2, heads=2):
    segs = []
    n = (len(PY_DOC) + l - 1) // l
    for i in range(n):
        t = 2 * m + l
        seg = {}
        for layer in range(layers):
            a = softmax_rows(rng.standard_normal((1, heads, t, t)) * 2).astype(np.float32)
            seg["rmt.attn.%d" % layer] = a
            tok = a[:, :, m:m + l, :]
            wr = a[:, :, m + l:, :]
            seg["rmt.block_mass.%d" % layer] = np.stack(
                [tok[..., :m].sum(-1).mean(-1), wr[..., m:m + l].sum(-1).mean(-1), wr[..., :m].sum(-1).mean(-1)], -1)
        toks = np.full((1, l), 256, np.int64)
        chunk = PY_DOC[i * l:(i + 1) * l]
        toks[0, :len(chunk)] = list(chunk)
        seg["input.tokens"] = toks
        seg["rmt.memory_prev"] = rng.standard_normal((1, m, 8)).astype(np.float32)
        seg["rmt.memory"] = rng.standard_normal((1, m, 8)).astype(np.float32)
        segs.append(seg)
    return segs


def py_session(name):
    """A session written by the Python writer (numpy only), with NaN/Inf metrics, evaluations,
    three probe recordings and two checkpoints. Returns (dir, what was logged)."""
    d = os.path.join(harness.temp_dir("py-" + name), "run")
    rng = np.random.default_rng(7)
    logged = {"loss": [], "lr": [], "grad_norm": [], "valid": [], "segments": {}}
    with ms.SessionWriter(d, config={"model": PY_MODEL, "note": "written by test_cross_language.py"}) as w:
        for step in range(0, 41):
            if step % 20 == 0:
                segs = py_segments(rng)
                losses = [float(x) for x in rng.random(len(segs))]
                losses[-1] = None
                w.record(step, PY_DOC, segs, loss=losses)
                logged["segments"][step] = (segs, losses)
            if step == 0:
                continue
            loss = float("nan") if step == 7 else 3.0 * 0.95 ** step
            gn = float("inf") if step == 9 else 1.0 / step
            lr = 1e-3 * min(1.0, step / 5)
            w.log(step, loss=loss, accuracy=step / 40, lr=lr, grad_norm=gn, tokens_per_s=1000.0 + step)
            logged["loss"].append((step, loss))
            logged["lr"].append((step, lr))
            logged["grad_norm"].append((step, gn))
            if step % 10 == 0:
                w.log_eval(step, split="valid", loss=loss + 0.1, accuracy=0.5)
                logged["valid"].append((step, loss + 0.1))
            if step % 20 == 0:
                w.checkpoint(step, {"w": rng.standard_normal((4, 3)).astype(np.float32), "n": np.array([step])})
    return d, logged


class CppWritesPythonReads(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.rmt = cpp_session("rmt", TINY_RMT)
        hashed = json.loads(json.dumps(TINY_RMT))
        hashed["model"].update({"linear": "hashed", "hash_bits": 4})
        hashed["train"].update({"steps": 4, "record_every": 2, "save_every": 2, "eval_every": 0})
        cls.hashed = cpp_session("hashed", hashed)
        cls.sessions = [cls.rmt, cls.hashed]
        cls.dumps = {d: dump("session", d) for d in cls.sessions}

    def test_manifest_and_every_metrics_record_equal(self):
        for d in self.sessions:
            ref = self.dumps[d]
            s = ms.open_session(d)
            self.assertEqual(s.manifest, ref["manifest"])
            self.assertEqual(s.metrics.records, ref["metrics"]["records"])
            self.assertEqual((s.metrics.read.good_bytes, s.metrics.read.file_bytes, s.metrics.clean),
                             (ref["metrics"]["good_bytes"], ref["metrics"]["file_bytes"], ref["metrics"]["clean"]))
        m = ms.open_session(self.rmt).metrics
        self.assertEqual(len(m.steps), 30)
        self.assertEqual(m.last_step(), 30)

    def test_recordings_equal_the_cpp_reader_and_pass_the_key_checks(self):
        for d in self.sessions:
            traces = self.dumps[d]["traces"]
            s = ms.open_session(d)
            self.assertEqual([t["step"] for t in traces], s.recording_steps)
            for t in traces:
                f = st.load_safetensors(t["path"])
                self.assertEqual(f.metadata, t["metadata"])
                self.assertEqual(tensors_json(f), t["tensors"])
                r = s.recording(t["step"])  # validate=True: every stored key has its canonical dtype and rank
                rec = t["recording"]
                self.assertEqual((r.step, r.segment_len, len(r), len(r.document)),
                                 (rec["train_step"], rec["segment_len"], rec["segments"], rec["document_bytes"]))
                for i, seg in enumerate(r):
                    self.assertTrue(ms.validate_segment(seg, "%s segment %d" % (t["path"], i)))
                self.assertIn("rmt.attn.1", r[0])

    def test_checkpoints_equal(self):
        for d in self.sessions:
            ref = self.dumps[d]["checkpoints"]
            s = ms.open_session(d)
            self.assertEqual(s.checkpoint_steps, ref["steps"])
            c = s.checkpoint()
            self.assertEqual((c.step, c.path, c.skipped, c.metadata),
                             (ref["latest"]["step"], ref["latest"]["path"], ref["latest"]["skipped"],
                              ref["latest"]["metadata"]))
            self.assertEqual(tensors_json(st.load_safetensors(c.path)), ref["latest"]["tensors"])

    def test_the_python_writers_reproduce_the_cpp_files_byte_for_byte(self):
        tmp = harness.temp_dir("rewrite")
        for d in self.sessions:
            s = ms.open_session(d)
            files = [s.recording_path(x) for x in s.recording_steps] + [s.checkpoint_path(x) for x in s.checkpoint_steps]
            for path in files:
                f = st.load_safetensors(path, bf16="raw")
                items = [(k, st.RawTensor("BF16", v.shape, v.tobytes()) if f.dtypes[k] == "BF16" else v)
                         for k, v in f.items()]
                out = os.path.join(tmp, "again.safetensors")
                st.save_safetensors(out, items, f.metadata)
                self.assertEqual(read(out), read(path), path)
            # metrics.log: the same frames; the records' JSON text too (compact, sorted keys).
            log = read(os.path.join(d, "metrics.log"))
            r = framed_log.read_framed_log(os.path.join(d, "metrics.log"))
            self.assertEqual(b"".join(framed_log.frame(p) for p in r.records), log)
            for p in r.records:
                again = dump_record(json.loads(p))
                if again != p:
                    # nlohmann prints doubles with Grisu2, which is not always the shortest text
                    # that reads back (74.06853206423921 where Python's repr writes
                    # 74.0685320642392; 133 of 200,000 random doubles): such a record (a
                    # timing, by chance) must then differ only in float literals that read
                    # back to the same doubles.
                    self.assertEqual(NUMBER.split(again), NUMBER.split(p), p)
                    for x, y in zip(NUMBER.findall(again), NUMBER.findall(p)):
                        if x != y:  # both floats (an integer must print the same), the same double
                            self.assertTrue(re.search(rb"[.eE]", x) and re.search(rb"[.eE]", y), (x, y, p))
                            self.assertEqual(float(x), float(y), p)

    def test_probe_summaries_equal_the_cpp_ones(self):
        for d in self.sessions:
            s = ms.open_session(d)
            probes = s.metrics.probes
            self.assertEqual([p["step"] for p in probes], s.recording_steps)
            for p in probes:
                rec = s.recording(p["step"])
                mine = ms.summarize_recording(rec.segments, [None if math.isnan(x) else x for x in rec.loss])
                mine.update({"type": "probe", "step": p["step"]})
                # scored_loss / scored_tokens come from the trainer, which knows which probe
                # tokens its task scores (core/train/recorder.h; tested there against the trace
                # contract); here: a mean of some of the recording's own per-token losses.
                p = dict(p)
                scored, n = p.pop("scored_loss", None), p.pop("scored_tokens", None)
                if scored is not None:
                    losses = np.concatenate([np.asarray(seg["lm.loss"], dtype=np.float64).ravel()
                                             for seg in rec.segments if "lm.loss" in seg])
                    self.assertGreater(n, 0)
                    self.assertLessEqual(n, losses.size)
                    self.assertGreaterEqual(scored, losses.min() - 1e-9)
                    self.assertLessEqual(scored, losses.max() + 1e-9)
                self.assertEqual(sorted(mine), sorted(p))
                flat_mine, flat_cpp = {}, {}
                from mnemoscope.session import _flatten
                _flatten("", mine, flat_mine)
                _flatten("", p, flat_cpp)
                self.assertEqual(sorted(flat_mine), sorted(flat_cpp))
                for k in flat_cpp:
                    if isinstance(flat_cpp[k], float):
                        self.assertAlmostEqual(flat_mine[k], flat_cpp[k], delta=1e-12 + 1e-9 * abs(flat_cpp[k]), msg=k)
                    else:
                        self.assertEqual(flat_mine[k], flat_cpp[k], k)
            self.assertIn("hash_entropy" if d == self.hashed else "rmt_block_mass", probes[-1])

    def test_exported_curves_equal_the_python_columns(self):
        out = harness.temp_dir("export")
        series, _ = export_csv(self.rmt, "loss,lr,grad-norm,probe-loss,block-mass", out)
        m = ms.open_session(self.rmt).metrics
        pairs = [(("loss", "train"), m["loss"]), (("lr", "learning rate"), m["lr"]),
                 (("grad-norm", "gradient norm"), m["grad_norm"]),
                 (("loss", "valid"), m.column("loss", type="eval", split="valid", final=False)),
                 (("probe-loss", "probe loss"), m.column("loss", type="probe")),
                 (("block-mass", "layer 1 rewriting"), m.column("rmt_block_mass.1[2]", type="probe"))]
        for key, col in pairs:
            self.assertEqual(series[key], [(int(s), g9(v)) for s, v in zip(col.step, col.value)], key)

    def test_step_output_of_every_model_passes_the_key_checks(self):
        src = os.environ.get("MNEMO_SOURCE_DIR", os.path.dirname(harness.PACKAGE_ROOT))
        doc = os.path.join(src, "assets", "sample.txt")
        small = ["--slots", "4", "--segment-len", "16", "--dim", "16", "--heads", "2", "--from", "0", "--to", "1",
                 "--format", "csv"]
        for model in (["--model", "memformer"], ["--model", "rmt"], ["--model", "rmt-write-only"],
                      ["--model", "trxl"], ["--model", "trxl-rmt"], ["--model", "transformer"], ["--model", "mtn"],
                      ["--model", "mtn-naive"], ["--model", "no-memory"],
                      ["--model", "rmt", "--linear", "hashed", "--hash-bits", "4"],
                      ["--model", "memformer", "--linear", "hashed", "--hash-bits", "4"]):
            out = harness.temp_dir("step")
            cli(["step", "--doc", doc, "--out", out] + small + model)
            traces = ms.read_traces(out)  # validate=True
            self.assertEqual(len(traces), 2)
            for t in traces:
                self.assertEqual(t.model["model"], model[1])
                ms.validate_segment(t.tensors, "%s %s" % (" ".join(model), t.path))
                ref = dump("safetensors", t.path)
                self.assertEqual(tensors_json(st.load_safetensors(t.path)), ref["tensors"])


class PythonWritesCppReads(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir, cls.logged = py_session("p")
        cls.dump = dump("session", cls.dir)

    def test_the_cpp_readers_read_it(self):
        s = ms.open_session(self.dir)
        self.assertNotIn("error", self.dump)
        self.assertEqual(self.dump["manifest"], s.manifest)
        self.assertEqual(self.dump["manifest"]["format_version"], ms.FORMAT_MAJOR)
        self.assertEqual(self.dump["metrics"]["records"], s.metrics.records)
        self.assertTrue(self.dump["metrics"]["clean"])
        self.assertEqual([t["step"] for t in self.dump["traces"]], [0, 20, 40])
        for t in self.dump["traces"]:
            self.assertNotIn("error", t["recording"])
            self.assertEqual(t["recording"], {"train_step": t["step"], "segment_len": 5, "segments": 4,
                                              "document_bytes": len(PY_DOC)})
            segs, _ = self.logged["segments"][t["step"]]
            by_name = {x["name"]: x for x in t["tensors"]}
            for i, seg in enumerate(segs):
                for k, v in seg.items():
                    self.assertEqual(by_name["s%d/%s" % (i, k)]["hex"], v.tobytes().hex())
        latest = self.dump["checkpoints"]["latest"]
        self.assertEqual((latest["step"], latest["skipped"], latest["metadata"]["step"]), (40, [], "40"))
        self.assertEqual(self.dump["checkpoints"]["steps"], [20, 40])

    def test_export_reads_it_and_the_curves_equal_what_python_logged(self):
        out = harness.temp_dir("pyexport")
        series, stdout = export_csv(self.dir, "loss,lr,grad-norm,probe-loss,block-mass", out)
        self.assertNotIn("note:", stdout)
        self.assertEqual(series[("loss", "train")], [(s, g9(v)) for s, v in self.logged["loss"]])
        self.assertIn((7, "nan"), series[("loss", "train")])
        self.assertEqual(series[("loss", "valid")], [(s, g9(v)) for s, v in self.logged["valid"]])
        self.assertEqual(series[("lr", "learning rate")], [(s, g9(v)) for s, v in self.logged["lr"]])
        self.assertEqual(series[("grad-norm", "gradient norm")], [(s, g9(v if math.isfinite(v) else math.nan))
                                                                  for s, v in self.logged["grad_norm"]])
        probe = []
        for step, (segs, losses) in sorted(self.logged["segments"].items()):
            finite = [l for l in losses if l is not None]
            probe.append((step, g9(sum(finite) / len(finite))))
        self.assertEqual(series[("probe-loss", "probe loss")], probe)
        want = [(step, g9(float(np.mean([seg["rmt.block_mass.0"].astype(np.float64).reshape(-1, 3).mean(0)[1]
                                          for seg in segs]))))
                for step, (segs, _) in sorted(self.logged["segments"].items())]
        self.assertEqual(series[("block-mass", "layer 0 writing")], want)
        # The recorded maps of every step and segment export too.
        run([BIN, "export", "--session", self.dir, "--figure", "maps", "--format", "csv", "--out", out])
        for step in (0, 20, 40):
            segs = sorted(os.listdir(os.path.join(out, "maps", "step-%09d" % step)))
            self.assertEqual(segs, ["segment-%04d" % i for i in range(4)])
            self.assertTrue(os.listdir(os.path.join(out, "maps", "step-%09d" % step, "segment-0001")))

    def test_the_apps_replay_reads_it(self):
        if not REPLAY:
            self.skipTest("the app is built without the GUI (MNEMO_GUI=OFF): no null-backend replay to run")
        r = json.loads(run([REPLAY, self.dir, "2"]).stdout)
        self.assertEqual(r["errors"], [])
        self.assertEqual(r["model"], "rmt")
        self.assertEqual(r["shown_recording"], 40)
        self.assertEqual([x["step"] for x in r["recordings"]], [0, 20, 40])
        for rec in r["recordings"]:
            self.assertTrue(rec["ok"])
            self.assertEqual(rec["segment_len"], 5)
            segs, losses = self.logged["segments"][rec["step"]]
            self.assertEqual(len(rec["segments"]), 4)
            for i, seg in enumerate(rec["segments"]):
                self.assertEqual((seg["position"], seg["length"]), (i, min(5, len(PY_DOC) - 5 * i)))
                self.assertEqual(seg["attention_kind"], "RMT")
                self.assertEqual(seg["attention_layers"], [0, 1])
                self.assertEqual(seg["attention_rows"], 3 + seg["length"] + 3)
                self.assertTrue(seg["traced_mass"])
                # The app shows the traced masses: [layer][mean, head 0, head 1][reading, writing, rewriting].
                bm = segs[i]["rmt.block_mass.0"][0]  # [H, 3]
                np.testing.assert_allclose(seg["mass"][:9], np.concatenate([bm.mean(0), bm.ravel()]), rtol=1e-6)
                if losses[i] is None:
                    self.assertIsNone(seg["loss"])  # NaN: no loss for this segment
                else:
                    self.assertAlmostEqual(seg["loss"], losses[i])
        loss = r["curves"]["loss"][0]
        self.assertEqual(loss["name"], "train")
        self.assertEqual(loss["x"], [s for s, _ in self.logged["loss"]])
        self.assertEqual([None if math.isnan(v) else v for _, v in self.logged["loss"]], loss["y"])


class SameOutcomeOnDamage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.py_dir, _ = py_session("damage")

    def copy(self, src):
        d = os.path.join(harness.temp_dir("copy"), "run")
        shutil.copytree(src, d)
        return d

    def compare_logs(self, variants):
        """Reads every variant with both readers; they must agree on everything."""
        tmp = harness.temp_dir("logs")
        paths = []
        for i, data in enumerate(variants):
            p = os.path.join(tmp, "v%05d.log" % i)
            write(p, data)
            paths.append(p)
        refs = dump("log", *paths)
        for p, ref in zip(paths, refs):
            r = framed_log.read_framed_log(p)
            self.assertEqual({"records_hex": [x.hex() for x in r.records], "offsets": r.offsets,
                              "gaps": [{"begin": g.begin, "end": g.end, "reason": g.reason} for g in r.gaps],
                              "good_bytes": r.good_bytes, "file_bytes": r.file_bytes, "clean": r.clean,
                              "stop_reason": r.stop_reason, "shrunk": r.shrunk}, ref, p)
        return refs

    def test_torn_tails_and_flipped_bytes_in_metrics_log(self):
        log = read(os.path.join(self.py_dir, "metrics.log"))
        # The first four records: cut at every length, and every byte flipped (two different bits).
        r = framed_log.read_framed_log(os.path.join(self.py_dir, "metrics.log"))
        n = sum(12 + len(p) for p in r.records[:4])
        head = log[:n]
        variants = [head[:cut] for cut in range(n + 1)]
        for at in range(n):
            for bit in (0x01, 0x80):
                d = bytearray(head)
                d[at] ^= bit
                variants.append(bytes(d))
        refs = self.compare_logs(variants)
        reasons = {ref["stop_reason"].split(" at byte")[0] for ref in refs}
        reasons |= {g["reason"] for ref in refs for g in ref["gaps"]}
        self.assertTrue({"torn tail: incomplete record header", "checksum mismatch in record length",
                         "checksum mismatch in record payload"} <= reasons, reasons)
        # A flipped byte in a record before the last loses that record only.
        self.assertTrue(any(ref["gaps"] and len(ref["records_hex"]) == 3 for ref in refs))

    def test_scrambled_middle_of_a_session_log_is_skipped_alike_and_named_alike(self):
        d = self.copy(self.py_dir)
        log = os.path.join(d, "metrics.log")
        raw = bytearray(read(log))
        mid = len(raw) // 2
        raw[mid:mid + 64] = bytes((i * 37 + 11) % 256 for i in range(64))
        write(log, bytes(raw))
        ref = dump("session", d)["metrics"]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            m = ms.open_session(d).metrics
        self.assertEqual(m.records, ref["records"])
        self.assertEqual([g.describe() for g in m.gaps], ref["gaps_described"])
        self.assertTrue(ref["gaps_described"], ref)
        self.assertIn(ref["gaps_described"][0], str(caught[0].message))
        # Records after the damage are read: the last step is there.
        self.assertEqual(m.last_step(), ms.open_session(self.py_dir).metrics.last_step())
        r = run([BIN, "export", "--session", d, "--figure", "loss", "--format", "csv", "--out", harness.temp_dir("e")])
        self.assertIn("note: " + ref["gaps_described"][0], r.stdout)

    def test_a_torn_session_log_reads_the_same_records_and_export_says_where_it_stops(self):
        d = self.copy(self.py_dir)
        log = os.path.join(d, "metrics.log")
        write(log, read(log)[:-5])
        ref = dump("session", d)["metrics"]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            m = ms.open_session(d).metrics
        self.assertEqual(m.records, ref["records"])
        self.assertEqual((m.read.good_bytes, m.stop_reason), (ref["good_bytes"], ref["stop_reason"]))
        self.assertIn(ref["stop_reason"], str(caught[0].message))
        r = run([BIN, "export", "--session", d, "--figure", "loss", "--format", "csv", "--out", harness.temp_dir("e")])
        self.assertIn("note: metrics.log stops at byte %d" % ref["good_bytes"], r.stdout)
        self.assertIn(ref["stop_reason"], r.stdout)

    def test_truncated_and_damaged_safetensors_get_the_same_message(self):
        s = ms.open_session(self.py_dir)
        for src in (s.recording_path(20), s.checkpoint_path(40)):
            tmp = harness.temp_dir("trunc")
            raw = read(src)
            hlen = 8 + int.from_bytes(raw[:8], "little")
            cuts = sorted(set(list(range(0, 16)) + list(range(16, hlen, 7)) + list(range(hlen - 8, hlen + 16))
                              + list(range(hlen, len(raw), 97)) + [len(raw) - 1]))
            flips = [(at, bit) for at in range(0, hlen, 3) for bit in (0x01, 0x40)]
            cases = [raw[:c] for c in cuts] + [raw[:a] + bytes([raw[a] ^ b]) + raw[a + 1:] for a, b in flips]
            paths = []
            for i, data in enumerate(cases):
                paths.append(os.path.join(tmp, "case%05d.safetensors" % i))
                write(paths[-1], data)
            refs = dump("safetensors", *paths)
            agree_messages = accepted = 0
            for p, ref in zip(paths, refs):
                try:
                    f = st.load_safetensors(p)
                    mine = {"metadata": f.metadata, "tensors": tensors_json(f)}
                except ms.SafetensorsError as e:
                    mine = {"error": str(e)}
                self.assertEqual("error" in mine, "error" in ref, (p, mine.get("error"), ref.get("error")))
                if "error" in ref:
                    a, b = strip_path(mine["error"], p), strip_path(ref["error"], p)
                    if "header is not valid JSON" in a:  # the two JSON parsers word their errors differently
                        self.assertIn("header is not valid JSON", b)
                    else:
                        self.assertEqual(a, b)
                        agree_messages += 1
                else:
                    self.assertEqual(mine, ref)  # a flip both accept (e.g. in a metadata string): the same content
                    accepted += 1
            self.assertGreaterEqual(agree_messages, len(cuts))  # every cut: the same words
            print("%s: %d damaged copies, %d rejected with the same message, %d accepted by both"
                  % (os.path.basename(src), len(cases), agree_messages, accepted))

    def test_a_corrupt_newest_checkpoint_falls_back_the_same_way(self):
        d = self.copy(self.py_dir)
        p = os.path.join(d, "checkpoints", "step-000000040.safetensors")
        write(p, read(p)[:60])
        ref = dump("session", d)["checkpoints"]["latest"]
        c = ms.open_session(d).checkpoint()
        self.assertEqual((c.step, c.skipped), (ref["step"], ref["skipped"]))
        self.assertEqual(c.step, 20)

    def test_a_wrong_dtype_or_shape_for_a_canonical_key_is_rejected_by_both(self):
        for key, value, part in [
            ("rmt.attn.0", np.zeros((1, 2, 11, 11), np.int64), "rmt.attn.0"),
            ("rmt.attn.0", np.zeros((1, 2, 11), np.float32), "rmt.attn.0"),
            ("memformer.slot_type", np.zeros((1, 3), np.float32), "memformer.slot_type"),
        ]:
            d = self.copy(self.py_dir)
            path = os.path.join(d, "traces", "step-000000020.safetensors")
            f = st.load_safetensors(path)
            items = [(k, value if k == "s1/" + key else v) for k, v in f.items()]
            if "s1/" + key not in f:
                items.append(("s1/" + key, value))
            st.save_safetensors(path, items, f.metadata)  # bypasses the writer's checks
            with self.assertRaises(ms.TraceKeyError) as cm:
                ms.open_session(d).recording(20)
            self.assertIn(part, str(cm.exception))
            ref = dump("session", d)
            rec = [t for t in ref["traces"] if t["step"] == 20][0]["recording"]
            self.assertIn("error", rec, key)
            self.assertEqual(str(cm.exception), rec["error"])  # the same words
            r = run([BIN, "export", "--session", d, "--figure", "maps", "--format", "csv", "--out",
                     harness.temp_dir("e")])
            self.assertIn("warning: skipped %s" % path, r.stdout)

    def test_a_newer_format_version_is_refused_by_every_reader_naming_both_versions(self):
        d = self.copy(self.py_dir)
        man = json.loads(read(os.path.join(d, "manifest.json")))
        man.update({"format_version": ms.FORMAT_MAJOR + 1, "format_minor": 4})
        write(os.path.join(d, "manifest.json"), json.dumps(man).encode())
        said = "session format version %d.4 is newer than the %d.%d this reader supports" % (
            ms.FORMAT_MAJOR + 1, ms.FORMAT_MAJOR, ms.FORMAT_MINOR)
        with self.assertRaises(ms.FormatVersionError) as cm:
            ms.open_session(d)
        self.assertIn(said, str(cm.exception))
        self.assertIn(said, dump("session", d)["error"])
        r = run([BIN, "export", "--session", d, "--out", harness.temp_dir("e")], ok=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn(said, r.stdout + r.stderr)
        if REPLAY:
            self.assertIn(said, " ".join(json.loads(run([REPLAY, d]).stdout)["errors"]))
        # A newer minor version of the same major one opens in both.
        man.update({"format_version": ms.FORMAT_MAJOR, "format_minor": ms.FORMAT_MINOR + 3, "added_later": [1]})
        write(os.path.join(d, "manifest.json"), json.dumps(man).encode())
        self.assertEqual(ms.open_session(d).format_version, (ms.FORMAT_MAJOR, ms.FORMAT_MINOR + 3))
        self.assertNotIn("error", dump("session", d))


if __name__ == "__main__":
    harness.main()
