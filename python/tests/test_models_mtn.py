"""mnemoscope.models_mtn: the Memory Transformer Network family (`mtn`, `mtn-naive`,
`no-memory`) in PyTorch against families/mtn/core/model.cpp. Weights both ways (C++ export-weights ->
load_weights, save_weights -> `mnemoscope step --checkpoint`) with every trace key of a
document equal to `mnemoscope step`'s (bit for bit with dense projections; the hashed layer
within a stated tolerance, its integer keys equal), the zoo's mtn-qa model, answer tagging
against the C++ trainer's probe recording, the memory ablations against `eval --doc`, float64
gradients against finite differences, keep_m_max's order, dropout, misfit messages. Skipped
(exit 77) without python3-torch; the cross-language cases are skipped without the built binary."""

import os

# OpenBLAS with 2 threads sums some products of the zoo model's sizes in another order than
# with 1 (both sides link the same libopenblas, and torch.set_num_threads does not reach it):
# bit-identity needs both sides on one thread. Set before numpy loads OpenBLAS; the C++
# children inherit it (`mnemoscope --threads` defaults to $OMP_NUM_THREADS). ctest sets it too.
os.environ["OMP_NUM_THREADS"] = "1"

import harness  # noqa: E402

harness.require_numpy()
if not harness.have_torch():
    harness.skip_all("PyTorch is not installed for this python3; install python3-torch (bash .ci/setup does)")

import dataclasses  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import subprocess  # noqa: E402
import unittest  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

import mnemoscope as ms  # noqa: E402
from mnemoscope import models as mm  # noqa: E402
from mnemoscope import models_mtn as mt  # noqa: E402

torch.set_num_threads(1)
BIN = harness.tool("MNEMOSCOPE_BIN")
cli = harness.Mnemoscope(BIN)  # the C++ side's command lines, one process for all of them
SRC = os.environ.get("MNEMO_SOURCE_DIR", os.path.dirname(harness.PACKAGE_ROOT))
DOC = b"Call me Ishmael. Some years ago, never mind how long precisely, having little money."  # 84 bytes

TINY = {"dim": 16, "heads": 2, "slots": 3, "segment_len": 16, "n1_layers": 1, "n2_layers": 2, "ff": 32}
CONFIGS = {
    "mtn": dict(TINY, model="mtn"),
    "mtn-naive": dict(TINY, model="mtn-naive"),
    "no-memory": dict(TINY, model="no-memory"),
    "mtn-hashed": dict(TINY, model="mtn", linear="hashed", hash_bits=4),
}
# As in test_models.py: the C++ Memory Layer computes p(z) with its own polynomial exp and sums
# its rows in vector lanes, so a hashed model agrees to float32 rounding: |py - cpp| <= 1e-4 (1 +
# |cpp|) on every float key (measured on this document: the worst |py - cpp| / (1 + |cpp|) is
# 2.8e-7 with the Python-built weights, 5.5e-7 with export-weights', both in mtn.e); the
# integer keys (buckets, counts, kept sources, indices, ages) are equal: no importance is
# within that rounding of the one it is ranked against here.
HASHED_RTOL = 1e-4




def python_steps(model, doc, n=None, segment_len=None):
    """Per segment: (the memory dict, traces as numpy)."""
    out, memory = [], None
    with torch.no_grad():
        for seg in mm.document_segments(doc, segment_len or model.config.segment_len)[:n]:
            _, memory, tr = model.step(seg, memory, trace=True)
            out.append((memory, {k: v.numpy() for k, v in tr.items()}))
    return out


def cpp_steps(weights, doc_path, segments):
    return harness.cpp_steps(cli, weights, doc_path, segments, "mtn-step")


def no_targets(seg):
    """The segment as the C++ engine gives it to a token classifier: no targets (no labels)."""
    return dataclasses.replace(seg, targets=None, target_valid=None)


def labelled(seg, answer_bytes=b"aeiou"):
    """The segment with 0/1 answer-tagging targets: 1 on the bytes of `answer_bytes`."""
    y = sum((seg.tokens == b) for b in answer_bytes).to(torch.int64)
    return dataclasses.replace(seg, targets=y, target_valid=seg.valid.clone())


