"""mnemoscope.models: the model families in PyTorch against the C++ models. Weights both ways
(C++ export-weights -> load_weights, save_weights -> `mnemoscope step --checkpoint`), a
document's per-segment losses, memories and every trace key equal to `mnemoscope step`'s
(bit for bit with dense projections; the hashed layer within a stated tolerance), gradients
against finite differences in float64, misfit messages. Skipped (exit 77) without
python3-torch; the cross-language cases are skipped without the built binary."""

import harness

harness.require_numpy()
if not harness.have_torch():
    harness.skip_all("PyTorch is not installed for this python3; install python3-torch (bash .ci/setup does)")

import json
import math
import os
import subprocess
import unittest

import numpy as np
import torch

import mnemoscope as ms
from mnemoscope import models as mm

torch.set_num_threads(1)
BIN = harness.tool("MNEMOSCOPE_BIN")
cli = harness.Mnemoscope(BIN)  # the C++ side's command lines, one process for all of them
SRC = os.environ.get("MNEMO_SOURCE_DIR", os.path.dirname(harness.PACKAGE_ROOT))
DOC = b"Call me Ishmael. Some years ago, never mind how long precisely, having little money."  # 84 bytes

TINY = {"slots": 3, "segment_len": 16, "dim": 16, "heads": 2, "layers": 2, "dec_layers": 1, "ff": 32}
CONFIGS = {
    "memformer": dict(TINY, model="memformer"),
    "memformer-sqrt-noforget-2cls": dict(TINY, model="memformer", memory_scale="sqrt_dim", forgetting=False, n_cls=2),
    "memformer-no-memory": dict(TINY, model="memformer", memory=False),
    "memformer-gate": dict(TINY, model="memformer", memory_gate=True),
    "rmt": dict(TINY, model="rmt"),
    "rmt-write-only": dict(TINY, model="rmt-write-only"),
    "trxl": dict(TINY, model="trxl", slots=20),  # a cache longer than a segment (cache_len -1: slots)
    "trxl-cache-len": dict(TINY, model="trxl", cache_len=12),  # its own field: 12, not the 3 slots
    "trxl-rmt": dict(TINY, model="trxl-rmt", cache_len=8),
    "transformer": dict(TINY, model="transformer"),
    "rmt-hashed": dict(TINY, model="rmt", linear="hashed", hash_bits=4),
    "memformer-hashed": dict(TINY, model="memformer", linear="hashed", hash_bits=4),
}
# The C++ Memory Layer computes p(z) with its own polynomial exp (kernels/hashed_lookup_cpu.cpp)
# and sums its rows in vector lanes; PyTorch's exp and sigmoid round differently, so a hashed
# model agrees to float32 rounding, amplified through the layers: stated here as
# |py - cpp| <= 1e-4 (1 + |cpp|) on every float key (measured: the worst |py - cpp| is 1.1e-4
# times (1e-4 + |cpp|), i.e. ~1e-8 on tiny values); the integer keys (buckets, counts, slot
# types) are equal. A code bit that flips on an input within rounding of 0 would be a different
# bucket; none does on this document.
HASHED_RTOL = 1e-4


run = harness.run_ok


def open_gates(model):
    """A memory_gate model starts with every gate at 0, where the read is not used: open them,
    so that a comparison covers the gated read (each layer a different value)."""
    with torch.no_grad():
        gates = sorted(n for n, _ in model.named_parameters() if n.endswith("read_gate"))
        for i, name in enumerate(gates):
            model.get_parameter(name).fill_(0.4 + 0.3 * i)
    return model


def python_steps(model, doc, n=None, segment_len=None):
    """Per segment: (loss or None, the memory dict, traces as numpy); segments of segment_len
    tokens (default: the model's segment_len)."""
    out, memory = [], None
    with torch.no_grad():
        for seg in mm.document_segments(doc, segment_len or model.config.segment_len)[:n]:
            o, memory, tr = model.step(seg, memory, trace=True)
            out.append((None if o.loss is None else o.loss.item(), memory,
                        {k: v.numpy() for k, v in tr.items()}))
    return out


def cpp_steps(weights, doc_path, segments):
    return harness.cpp_steps(cli, weights, doc_path, segments, "models-step")


