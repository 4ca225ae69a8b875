"""The PyTorch helpers (mnemoscope.pytorch): canonical keys from a model's tensors, checked by
hand and against the C++ models' own traces (`mnemoscope step` output), the forward-hook
collector, and torch tensors through the writer. Skipped (exit 77) without python3-torch."""

import harness

harness.require_numpy()
if not harness.have_torch():
    harness.skip_all("PyTorch is not installed for this python3; install python3-torch (bash .ci/setup does)")

import os
import subprocess
import unittest

import numpy as np
import torch

import mnemoscope as ms
from mnemoscope import pytorch as mp


class BlockMass(unittest.TestCase):
    def test_by_hand(self):
        # m = 1, L = 2, T = 4: rows/cols [r, t0, t1, w]; one head.
        a = torch.tensor([[1.0, 0.0, 0.0, 0.0],
                          [0.6, 0.4, 0.0, 0.0],
                          [0.2, 0.3, 0.5, 0.0],
                          [0.1, 0.2, 0.3, 0.4]]).view(1, 1, 4, 4)
        bm = mp.rmt_block_mass(a, 1)
        # reading: token rows' mass on the read column, mean (0.6 + 0.2) / 2; writing: the write
        # row's mass on token columns 0.2 + 0.3; rewriting: its mass on the read column 0.1.
        torch.testing.assert_close(bm, torch.tensor([[[0.4, 0.5, 0.1]]]))
        # A padded token is left out of reading and writing.
        bm = mp.rmt_block_mass(a, 1, token_valid=torch.tensor([[True, False]]))
        torch.testing.assert_close(bm, torch.tensor([[[0.6, 0.2, 0.1]]]))
        with self.assertRaises(ValueError):
            mp.rmt_block_mass(torch.ones(1, 1, 4, 4), 2)

    def test_traces_pass_the_key_checks(self):
        a = torch.softmax(torch.randn(2, 3, 9, 9), -1)  # m = 2, L = 5
        t = mp.rmt_traces({0: a, 1: a}, 2, tokens=torch.zeros(2, 5, dtype=torch.long),
                          memory_prev=torch.randn(2, 2, 4), memory=torch.randn(2, 2, 4))
        self.assertEqual(sorted(t), ["input.tokens", "rmt.attn.0", "rmt.attn.1", "rmt.block_mass.0", "rmt.block_mass.1",
                                     "rmt.memory", "rmt.memory_prev"])
        self.assertTrue(ms.validate_segment(t))
        self.assertEqual(t["rmt.block_mass.0"].shape, (2, 3, 3))


class OtherFamilies(unittest.TestCase):
    def test_memformer_slot_types_by_hand(self):
        w = torch.zeros(1, 2, 3, 4)
        w[0, :, 0, 0] = torch.tensor([0.95, 0.85])  # self mass mean 0.9 -> retain (>= 0.9)
        w[0, :, 1, 0] = torch.tensor([0.5, 0.5])    # mix
        w[0, :, 2, 0] = torch.tensor([0.1, 0.1])    # 0.1 -> overwrite (<= 0.1)
        t = mp.memformer_traces(w, v_bias=torch.tensor([[3.0, 4.0], [0.0, 0.0], [1.0, 0.0]]))
        np.testing.assert_array_equal(t["memformer.slot_type"], [[0, 1, 2]])
        self.assertEqual(t["memformer.slot_type"].dtype, np.int8)
        np.testing.assert_allclose(t["memformer.forget_norm"], [5.0, 0.0, 1.0])

    def test_mtn_derives_kept_entries(self):
        imp = torch.tensor([[0.5, 2.0, -1.0, 3.0]])
        t = mp.mtn_traces(imp, torch.tensor([[3, 1, -1]]), candidate_source=torch.tensor([[-1, 7, 8, 9]]))
        np.testing.assert_array_equal(t["mtn.kept_source"], [[9, 7, -1]])
        np.testing.assert_allclose(t["mtn.kept_importance"], [[3.0, 2.0, 0.0]])

    def test_hash_counts_by_hand(self):
        b = torch.tensor([[0, 3], [0, 1], [2, 1]])
        t = mp.hash_traces("enc.0.q", b, p=torch.rand(3, 2), bits=2)
        np.testing.assert_array_equal(t["hash.enc.0.q.counts"], [[2, 0, 1, 0], [0, 2, 0, 1]])
        self.assertEqual(t["hash.enc.0.q.bucket"].dtype, np.int32)
        with self.assertRaises(ValueError):
            mp.hash_traces("x", torch.tensor([[4]]), bits=2)