class NoBinary(unittest.TestCase):
    """What needs no C++ program."""

    def test_parameters_and_round_trip(self):
        d = harness.temp_dir("mtn-rt")
        for name, cfg in CONFIGS.items():
            m = mm.build_model(cfg, seed=3)
            self.assertIsInstance(m, mt.Mtn)
            self.assertEqual(m.family, cfg["model"])
            names = set(m.state_dict())
            # docs/models.md "Parameters": which variant has what.
            self.assertIn("tok_emb.weight", names)
            self.assertEqual(tuple(m.tok_emb.weight.shape), (mm.VOCAB, 16 - 2))
            self.assertEqual("importance_v" in names, cfg["model"] == "mtn")
            self.assertEqual("importance_b" in names, cfg["model"] == "mtn")
            self.assertEqual("memory_ffn.fc1.weight" in names or "memory_ffn.fc1.tables" in names,
                             cfg["model"] != "no-memory")
            self.assertEqual(any(k.startswith("memory_layers.0.") for k in names), cfg["model"] != "no-memory")
            for k in ("chunk_layers.0.ln_attn.weight", "joint_layers.1.ln_ffn.bias", "lm_head.weight",
                      "qa_head.bias"):
                self.assertIn(k, names)
            path = os.path.join(d, name + ".safetensors")
            mm.save_weights(m, path)
            f = ms.load_safetensors(path)
            self.assertEqual(json.loads(f.metadata["model"]), mm.Config(cfg).to_json())
            self.assertEqual(sorted(f.keys()), sorted(names))
            back = mm.load_weights(path)
            self.assertIsInstance(back, mt.Mtn)
            for k, v in m.state_dict().items():
                self.assertTrue(torch.equal(v, back.state_dict()[k]), (name, k))
        with self.assertRaisesRegex(mm.WeightsError, "'dim' = 2 is too small for mtn"):
            mm.build_model(dict(TINY, model="mtn", dim=2, heads=1))

    def test_misfit_names_the_differing_field(self):
        d = harness.temp_dir("mtn-misfit")
        path = os.path.join(d, "mtn.safetensors")
        mm.save_weights(mm.build_model(CONFIGS["mtn"], seed=1), path)
        with self.assertRaises(mm.WeightsError) as e:
            mm.load_weights(path, config=CONFIGS["mtn-naive"])
        msg = str(e.exception)
        self.assertIn("belongs to another model config", msg)
        self.assertIn('model.model: "mtn" vs "mtn-naive"', msg)
        self.assertNotIn("model.dim", msg)
        # The names alone: mtn's importance parameters are unknown to mtn-naive.
        naive = mm.build_model(CONFIGS["mtn-naive"])
        with self.assertRaisesRegex(mm.WeightsError, r"2 unknown name\(s\): importance_b, importance_v"):
            mm.load_state(naive, mm.load_weights(path).state_dict())

    def test_traces_pass_the_key_checks(self):
        for name, cfg in CONFIGS.items():
            m = mm.build_model(cfg, seed=4)
            for i, (_, tr) in enumerate(python_steps(m, DOC, 2)):
                ms.validate_segment(tr, "%s segment %d" % (name, i))
            m.set_task_head("answer_tagging", 1.0, 2.0)
            memory = None
            for i, seg in enumerate(mm.document_segments(DOC, 16)[:2]):
                _, memory, tr = m.step(labelled(seg), memory, trace=True)
                ms.validate_segment({k: v.numpy() for k, v in tr.items()}, "%s qa segment %d" % (name, i))
                self.assertIn("qa.answer_prob", tr)
                self.assertIn("qa.loss", tr)
                self.assertNotIn("lm.loss", tr)

    def test_keep_m_max(self):
        # 5 candidates, one not ok (index 2, the largest score), a tie (indices 1 and 3), a NaN.
        emb = torch.arange(5, dtype=torch.float32).view(1, 5, 1).expand(1, 5, 2).contiguous()
        imp = torch.tensor([[0.5, 2.0, 9.0, 2.0, float("nan")]])
        ok = torch.tensor([[True, True, False, True, True]])
        src = torch.tensor([[10, 11, 12, 13, 14]])
        age = torch.tensor([[3, 0, 0, 1, 0]])
        k = mt.keep_m_max(emb, imp, ok, src, age, 3)
        self.assertEqual(k.index.tolist(), [[1, 3, 0]])  # the tie: lower index first; NaN and not ok last
        self.assertEqual(k.source.tolist(), [[11, 13, 10]])
        self.assertEqual(k.age.tolist(), [[0, 1, 3]])
        self.assertEqual(k.importance.tolist(), [[2.0, 2.0, 0.5]])
        self.assertEqual(k.embeddings[0, :, 0].tolist(), [1.0, 3.0, 0.0])
        # Fewer ok candidates than slots: the rest are empty.
        k = mt.keep_m_max(emb, torch.tensor([[1.0, 2.0, 3.0, 4.0, 5.0]]),
                          torch.tensor([[True, False, False, True, False]]), src, age, 3)
        self.assertEqual(k.index.tolist(), [[3, 0, -1]])
        self.assertEqual(k.source.tolist(), [[13, 10, -1]])
        self.assertEqual(k.age.tolist(), [[1, 3, -1]])
        self.assertEqual(k.importance.tolist(), [[4.0, 1.0, 0.0]])
        self.assertEqual(k.embeddings[0, 2].tolist(), [0.0, 0.0])

    def test_memory_state_across_segments(self):
        m = mm.build_model(CONFIGS["mtn"], seed=21)
        segs = mm.document_segments(DOC, 16)
        mem = m.initial_memory(1)
        self.assertEqual(mem["source"].tolist(), [[-1, -1, -1]])
        ages = []
        for i, seg in enumerate(segs):
            with torch.no_grad():
                _, new, tr = m.step(seg, mem, trace=True)
            self.assertEqual(new["tokens_read"].item(), 16 * (i + 1))
            # Each kept entry is a candidate of this step: an old entry or a token of this chunk.
            cand = tr["mtn.candidate_source"][0].tolist()
            for s, j in zip(new["source"][0].tolist(), tr["mtn.kept_index"][0].tolist()):
                self.assertEqual(cand[j], s)
                self.assertTrue(s < 84)
            ages += new["age"][0].tolist()
            mem = new
        self.assertGreater(max(ages), 0, "some entry survives a chunk on this document")
        # A batch row whose chunk is all padding keeps its memory, tokens_read included.
        seg = segs[0]
        two = mm.Segment(seg.tokens.repeat(2, 1), torch.stack([seg.valid[0], torch.zeros(16, dtype=torch.bool)]))
        start = {k: torch.cat([v, v]) for k, v in mem.items()}
        with torch.no_grad():
            _, after, _ = m.step(two, start)
        for k, v in after.items():
            self.assertTrue(torch.equal(v[1], start[k][1]), k)
            self.assertFalse(torch.equal(v[0], start[k][0]), k)

    def test_masks_of_the_two_tasks(self):
        """LM: no chunk row reads a later chunk key or the write copy; the read copy reads memory
        only; the write copy reads no read copy. Answer tagging: [memory ; chunk], bidirectional."""
        m = mm.build_model(CONFIGS["mtn"], seed=9)
        segs = mm.document_segments(DOC, 16)
        with torch.no_grad():
            _, mem, _ = m.step(segs[0])
            _, _, tr = m.step(segs[1], mem, trace=True)
        n, l = 3, 16
        self.assertEqual(tr["mtn.blocks"].tolist(), [n, l, n])
        for key in ("mtn.joint_attn.0", "mtn.joint_attn.1"):
            a = tr[key][0]  # [H, T, T], T = [read | chunk | write]
            self.assertEqual(tuple(a.shape), (2, 2 * n + l, 2 * n + l))
            self.assertEqual(a[:, :n, n:].abs().sum().item(), 0.0)                            # read -> memory only
            self.assertEqual(a[:, n:n + l, n + l:].abs().sum().item(), 0.0)                   # nobody reads write
            self.assertEqual(a[:, n:n + l, n:n + l].triu(1).abs().sum().item(), 0.0)          # causal chunk
            self.assertEqual(a[:, n + l:, :n].abs().sum().item(), 0.0)                        # write: no read copy
            self.assertGreater(a[:, n + l:, n:n + l].sum().item(), 0.0)                       # write reads chunk
            self.assertGreater(a[:, n:n + l, :n].sum().item(), 0.0)                           # chunk reads memory
        self.assertEqual(tuple(tr["mtn.e"].shape), (1, n + l, 16))
        m.set_task_head("answer_tagging")
        self.assertFalse(m.predicts_tokens)
        with torch.no_grad():
            out, _, tr = m.step(no_targets(segs[1]), mem, trace=True)
        self.assertEqual(tr["mtn.blocks"].tolist(), [n, l, 0])
        a = tr["mtn.joint_attn.0"][0]
        self.assertEqual(tuple(a.shape), (2, n + l, n + l))
        self.assertGreater(a[:, n, n + 1:].sum().item(), 0.0)   # the first chunk token reads later ones
        self.assertGreater(a[:, :n, n:].sum().item(), 0.0)      # memory rows read the chunk
        self.assertEqual(tuple(out.logits.shape), (1, l, 2))
        self.assertIsNone(out.loss)
        self.assertNotIn("qa.loss", tr)
        p = torch.softmax(out.logits, -1)[..., 1]
        torch.testing.assert_close(p, tr["qa.answer_prob"], rtol=1e-6, atol=1e-7)

    def test_answer_tagging_loss(self):
        """sum_j w_{y_j} nll_j / sum_j w_{y_j} over target_valid tokens, by hand."""
        m = mm.build_model(CONFIGS["mtn-naive"], seed=10).double()
        m.set_task_head("answer_tagging", other_weight=0.5, answer_weight=3.0)
        seg = labelled(mm.document_segments(DOC, 16)[1])
        seg.target_valid[0, 4] = False
        with torch.no_grad():
            out, _, tr = m.step(seg, trace=True)
        p = torch.sigmoid(out.logits[0, :, 1])
        y, tv = seg.targets[0], seg.target_valid[0]
        num = den = 0.0
        for j in range(16):
            if not tv[j]:
                self.assertEqual(tr["qa.loss"][0, j].item(), 0.0)
                continue
            nll = -math.log(p[j].item() if y[j] == 1 else 1.0 - p[j].item())
            w = 3.0 if y[j] == 1 else 0.5
            num, den = num + w * nll, den + w
            self.assertAlmostEqual(tr["qa.loss"][0, j].item(), nll, places=10)
        self.assertAlmostEqual(out.loss_sum.item(), num, places=10)
        self.assertAlmostEqual(out.loss_count.item(), den, places=12)
        self.assertAlmostEqual(out.loss.item(), num / den, places=10)
        with self.assertRaisesRegex(ValueError, "0 or 1"):
            m.step(mm.document_segments(DOC, 16)[0])  # token ids are no labels
        with self.assertRaisesRegex(ValueError, "finite and > 0"):
            m.set_task_head("answer_tagging", other_weight=0.0)
        with self.assertRaisesRegex(ValueError, "task head kind"):
            m.set_task_head("tagging")

    def test_dropout_in_train_mode_only(self):
        for name in ("mtn", "no-memory"):
            m = mm.build_model(CONFIGS[name], seed=12)
            drops = [mod for mod in m.modules() if isinstance(mod, torch.nn.Dropout)]
            # emb_drop and one per layer (chunk, memory, joint); 0.1, the paper's.
            layers = 1 + (1 if name != "no-memory" else 0) + 2
            self.assertEqual(len(drops), 1 + layers)
            self.assertTrue(all(d.p == 0.1 for d in drops))
            seg = mm.document_segments(DOC, 16)[0]
            self.assertFalse(m.training)
            a = m.step(seg)[0].loss
            self.assertEqual(a.item(), m.step(seg)[0].loss.item())
            m.train()
            torch.manual_seed(0)
            b = m.step(seg)[0].loss
            torch.manual_seed(1)
            c = m.step(seg)[0].loss
            self.assertNotEqual(a.item(), b.item())
            self.assertNotEqual(b.item(), c.item())
            m.eval()
            self.assertEqual(a.item(), m.step(seg)[0].loss.item())
        with self.assertRaisesRegex(ValueError, "dropout"):
            mt.Mtn(mm.Config(CONFIGS["mtn"]), dropout=1.0)

    def test_importance_gets_gradient_through_the_next_chunk_only(self):
        m = mm.build_model(CONFIGS["mtn"], seed=13)
        segs = mm.document_segments(DOC, 16)
        out, mem, _ = m.step(segs[0])
        out.loss.backward()
        for p in (m.importance_v, m.importance_b):
            self.assertTrue(p.grad is None or p.grad.abs().sum().item() == 0.0)
        m.zero_grad()
        out, _, _ = m.step(segs[1], {k: v.detach() for k, v in mem.items()})
        out.loss.backward()  # the memory detached: the stored importance is a constant
        for p in (m.importance_v, m.importance_b):
            self.assertTrue(p.grad is None or p.grad.abs().sum().item() == 0.0)
        m.zero_grad()
        r = m(segs[:2])
        r.loss.backward()
        self.assertGreater(m.importance_v.grad.abs().sum().item(), 0.0)
        self.assertGreater(m.importance_b.grad.abs().sum().item(), 0.0)

    def test_zeroed_memory_is_the_empty_memory(self):
        """The ablation zeroes floating-point tensors and takes the integer ones (source, age,
        tokens_read) from the initial memory, so a zeroed mtn memory is all empty entries."""
        m = mm.build_model(CONFIGS["mtn"], seed=14)
        segs = mm.document_segments(DOC, 16)
        with torch.no_grad():
            mem = m(segs[:2]).memory
        z = m.zero_memory(mem)
        init = m.initial_memory(1)
        self.assertEqual(sorted(z), sorted(init))
        for k in z:
            self.assertTrue(torch.equal(z[k], init[k]), k)
        with torch.no_grad():
            self.assertEqual(m(segs, between="zero").loss.item(), m(segs, between="reset").loss.item())