class NoBinary(unittest.TestCase):
    """What needs no C++ program."""

    def test_the_package_stays_numpy_only(self):
        code = "import sys, mnemoscope; sys.exit('torch' in sys.modules)"
        self.assertEqual(subprocess.run([harness.sys.executable, "-c", code],
                                        env=dict(os.environ, PYTHONPATH=harness.PACKAGE_ROOT)).returncode, 0)

    def test_config(self):
        c = mm.Config(model="rmt", slots=4)
        self.assertEqual((c.model, c.slots, c.dim, c.ff_width, c.temperature), ("rmt", 4, 64, 256, 0.25))
        self.assertEqual(json.loads(c.dumps()), c.to_json())
        with self.assertRaisesRegex(mm.WeightsError, "config field 'slotz' is unknown"):
            mm.Config(slotz=3)
        with self.assertRaisesRegex(mm.WeightsError, "'dim' = 10 must be divisible by 'heads' = 4"):
            mm.Config(dim=10)
        path = os.path.join(harness.temp_dir("cfg"), "c.json")
        with open(path, "w") as f:
            json.dump({"model": CONFIGS["rmt"], "task": {"name": "copy"}}, f)
        self.assertEqual(mm.Config.from_file(path), mm.Config(CONFIGS["rmt"]))
        self.assertEqual(mm.Config(temperature=1).differences(mm.Config(temperature=1.0)), [])
        self.assertEqual(mm.Config(forgetting=True).differences(mm.Config(forgetting=False)),
                         ["model.forgetting: true vs false"])

    def test_trxl_cache_length(self):
        """trxl's cache is cache_len long; its -1 is slots (how every trxl file was read), trxl-rmt's
        segment_len (ModelConfig, core/models/config.h)."""
        def cache(**kw):
            return mm.build_model(dict(TINY, **kw), seed=1).c
        self.assertEqual(cache(model="trxl", slots=5), 5)
        self.assertEqual(cache(model="trxl", slots=5, cache_len=9), 9)
        self.assertEqual(cache(model="trxl-rmt", slots=5), TINY["segment_len"])
        self.assertEqual(cache(model="trxl-rmt", slots=5, cache_len=2), 2)
        self.assertEqual(cache(model="rmt", slots=5), 0)

    def test_save_load_round_trip_every_family(self):
        d = harness.temp_dir("rt")
        for name, cfg in CONFIGS.items():
            m = mm.build_model(cfg, seed=3)
            path = os.path.join(d, name + ".safetensors")
            mm.save_weights(m, path)
            f = ms.load_safetensors(path)
            self.assertEqual(json.loads(f.metadata["model"]), mm.Config(cfg).to_json())
            self.assertEqual(sorted(f.keys()), sorted(m.state_dict()))
            back = mm.load_weights(path)
            self.assertEqual(back.config, m.config)
            for k, v in m.state_dict().items():
                self.assertTrue(torch.equal(v, back.state_dict()[k]), (name, k))
            self.assertEqual(mm.Config.from_weights(path), m.config)

    def test_misfits_are_named(self):
        d = harness.temp_dir("misfit")
        path = os.path.join(d, "rmt.safetensors")
        mm.save_weights(mm.build_model(CONFIGS["rmt"], seed=1), path)
        with self.assertRaises(mm.WeightsError) as e:
            mm.load_weights(path, config=dict(CONFIGS["rmt"], slots=5, dim=32))
        msg = str(e.exception)
        self.assertIn("belongs to another model config", msg)
        self.assertIn("model.dim: 16 vs 32", msg)
        self.assertIn("model.slots: 3 vs 5", msg)
        self.assertNotIn("model.heads", msg)
        with self.assertRaises(mm.WeightsError) as e:
            mm.load_weights(path, config=dict(CONFIGS["rmt"], model="trxl"))
        self.assertIn("model.model: \"rmt\" vs \"trxl\"", str(e.exception))
        # A state_dict from another project: every unknown and missing name listed.
        model = mm.build_model(CONFIGS["transformer"])
        foreign = {"encoder.weight": torch.zeros(3), "decoder.bias": torch.zeros(2)}
        foreign.update({k: v for k, v in model.state_dict().items() if k != "head.bias"})
        with self.assertRaises(mm.WeightsError) as e:
            mm.load_state(model, foreign)
        msg = str(e.exception)
        self.assertIn("2 unknown name(s): decoder.bias, encoder.weight", msg)
        self.assertIn("1 missing name(s): head.bias", msg)
        # A file whose names are another project's.
        ms.save_safetensors(os.path.join(d, "foreign.safetensors"), {"w": np.zeros(2, np.float32)},
                            {"model": mm.Config(CONFIGS["rmt"]).dumps()})
        with self.assertRaisesRegex(mm.WeightsError, "unknown name\\(s\\): w;.*missing name\\(s\\): head.bias"):
            mm.load_weights(os.path.join(d, "foreign.safetensors"))
        with self.assertRaisesRegex(mm.WeightsError, "shape"):
            bad = dict(model.state_dict())
            bad["head.bias"] = torch.zeros(3)
            mm.load_state(model, bad)

    def test_traces_pass_the_key_checks(self):
        for name, cfg in CONFIGS.items():
            m = mm.build_model(cfg, seed=4)
            for i, (_, _, tr) in enumerate(python_steps(m, DOC, 2)):
                ms.validate_segment(tr, "%s segment %d" % (name, i))

    def test_session_is_loaded_from_its_latest_checkpoint(self):
        d = os.path.join(harness.temp_dir("session"), "run")
        m = mm.build_model(CONFIGS["rmt"], seed=5)
        with ms.SessionWriter(d, config={"model": CONFIGS["rmt"]}) as w:
            w.checkpoint(1, {k: v for k, v in mm.build_model(CONFIGS["rmt"], seed=6).state_dict().items()})
            w.checkpoint(2, m.state_dict())
        for p in (d, os.path.join(d, "checkpoints"), os.path.join(d, "checkpoints", "latest")):
            back = mm.load_weights(p)
            self.assertEqual(back.source.path, os.path.join(d, "checkpoints", "step-000000002.safetensors"))
            self.assertTrue(all(torch.equal(v, back.state_dict()[k]) for k, v in m.state_dict().items()))

    def test_rollout_backpropagates_through_memory(self):
        segs = mm.document_segments(DOC, 16)[:3]
        for name in ("memformer", "rmt", "rmt-write-only", "trxl-rmt"):
            m = mm.build_model(CONFIGS[name], seed=7)
            r = m(segs)
            self.assertEqual(len(r.outputs), 3)
            want = sum(o.loss_sum for o in r.outputs) / sum(o.loss_count for o in r.outputs)
            self.assertEqual(r.loss.item(), want.item())
            r.loss.backward()
            # The first segment's memory (initial state) gets gradient only through later segments.
            p = m.v_bias if name.startswith("memformer") else m.memory_init
            self.assertGreater(p.grad.abs().sum().item(), 0, name)
        # Transformer-XL's cache is stop-gradient: the loss of segment 1 alone does not reach
        # segment 0's tokens' embeddings through it.
        m = mm.build_model(CONFIGS["trxl"], seed=7)
        _, mem, _ = m.step(segs[0])
        out, _, _ = m.step(segs[1], mem)
        out.loss.backward()
        used = set(segs[1].tokens.flatten().tolist()) | set(segs[1].targets.flatten().tolist())
        only0 = [t for t in set(segs[0].tokens.flatten().tolist()) if t not in used]
        self.assertTrue(only0)
        self.assertEqual(m.tok_emb.weight.grad[only0].abs().sum().item(), 0.0)