class Hooks(unittest.TestCase):
    def model(self):
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.attn = torch.nn.MultiheadAttention(8, 2, batch_first=True)
                self.ff = torch.nn.Linear(8, 8)

            def forward(self, x):
                y, _ = self.attn(x, x, x, need_weights=True, average_attn_weights=False)
                return self.ff(y)

        return Net()

    def test_collects_by_module_name_and_stops_when_closed(self):
        net = self.model()
        x = torch.randn(2, 5, 8)
        with mp.HookCollector(net, {"attn": "rmt.attn.0", "ff": ("user.ff", lambda m, i, o: o.sum(-1))}) as hooks:
            net(x)
            got = hooks.take()
            self.assertEqual(got["rmt.attn.0"].shape, (2, 2, 5, 5))  # per-head maps
            torch.testing.assert_close(got["rmt.attn.0"].sum(-1), torch.ones(2, 2, 5))
            self.assertEqual(got["user.ff"].shape, (2, 5))
            self.assertEqual(hooks.take(), {})
            hooks.enabled = False
            net(x)
            self.assertEqual(hooks.take(), {})
        net(x)  # hooks removed
        self.assertEqual(len(net.attn._forward_hooks), 0)

    def test_a_typo_names_the_close_modules(self):
        with self.assertRaises(KeyError) as cm:
            mp.HookCollector(self.model(), {"atn": "rmt.attn.0"})
        self.assertIn("did you mean attn", str(cm.exception))

    def test_concat_keeps_every_call(self):
        net = torch.nn.Linear(3, 3)
        with mp.HookCollector(net, {"": "user.out"}, concat=True) as hooks:
            net(torch.ones(1, 3))
            net(torch.ones(2, 3))
            self.assertEqual(hooks.take()["user.out"].shape, (3, 3))


class TensorsThroughTheWriter(unittest.TestCase):
    def test_state_dict_round_trip_bf16_included(self):
        d = os.path.join(harness.temp_dir("torchw"), "run")
        sd = {"w": torch.randn(3, 4), "h": torch.randn(5).half(), "b": torch.tensor([1.5, -2.25, 3.0]).bfloat16(),
              "i": torch.arange(4), "t": torch.randn(2, 3).t()}  # a transposed (non-contiguous) one too
        with ms.SessionWriter(d) as w:
            w.log(1, loss=torch.tensor(0.5, requires_grad=True) * 2, acc=torch.tensor([0.25]))
            w.checkpoint(1, sd)
        s = ms.open_session(d)
        self.assertEqual(s.metrics["loss"].value.tolist(), [1.0])
        self.assertEqual(s.metrics["acc"].value.tolist(), [0.25])
        c = s.checkpoint()
        for k, v in sd.items():
            np.testing.assert_array_equal(c[k], v.float().numpy() if v.dtype == torch.bfloat16 else v.numpy())
        self.assertEqual(c.dtypes["b"], "BF16")
        raw = ms.load_safetensors(s.checkpoint_path(1), bf16="raw")["b"]
        np.testing.assert_array_equal(raw, sd["b"].view(torch.int16).numpy().view(np.uint16))


class AgainstTheCppModels(unittest.TestCase):
    """The helpers give what the C++ models trace, on `mnemoscope step` output."""

    @classmethod
    def setUpClass(cls):
        cls.bin = harness.tool("MNEMOSCOPE_BIN")
        cls.src = os.environ.get("MNEMO_SOURCE_DIR", os.path.dirname(harness.PACKAGE_ROOT))

    def step(self, *args):
        if not self.bin:
            self.skipTest("the mnemoscope program is not built (MNEMOSCOPE_BIN)")
        out = harness.temp_dir("step")
        cmd = [self.bin, "step", "--doc", os.path.join(self.src, "assets", "sample.txt"), "--out", out, "--from", "0",
               "--to", "2", "--format", "csv", "--seed", "3"] + list(args)
        r = subprocess.run(cmd, capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return ms.read_traces(out)

    def test_rmt_block_mass_equals_the_cpp_one(self):
        for t in self.step("--model", "rmt", "--slots", "3", "--segment-len", "16", "--dim", "16", "--heads", "2",
                           "--layers", "2"):
            valid = torch.from_numpy(t["input.tokens"]) != 256
            for layer in (0, 1):
                mine = mp.rmt_block_mass(torch.from_numpy(t["rmt.attn.%d" % layer]), 3, valid)
                np.testing.assert_allclose(mine.numpy(), t["rmt.block_mass.%d" % layer], rtol=1e-5, atol=1e-6)

    def test_memformer_slot_types_equal_the_cpp_ones(self):
        for t in self.step("--model", "memformer", "--slots", "6", "--segment-len", "16", "--dim", "16", "--heads", "2",
                           "--temperature", "0.1"):
            mine = mp.slot_types(torch.from_numpy(t["memformer.writer_attn"]))
            np.testing.assert_array_equal(mine.numpy(), t["memformer.slot_type"])

    def test_hash_counts_equal_the_cpp_ones(self):
        for t in self.step("--model", "rmt", "--linear", "hashed", "--hash-bits", "4", "--slots", "2", "--segment-len",
                           "8", "--dim", "16", "--heads", "2", "--layers", "1"):
            paths = sorted(k[len("hash."):-len(".counts")] for k in t.keys() if k.endswith(".counts"))
            self.assertTrue(paths)
            for p in paths:
                # The FFN's second hashed layer uses tau + 2 bits (core/nn/hashed_linear.h): 2^bits from the counts.
                bits = int(t["hash.%s.counts" % p].shape[1]).bit_length() - 1
                self.assertIn(bits, (4, 6))
                mine = mp.hash_traces(p, torch.from_numpy(t["hash.%s.bucket" % p].astype(np.int64)), bits=bits)
                np.testing.assert_array_equal(mine["hash.%s.counts" % p], t["hash.%s.counts" % p])


if __name__ == "__main__":
    harness.main()