class Gradients(unittest.TestCase):
    """Float64 gradients of a three-segment rollout (full BPTT through the memory, eval mode:
    no dropout) against central finite differences. One layer per stack: a finite difference
    costs two forwards per checked entry, and a layer's code is the same at any depth; the
    two-layer models' gradients are checked against the C++ trainer's in test_models.py
    (test_gradients_equal_the_cpp_trainers)."""

    def margins(self, model, segs):
        """The smallest gap, over the steps, between the m-th and the (m+1)-th importance of
        the ok candidates: keep_m_max's choice cannot change under a perturbation that moves no
        importance by half of it."""
        gaps = []
        with torch.no_grad():
            memory = None
            for seg in segs:
                _, memory, tr = model.step(seg, memory, trace=True)
                ok = tr["mtn.candidate_source"][0] >= 0
                s = tr["mtn.importance"][0][ok].sort(descending=True)[0]
                m = model.config.slots
                if s.numel() > m:
                    gaps.append((s[m - 1] - s[m]).item())
        return min(gaps)

    def check(self, name, cfg, task=None):
        m = mm.build_model(cfg, seed=11, dtype=torch.float64)
        if task:
            m.set_task_head(*task)
        self.assertFalse(m.training)
        segs = mm.document_segments(DOC, cfg["segment_len"])[:3]
        if task:
            segs = [labelled(s) for s in segs]
        if cfg["model"] == "mtn":
            # The selection is discrete: this seed and document keep it well away from a tie.
            self.assertGreater(self.margins(m, segs), 1e-4, name)
        r = m(segs)
        self.assertEqual(len(r.outputs), 3)
        n = harness.finite_difference_check(self, m, lambda: m(segs).loss, picks=2)
        self.assertGreater(n, 40)
        if cfg["model"] != "no-memory":
            # Memory carries gradient: the first chunk's tokens reach the last segment's loss.
            m.zero_grad()
            r.outputs[-1].loss.backward()
            only0 = sorted(set(segs[0].tokens.flatten().tolist()) - set(segs[1].tokens.flatten().tolist())
                           - set(segs[2].tokens.flatten().tolist()))
            self.assertTrue(only0)
            self.assertGreater(m.tok_emb.weight.grad[only0].abs().sum().item(), 0.0, name)

    def test_language_modelling(self):
        for name in ("mtn", "mtn-naive", "no-memory"):
            with self.subTest(model=name):
                self.check(name, dict(CONFIGS[name], segment_len=8, dim=8, ff=16, slots=3, n2_layers=1))

    def test_answer_tagging(self):
        for name in ("mtn", "mtn-naive"):
            with self.subTest(model=name):
                self.check(name + "-qa", dict(CONFIGS[name], segment_len=8, dim=8, ff=16, slots=3, n2_layers=1),
                           ("answer_tagging", 0.7, 2.5))