class Gradients(unittest.TestCase):
    """Float64 gradients of a two-segment rollout against central finite differences."""

    def test_every_family(self):
        """One layer per stack (the decoder's too): a finite difference costs two forwards per
        checked entry, and a layer's code is the same at any depth; the two-layer models'
        gradients are checked against the C++ trainer's in test_gradients_equal_the_cpp_trainers."""
        segs = mm.document_segments(DOC, 8)[:3]
        for name, cfg in CONFIGS.items():
            cfg = dict(cfg, segment_len=8, dim=8, ff=16, layers=1)
            if name == "trxl":
                cfg["slots"] = 10
            m = open_gates(mm.build_model(cfg, seed=11, dtype=torch.float64))
            with self.subTest(family=name):
                if m.config.model in ("trxl", "trxl-rmt"):
                    # The cache is stop-gradient by design, so the rollout's gradient is not the
                    # derivative of its loss: check one step from a state with a full cache.
                    with torch.no_grad():
                        state = m(segs[:2]).memory
                    n = harness.finite_difference_check(self, m, lambda: m.step(segs[2], state)[0].loss, picks=3)
                else:  # Memformer's loss is the next segment's: three segments give two losses
                    n = harness.finite_difference_check(self, m, lambda: m(segs).loss, picks=3)
                self.assertGreater(n, 10)

    def test_hashed_layer_alone(self):
        torch.manual_seed(0)
        layer = mm.HashedProjection(8, 5, 4, 0.7).double()
        x = torch.randn(6, 8, dtype=torch.float64, requires_grad=True)
        # Eq. 13 by hand: codes and p per chunk, a sum of looked-up rows.
        y = layer(x)
        for n in range(6):
            want = torch.zeros(5, dtype=torch.float64)
            for k in range(2):
                z = x[n, 4 * k:4 * k + 4].detach()
                code = sum(1 << i for i in range(4) if z[i] >= 0)
                p = torch.prod(1 / (1 + torch.exp(-2 * z.abs() / 0.7)))
                want += p * layer.tables[k, code].detach()
            torch.testing.assert_close(y[n].detach(), want, rtol=1e-12, atol=1e-12)
        self.assertTrue(torch.autograd.gradcheck(lambda a, t: (setattr(layer, "tables", t) or layer(a)),
                                                 (x, torch.nn.Parameter(layer.tables.detach().clone())), eps=1e-6,
                                                 atol=1e-7))
        # Only looked-up rows get gradient; sign(0) = +1: the input gradient at an exact zero is
        # the right-hand derivative.
        layer = mm.HashedProjection(2, 1, 2, 1.0).double()
        z = torch.tensor([[0.0, 0.5]], dtype=torch.float64, requires_grad=True)
        layer(z).sum().backward()
        rows_hit = (layer.tables.grad.abs().sum(-1) > 0).sum().item()
        self.assertEqual(rows_hit, 1)
        eps = 1e-7
        right = (layer(z.detach() + torch.tensor([[eps, 0.0]], dtype=torch.float64)) - layer(z.detach())) / eps
        self.assertAlmostEqual(z.grad[0, 0].item(), right.item(), places=5)