@unittest.skipUnless(BIN, "the mnemoscope binary is not built (MNEMOSCOPE_BIN); run this test through ctest")
class AgainstCpp(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = harness.temp_dir("mtn-cpp")
        cls.doc = os.path.join(cls.dir, "doc.txt")
        with open(cls.doc, "wb") as f:
            f.write(DOC)
        cls.nseg = len(mm.document_segments(DOC, 16))  # 6, the last padded

    def compare_traces(self, name, cpp, py, tolerance=None):
        self.assertEqual(len(cpp), len(py))
        for i, (want_seg, got_seg) in enumerate(zip(cpp, py)):
            self.assertEqual(sorted(want_seg), sorted(got_seg), "%s segment %d: trace keys" % (name, i))
            for k, want in want_seg.items():
                got = got_seg[k]
                self.assertEqual((got.dtype, got.shape), (want.dtype, want.shape), (name, i, k))
                if tolerance and got.dtype.kind == "f":
                    np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance,
                                               err_msg="%s segment %d %s" % (name, i, k))
                else:
                    np.testing.assert_array_equal(got, want, err_msg="%s segment %d %s (bit-identical)" % (name, i, k))

    def compare(self, name, weights, python_model):
        cpp = cpp_steps(weights, self.doc, self.nseg)
        py = python_steps(python_model, DOC, self.nseg)
        hashed = python_model.config.linear == "hashed"
        self.compare_traces(name, [t.tensors for t in cpp], [tr for _, tr in py], HASHED_RTOL if hashed else None)
        if python_model.config.model == "mtn":
            ages = np.concatenate([t.tensors["mtn.age"].ravel() for t in cpp])
            self.assertGreater(ages.max(), 0, "%s: no entry survived a chunk; the test would not see the memory" % name)
        return cpp

    def test_python_weights_step_in_cpp(self):
        """save_weights -> `mnemoscope step --checkpoint`: every trace key equal (lm.loss, the
        kept sources / indices / ages / importances = the memory after each segment)."""
        for name, cfg in CONFIGS.items():
            with self.subTest(model=name):
                m = mm.build_model(cfg, seed=21)
                path = os.path.join(self.dir, "py-%s.safetensors" % name)
                mm.save_weights(m, path)
                self.compare(name, path, m)

    def test_cpp_weights_load_in_python(self):
        """`mnemoscope export-weights` (LibTorch's initialisation) -> load_weights: every tensor
        equal, saved back bit for bit, the same traces."""
        for name, cfg in CONFIGS.items():
            with self.subTest(model=name):
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

    def test_zoo_model(self):
        """assets/models/mtn-qa.safetensors (trained on QA; `step` runs it as a language model,
        as here): loaded, and 3 segments stepped bit for bit as C++ steps them."""
        path = os.path.join(SRC, "assets", "models", "mtn-qa.safetensors")
        m = mm.load_weights(path)
        self.assertEqual(m.source.kind, "zoo model")
        self.assertEqual(m.config.model, "mtn")
        self.assertTrue(m.predicts_tokens)
        doc = os.path.join(self.dir, "zoo.txt")
        with open(doc, "wb") as f:
            f.write(DOC * 2)
        cpp = cpp_steps(path, doc, 3)
        seg_len = int(cpp[0].metadata["segment_len"])
        self.assertLessEqual(seg_len, m.config.segment_len)
        py = python_steps(m, DOC * 2, 3, segment_len=seg_len)
        self.compare_traces("mtn-qa", [t.tensors for t in cpp], [tr for _, tr in py])
        self.assertGreater(cpp[2].tensors["mtn.age"].max(), 0)

    def test_answer_tagging_as_the_cpp_trainer_probes(self):
        """Answer tagging (the QA mode, bidirectional joint attention, qa_head): `mnemoscope
        mtn-qa` trains a tiny MTN one step on the qa task; its session's probe recording (the
        probe document stepped in answer-tagging mode, no labels: qa.answer_prob and the mtn.*
        keys it records) equals this module's steps from the session's checkpoint, bit for bit.
        (The qa loss is checked by hand in NoBinary.test_answer_tagging_loss.)"""
        cfg_path = os.path.join(self.dir, "qa.json")
        with open(cfg_path, "w") as f:
            json.dump({"model": dict(TINY, model="mtn", slots=4, segment_len=32),
                       "task": {"name": "qa", "seed": 3, "chunk_len": 32, "doc_chunks": 2, "facts": 1,
                                "candidates": 2, "train_size": 64, "valid_size": 4, "test_size": 4},
                       "train": {"steps": 1, "batch": 2, "eval_every": 1, "eval_batches": 1, "seed": 0}}, f)
        out = os.path.join(self.dir, "qa-out")
        cli(["mtn-qa", "--config", cfg_path, "--out", out, "--models", "mtn"])
        session = ms.open_session(os.path.join(out, "mtn"))
        rec = session.recording(1)
        self.assertEqual(rec.step, 1)
        m = mm.load_weights(os.path.join(out, "mtn"))  # its latest checkpoint: step 1
        self.assertEqual(m.source.step, 1)
        m.set_task_head("answer_tagging")
        segs = mm.document_segments(rec.document, rec.segment_len)
        self.assertEqual(len(segs), len(rec))
        memory, py = None, []
        with torch.no_grad():
            for seg in segs:
                _, memory, tr = m.step(no_targets(seg), memory, trace=True)
                py.append({k: v.numpy() for k, v in tr.items()})
        recorded = [dict(s) for s in rec]
        for s in recorded:
            self.assertIn("qa.answer_prob", s)
            self.assertNotIn("lm.loss", s)
        # The probe records every key but mtn.e (core/train/recorder.h leaves the largest out).
        self.compare_traces("qa probe", recorded, [{k: v for k, v in t.items() if k in r}
                                                   for t, r in zip(py, recorded)])
        self.assertEqual([sorted(set(t) - set(r)) for t, r in zip(py, recorded)], [["mtn.e"]] * len(recorded))

    def test_memory_carried_reset_zeroed_as_eval_doc(self):
        """forward(between=...) scores the document as `mnemoscope eval --doc --json` does with
        the memory carried, reset and zeroed (float32 summation order: 1e-5 bits per byte)."""
        segs = mm.document_segments(DOC, 16)
        for name in ("mtn", "mtn-naive", "no-memory"):
            with self.subTest(model=name):
                m = mm.build_model(CONFIGS[name], seed=21)
                path = os.path.join(self.dir, "doc-%s.safetensors" % name)
                mm.save_weights(m, path)
                j = json.loads(cli(["eval", "--checkpoint", path, "--doc", self.doc, "--json"]))
                with torch.no_grad():
                    bits = {b: float(r.loss_sum / r.loss_count) / math.log(2)
                            for b, r in ((b, m(segs, between=b)) for b in ("carry", "reset", "zero"))}
                self.assertAlmostEqual(j["bits_per_byte"], bits["carry"], delta=1e-5)
                if name == "no-memory":
                    self.assertFalse(j["has_memory"])
                    self.assertEqual(bits["carry"], bits["zero"])
                    continue
                self.assertAlmostEqual(j["bits_per_byte_reset_memory"], bits["reset"], delta=1e-5)
                self.assertAlmostEqual(j["bits_per_byte_zero_memory"], bits["zero"], delta=1e-5)
                self.assertNotAlmostEqual(bits["carry"], bits["reset"], delta=1e-6)

    def test_cpp_refuses_what_python_refuses(self):
        """An mtn file stepped with an mtn-naive config: both sides name the field."""
        path = os.path.join(self.dir, "refuse.safetensors")
        mm.save_weights(mm.build_model(CONFIGS["mtn"], seed=1), path)
        cfg_path = os.path.join(self.dir, "naive.json")
        with open(cfg_path, "w") as f:
            json.dump({"model": CONFIGS["mtn-naive"]}, f)
        p = subprocess.run([BIN, "step", "--checkpoint", path, "--config", cfg_path, "--doc", self.doc, "--out",
                            harness.temp_dir("refuse")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn('model.model: "mtn" vs "mtn-naive"', p.stdout.decode())
        with self.assertRaisesRegex(mm.WeightsError, 'model.model: "mtn" vs "mtn-naive"'):
            mm.load_weights(path, config=cfg_path)


if __name__ == "__main__":
    harness.main()