@unittest.skipUnless(BIN, "the mnemoscope binary is not built (MNEMOSCOPE_BIN); run this test through ctest")
class AgainstCpp(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = harness.temp_dir("models-cpp")
        cls.doc = os.path.join(cls.dir, "doc.txt")
        with open(cls.doc, "wb") as f:
            f.write(DOC)
        cls.nseg = len(mm.document_segments(DOC, 16))  # 6, the last padded

    def compare(self, name, weights, python_model, segments=None):
        nseg = segments or self.nseg
        cpp = cpp_steps(weights, self.doc, nseg)
        py = python_steps(python_model, DOC, nseg)
        self.assertEqual(len(cpp), nseg)
        hashed = python_model.config.linear == "hashed"
        for i, (t, (_, _, tr)) in enumerate(zip(cpp, py)):
            self.assertEqual(sorted(t.tensors), sorted(tr), "%s segment %d: trace keys" % (name, i))
            for k, want in t.tensors.items():
                got = tr[k]
                self.assertEqual((got.dtype, got.shape), (want.dtype, want.shape), (name, i, k))
                if hashed and got.dtype.kind == "f":
                    np.testing.assert_allclose(got, want, rtol=HASHED_RTOL, atol=HASHED_RTOL,
                                               err_msg="%s segment %d %s" % (name, i, k))
                else:
                    np.testing.assert_array_equal(got, want, err_msg="%s segment %d %s (bit-identical)" % (name, i, k))

    def test_python_weights_step_in_cpp(self):
        """save_weights -> `mnemoscope step --checkpoint`: the same traces (lm.loss = the losses,
        the memory keys = the memory after each segment) for every family."""
        for name, cfg in CONFIGS.items():
            with self.subTest(family=name):
                m = open_gates(mm.build_model(cfg, seed=21))
                path = os.path.join(self.dir, "py-%s.safetensors" % name)
                mm.save_weights(m, path)
                self.compare(name, path, m)

    def test_cpp_weights_load_in_python(self):
        """`mnemoscope export-weights` (LibTorch's initialisation) -> load_weights: every tensor
        equal, saved back bit for bit, the same traces."""
        for name, cfg in CONFIGS.items():
            with self.subTest(family=name):
                cfg_path = os.path.join(self.dir, "%s.json" % name)
                with open(cfg_path, "w") as f:
                    json.dump({"model": cfg}, f)
                path = os.path.join(self.dir, "cpp-%s.safetensors" % name)
                cli(["export-weights", "--config", cfg_path, "--seed", "5", "--out", path])
                m = mm.load_weights(path)
                self.assertEqual(m.config, mm.Config(cfg))
                f = ms.load_safetensors(path)
                self.assertEqual(sorted(f.keys()), sorted(m.state_dict()))
                again = os.path.join(self.dir, "again-%s.safetensors" % name)
                mm.save_weights(m, again)
                g = ms.load_safetensors(again)
                for k in f.keys():
                    np.testing.assert_array_equal(g[k], f[k], err_msg=k)
                self.compare(name, path, m)

    def test_zoo_models(self):
        """The zoo's models of the families done: loaded and stepped (3 segments) as C++ steps them."""
        zoo = os.path.join(SRC, "assets", "models")
        done = 0
        for fn in sorted(os.listdir(zoo)):
            if not fn.endswith(".safetensors"):
                continue
            path = os.path.join(zoo, fn)
            cfg = mm.Config.from_weights(path)
            if cfg.model not in mm.FAMILIES or cfg.segment_len > 64:
                continue
            with self.subTest(zoo=fn):
                m = mm.load_weights(path)
                self.assertEqual(m.source.kind, "zoo model")
                doc = os.path.join(self.dir, "zoo.txt")
                with open(doc, "wb") as f:
                    f.write(DOC * 2)
                cpp = cpp_steps(path, doc, 3)
                # `step` cuts a checkpoint's document as it was trained (rmt-copy: 13 of its
                # 37 tokens) and records the length in each trace's metadata.
                seg_len = int(cpp[0].metadata["segment_len"])
                self.assertLessEqual(seg_len, cfg.segment_len)
                py = python_steps(m, DOC * 2, 3, segment_len=seg_len)
                for i, (t, (_, _, tr)) in enumerate(zip(cpp, py)):
                    for k, want in t.tensors.items():
                        if m.config.linear == "hashed" and want.dtype.kind == "f":
                            np.testing.assert_allclose(tr[k], want, rtol=HASHED_RTOL, atol=HASHED_RTOL, err_msg=k)
                        else:
                            np.testing.assert_array_equal(tr[k], want, err_msg="%s segment %d %s" % (fn, i, k))
                done += 1
        self.assertGreater(done, 0)

    def test_memory_carried_reset_zeroed_as_eval_doc(self):
        """forward(between="carry" | "reset" | "zero") scores a document as `mnemoscope eval --doc
        --json` does with the memory carried, reset and zeroed at every segment (the file
        save_weights wrote, scored by the C++ side from its model config alone); bits per byte
        equal to float32 summation order (1e-5)."""
        segs = mm.document_segments(DOC, 16)
        for name in ("memformer", "rmt", "rmt-write-only", "trxl", "trxl-rmt", "transformer"):
            with self.subTest(family=name):
                m = mm.build_model(CONFIGS[name], seed=21)
                path = os.path.join(self.dir, "doc-%s.safetensors" % name)
                mm.save_weights(m, path)
                j = json.loads(cli(["eval", "--checkpoint", path, "--doc", self.doc, "--json"]))
                with torch.no_grad():
                    bits = {b: float(r.loss_sum / r.loss_count) / math.log(2)
                            for b, r in ((b, m(segs, between=b)) for b in ("carry", "reset", "zero"))}
                self.assertAlmostEqual(j["bits_per_byte"], bits["carry"], delta=1e-5)
                if name == "transformer":
                    self.assertFalse(j["has_memory"])
                    self.assertEqual(bits["carry"], bits["zero"])
                    continue
                self.assertAlmostEqual(j["bits_per_byte_reset_memory"], bits["reset"], delta=1e-5)
                self.assertAlmostEqual(j["bits_per_byte_zero_memory"], bits["zero"], delta=1e-5)
                self.assertNotAlmostEqual(bits["carry"], bits["zero"], delta=1e-6)  # the ablation changes the scores
        with self.assertRaisesRegex(ValueError, "between must be"):
            mm.build_model(CONFIGS["rmt"])(segs, between="keep")

    def test_eval_by_slot_equals_the_python_ablation(self):
        """`mnemoscope eval --doc --by-slot --json`: each entry's bits saved per segment, reset and
        zeroed, equal model.entry_effects (the entries removed by mnemoscope.models' own
        layout, step(ablate=...)), and every entry removed at once scores the document
        exactly as eval's reset / zeroed figures; per family (1e-5 bits: float32 losses summed
        in double on both sides)."""
        for name in ("memformer", "rmt", "rmt-write-only", "trxl", "trxl-rmt", "mtn", "mtn-naive"):
            with self.subTest(family=name):
                cfg = CONFIGS.get(name) or dict(TINY, model=name, n1_layers=1, n2_layers=1)
                m = mm.build_model(cfg, seed=23)
                path = os.path.join(self.dir, "slot-%s.safetensors" % name)
                mm.save_weights(m, path)
                j = json.loads(cli(["--threads", "1", "eval", "--checkpoint", path, "--doc", self.doc, "--by-slot",
                                "--json"]))
                segs = mm.document_segments(DOC, 16)
                self.assertEqual(j["ablate_all_reset"], j["bits_per_byte_reset_memory"])
                self.assertEqual(j["ablate_all_zeroed"], j["bits_per_byte_zero_memory"])
                for mode, suffix in (("reset", "_reset"), ("zero", "_zeroed")):
                    py = m.entry_effects(segs, mode)
                    self.assertEqual([e["label"] for e in j["entries"]], py["labels"])
                    self.assertEqual(j["entry_count"], len(py["labels"]))
                    self.assertEqual(len(j["segments_by_slot"]), len(py["segments"]))
                    moved = 0.0
                    for cs, ps in zip(j["segments_by_slot"], py["segments"]):
                        for got, want in zip(cs["bits_saved" + suffix], ps["bits_saved"]):
                            self.assertAlmostEqual(got, want, delta=1e-5)
                            moved = max(moved, abs(want))
                        self.assertAlmostEqual(cs["all_entries_bits_saved" + suffix], ps["all_bits_saved"], delta=1e-5)
                    for e, entry in enumerate(j["entries"]):
                        self.assertAlmostEqual(entry["bits_saved" + suffix],
                                               sum(s["bits_saved"][e] for s in py["segments"]), delta=1e-4)
                    if name != "rmt-write-only" or mode == "reset":
                        self.assertGreater(moved, 1e-4)  # the ablation changes the scores
                    # The all-entries ablation is the reset / zeroed rollout of forward().
                    with torch.no_grad():
                        r = m(segs, between=mode)
                    self.assertAlmostEqual(j["ablate_all" + suffix], float(r.loss_sum / r.loss_count) / math.log(2),
                                           delta=1e-5)

    def test_patch_from_equals_the_python_patch(self):
        """`eval --doc B --patch-from A:s --at t --json` equals forward(patch=(memory_after(A, s), t))
        of mnemoscope.models, per family; a patch of B's own memory changes nothing."""
        other = os.path.join(self.dir, "other.txt")
        doc_a = b"Queequeg and Ishmael shared a bed at the Spouter-Inn in New Bedford, then sailed."
        with open(other, "wb") as f:
            f.write(doc_a)
        for name in ("memformer", "rmt", "trxl", "trxl-rmt", "mtn"):
            with self.subTest(family=name):
                cfg = CONFIGS.get(name) or dict(TINY, model=name, n1_layers=1, n2_layers=1)
                m = mm.build_model(cfg, seed=29)
                path = os.path.join(self.dir, "patch-%s.safetensors" % name)
                mm.save_weights(m, path)
                j = json.loads(cli(["--threads", "1", "eval", "--checkpoint", path, "--doc", self.doc,
                                "--patch-from", other + ":3", "--at", "2", "--json"]))
                segs_a, segs_b = mm.document_segments(doc_a, 16), mm.document_segments(DOC, 16)
                with torch.no_grad():
                    patched = m(segs_b, patch=(m.memory_after(segs_a, 3), 2))
                    own = m(segs_b, patch=(m.memory_after(segs_b, 1), 2))
                    plain = m(segs_b)
                bits = lambda r: float(r.loss_sum / r.loss_count) / math.log(2)
                self.assertAlmostEqual(j["bits_per_byte_patched"], bits(patched), delta=1e-5)
                self.assertAlmostEqual(j["bits_per_byte"], bits(plain), delta=1e-5)
                self.assertEqual(bits(own), bits(plain))
                self.assertNotAlmostEqual(bits(patched), bits(plain), delta=1e-6)
                self.assertAlmostEqual(j["bits_saved_by_patch"], (float(plain.loss_sum) - float(patched.loss_sum)) /
                                       math.log(2), delta=1e-3)

    def test_gradients_equal_the_cpp_trainers(self):
        """The C++ trainer's first step (python/tests/grad_dump.cpp: its batch, its rollout with the
        config's strategy, its gradients, dropout off) against autograd through the PyTorch module
        from the same weights on the same batch, for every family (MTN also on the QA task: answer
        tagging, class weights, the memory frozen for the question): the objective equal, every
        parameter's gradient within 1e-4 of the tensor's largest (float32, summed in other
        orders; MRBP and checkpointing recompute the forward), so both sides train the same
        model. Measured: at most 3.1e-6 (MRBP)."""
        dump = harness.tool("MNEMO_GRAD_DUMP")
        if not dump:
            self.skipTest("grad_dump is not built (run through ctest)")
        small = dict(TINY, slots=4, segment_len=9)
        recall = {"name": "copy-recall", "source_len": 8, "segments": 3, "symbols": 10}
        copy = {"name": "copy", "source_len": 8, "segments": 3, "symbols": 10}
        cases = {
            "memformer-mrbp": (dict(small, model="memformer"), recall, "mrbp"),
            "memformer-checkpoint": (dict(small, model="memformer", memory_scale="sqrt_dim"), recall, "checkpoint"),
            "memformer-bptt": (dict(small, model="memformer", forgetting=False), recall, "bptt"),
            "rmt": (dict(small, model="rmt"), copy, "bptt"),
            "rmt-write-only": (dict(small, model="rmt-write-only"), copy, "bptt"),
            "trxl": (dict(small, model="trxl", slots=12), copy, "bptt"),
            "trxl-rmt": (dict(small, model="trxl-rmt", cache_len=6), copy, "bptt"),
            "transformer": (dict(small, model="transformer"), copy, "bptt"),
            "rmt-hashed": (dict(small, model="rmt", linear="hashed", hash_bits=4), copy, "bptt"),
            "mtn": (dict(small, model="mtn", n1_layers=1, n2_layers=2), copy, "bptt"),
            "mtn-naive": (dict(small, model="mtn-naive", n1_layers=1, n2_layers=2), copy, "bptt"),
            "no-memory": (dict(small, model="no-memory", n1_layers=1, n2_layers=2), copy, "bptt"),
            # The QA task: answer tagging with class weights, the memory frozen in the question phase.
            "mtn-qa": (dict(small, model="mtn", n1_layers=1, n2_layers=2, segment_len=48, slots=6),
                       {"name": "qa", "seed": 1, "chunk_len": 48, "doc_chunks": 2, "facts": 1, "candidates": 2,
                        "fact_chunks": 1, "train_size": 64, "valid_size": 16, "test_size": 16}, "bptt"),
        }
        pairs = []  # one grad_dump process for every case (one LibTorch start-up)
        for name, (model_cfg, task, strategy) in cases.items():
            cfg_path = os.path.join(self.dir, "grad-%s.json" % name)
            with open(cfg_path, "w") as f:
                json.dump({"model": model_cfg, "task": task,
                           "train": {"strategy": strategy, "batch": 3, "steps": 1, "seed": 2}}, f)
            pairs += [cfg_path, os.path.join(self.dir, "grad-%s.safetensors" % name)]
        run([dump] + pairs)
        for name, (model_cfg, task, strategy) in cases.items():
            with self.subTest(case=name):
                f = ms.load_safetensors(os.path.join(self.dir, "grad-%s.safetensors" % name))
                cfg = mm.Config(json.loads(f.metadata["model"]))
                m = mm.build_model(cfg)
                mm.load_state(m, {k[len("weight."):]: f[k] for k in f.keys() if k.startswith("weight.")})
                fields = ("tokens", "valid", "targets", "target_valid", "next_tokens", "next_valid")
                segs, k = [], 0
                while "%d.tokens" % k in f.keys():
                    d = {fl: torch.from_numpy(f["%d.%s" % (k, fl)].copy()) for fl in fields
                         if "%d.%s" % (k, fl) in f.keys()}
                    for fl in ("valid", "target_valid", "next_valid"):
                        if fl in d:
                            d[fl] = d[fl].to(torch.bool)
                    segs.append(mm.Segment(**d))
                    k += 1
                if "segments" in task:
                    self.assertEqual(k, task["segments"])
                if f.metadata["task_head"] == "answer_tagging":
                    other, answer = (float(x) for x in f.metadata["class_weights"].split())
                    m.set_task_head("answer_tagging", other_weight=other, answer_weight=answer)
                m.eval()  # dropout off, as grad_dump runs it (only the MTN family has dropout)
                freeze = int(f.metadata["freeze_from"])
                if freeze < 0:
                    loss = m(segs).loss
                else:  # the memory read but not updated from segment `freeze` on (core/train/rollout.h)
                    memory, total, count = None, 0, 0
                    for i, seg in enumerate(segs):
                        out, new_memory, _ = m.step(seg, memory)
                        memory = new_memory if i < freeze else memory
                        total, count = total + out.loss_sum, count + out.loss_count
                    loss = total / count.clamp_min(1.0)
                loss.backward()
                self.assertAlmostEqual(loss.item(), float(f.metadata["loss"]), delta=1e-5 * (1 + loss.item()))
                grads = {k[len("grad."):]: f[k] for k in f.keys() if k.startswith("grad.")}
                mine = {n: p.grad for n, p in m.named_parameters() if p.grad is not None}
                self.assertEqual(sorted(grads), sorted(mine), "the parameters that get a gradient")
                # A tensor's scale is its largest |gradient|, at least 1e-3 of the model's largest:
                # the key biases' gradients are 0 in exact arithmetic (softmax ignores a shift),
                # and both sides give rounding noise there (~1e-10).
                top = max(float(np.abs(g).max()) for g in grads.values())
                ratio = 0.0
                for n, want in grads.items():
                    got = mine[n].numpy()
                    scale = max(float(np.abs(want).max()), 1e-3 * top)
                    worst = float(np.abs(got - want).max())
                    ratio = max(ratio, worst / scale)
                    self.assertLessEqual(worst, 1e-4 * scale, "%s %s: |py - cpp| %.3g, largest |cpp| %.3g"
                                         % (name, n, worst, scale))
                print("%s (%s): loss %.6f, worst |py - cpp| / scale over %d gradients %.2g"
                      % (name, strategy, loss.item(), len(grads), ratio))

    def test_cpp_refuses_what_python_refuses(self):
        """A file save_weights wrote for one config, stepped with another: both sides name fields."""
        path = os.path.join(self.dir, "refuse.safetensors")
        mm.save_weights(mm.build_model(CONFIGS["rmt"], seed=1), path)
        cfg_path = os.path.join(self.dir, "other.json")
        with open(cfg_path, "w") as f:
            json.dump({"model": dict(CONFIGS["rmt"], slots=5)}, f)
        p = subprocess.run([BIN, "step", "--checkpoint", path, "--config", cfg_path, "--doc", self.doc, "--out",
                            harness.temp_dir("refuse")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("model.slots: 3 vs 5", p.stdout.decode())
        with self.assertRaisesRegex(mm.WeightsError, "model.slots: 3 vs 5"):
            mm.load_weights(path, config=cfg_path)


if __name__ == "__main__":
    harness.main()
