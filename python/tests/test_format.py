"""The Python reader and writer on their own (numpy only): CRC-32C, the framed metrics log,
safetensors, atomic writes, canonical trace keys, SessionWriter -> open_session round trips,
resume semantics, the format version, following a session being written, and the probe
summary against hand-computed values. The C++ side is compared in test_cross_language.py."""

import harness

harness.require_numpy()

import json
import math
import os
import struct
import threading
import time
import unittest
import warnings

import numpy as np

import mnemoscope as ms
from mnemoscope import crc32c as crcmod
from mnemoscope import framed_log, keys, safetensors as st
from mnemoscope.atomic import write_file_atomic


def read(p):
    with open(p, "rb") as f:
        return f.read()


def write(p, b):
    with open(p, "wb") as f:
        f.write(b)


RMT_MODEL = {"model": "rmt", "slots": 2, "segment_len": 4, "dim": 8, "heads": 2, "layers": 1}


def rmt_segment(rng, m=2, l=4, h=2, layers=1, with_tokens=True):
    t = 2 * m + l
    seg = {}
    for layer in range(layers):
        a = rng.random((1, h, t, t)).astype(np.float32)
        seg["rmt.attn.%d" % layer] = a / a.sum(-1, keepdims=True)
        seg["rmt.block_mass.%d" % layer] = rng.random((1, h, 3)).astype(np.float32)
    seg["rmt.memory_prev"] = rng.standard_normal((1, m, 8)).astype(np.float32)
    seg["rmt.memory"] = rng.standard_normal((1, m, 8)).astype(np.float32)
    if with_tokens:
        seg["input.tokens"] = rng.integers(97, 123, (1, l)).astype(np.int64)
    return seg


class Crc32c(unittest.TestCase):
    def test_check_value_and_mask(self):
        self.assertEqual(crcmod.crc32c(b"123456789"), 0xE3069283)
        self.assertEqual(crcmod.crc32c(b""), 0)
        self.assertNotEqual(crcmod.mask_crc(0xE3069283), 0xE3069283)
        # mask: rotate right 15, add 0xa282ead8 (mod 2^32), by hand for one value.
        c = 0x12345678
        rot = ((c >> 15) | (c << 17)) & 0xFFFFFFFF
        self.assertEqual(crcmod.mask_crc(c), (rot + 0xA282EAD8) & 0xFFFFFFFF)

    def test_vectorised_equals_scalar(self):
        rng = np.random.default_rng(1)
        buf = rng.integers(0, 256, 30000, dtype=np.uint8).tobytes()
        starts = rng.integers(0, 20000, 300)
        lengths = np.minimum(rng.integers(0, 6000, 300), 30000 - starts)
        lengths[:5] = 0
        got = crcmod.crc32c_many(buf, starts, lengths)
        for s, n, g in zip(starts, lengths, got):
            self.assertEqual(int(g), crcmod.crc32c(buf[s:s + n]))
        self.assertEqual(list(crcmod.mask_crc_many(got[:10])), [crcmod.mask_crc(int(x)) for x in got[:10]])


class FramedLog(unittest.TestCase):
    RECS = [b'{"step":1}', b'{"loss":1.5,"step":2}', b"x" * 300, b"", b'{"step":5}']

    def setUp(self):
        self.dir = harness.temp_dir("log")
        self.path = os.path.join(self.dir, "metrics.log")
        with framed_log.FramedLogWriter(self.path) as w:
            for r in self.RECS:
                w.append(r)
        self.bytes = read(self.path)

    def test_frame_layout_by_hand(self):
        payload = b'{"step":1}'
        head = struct.pack("<I", len(payload))
        expect = (head + struct.pack("<I", crcmod.mask_crc(crcmod.crc32c(head))) + payload
                  + struct.pack("<I", crcmod.mask_crc(crcmod.crc32c(payload))))
        self.assertEqual(self.bytes[:len(expect)], expect)
        self.assertEqual(len(self.bytes), sum(12 + len(r) for r in self.RECS))

    def test_round_trip(self):
        r = framed_log.read_framed_log(self.path)
        self.assertTrue(r.clean)
        self.assertEqual(r.records, self.RECS)
        self.assertEqual(r.good_bytes, r.file_bytes)
        missing = framed_log.read_framed_log(os.path.join(self.dir, "nope.log"))
        self.assertTrue(missing.clean)
        self.assertEqual(missing.records, [])

    def test_torn_tail_anywhere_in_the_last_record(self):
        last = len(self.bytes) - (12 + len(self.RECS[4]))
        for cut in range(last + 1, len(self.bytes)):
            write(self.path, self.bytes[:cut])
            r = framed_log.read_framed_log(self.path)
            self.assertFalse(r.clean)
            self.assertEqual(len(r.records), 4, cut)
            self.assertEqual(r.good_bytes, last)
            self.assertTrue(r.torn_tail)
            why = "incomplete record header" if cut - last < 8 else "record of 10 bytes is incomplete"
            self.assertEqual(r.stop_reason, "torn tail: %s at byte %d" % (why, last))

    def test_flipped_byte_skips_the_damaged_record_only(self):
        r1 = 12 + len(self.RECS[0])
        r1_end = r1 + 12 + len(self.RECS[1])
        for at in range(r1, r1_end):
            d = bytearray(self.bytes)
            d[at] ^= 0x10
            write(self.path, bytes(d))
            r = framed_log.read_framed_log(self.path)
            self.assertFalse(r.clean)
            self.assertEqual(r.records, self.RECS[:1] + self.RECS[2:], at)
            self.assertEqual(r.good_bytes, len(self.bytes))
            self.assertEqual(r.stop_reason, "")
            # A flipped length bit can make the length absurd or run past the end; the length
            # checksum is checked first, so it is still a checksum mismatch.
            part = "length" if at < r1 + 8 else "payload"
            self.assertEqual([(g.begin, g.end, g.reason) for g in r.gaps],
                             [(r1, r1_end, "checksum mismatch in record %s" % part)])
            self.assertEqual(r.gaps[0].describe(), "bytes %d-%d (checksum mismatch in record %s)" % (r1, r1_end, part))

    def test_damage_at_every_offset_loses_only_the_damaged_record(self):
        recs = [('{"step":%d,"loss":%.3f}' % (i, 1.0 / (i + 1))).encode() for i in range(60)]
        with framed_log.FramedLogWriter(self.path + "2") as w:
            for x in recs:
                w.append(x)
        data = read(self.path + "2")
        starts = np.cumsum([0] + [12 + len(x) for x in recs])
        for at in range(0, len(data), 7):
            k = int(np.searchsorted(starts, at, side="right")) - 1
            d = bytearray(data)
            d[at] ^= 0xFF
            write(self.path, bytes(d))
            r = framed_log.read_framed_log(self.path)
            self.assertEqual(r.records, recs[:k] + recs[k + 1:], at)

    def test_length_over_the_limit_with_a_valid_length_crc(self):
        head = struct.pack("<I", framed_log.MAX_RECORD_BYTES + 1)
        bad = head + struct.pack("<I", crcmod.mask_crc(crcmod.crc32c(head)))
        write(self.path, self.bytes + bad)
        r = framed_log.read_framed_log(self.path)
        self.assertEqual(len(r.records), 5)
        self.assertEqual(r.stop_reason, "record length %d over the limit at byte %d"
                         % (framed_log.MAX_RECORD_BYTES + 1, len(self.bytes)))

    def test_reading_from_an_offset_and_a_shrunk_file(self):
        r0 = framed_log.read_framed_log(self.path)
        with framed_log.FramedLogWriter(self.path) as w:
            w.append(b'{"step":6}')
        r = framed_log.read_framed_log(self.path, r0.good_bytes)
        self.assertEqual(r.records, [b'{"step":6}'])
        self.assertEqual(r.good_bytes, len(read(self.path)))
        write(self.path, self.bytes[:10])
        s = framed_log.read_framed_log(self.path, r.good_bytes)
        self.assertTrue(s.shrunk)
        self.assertEqual(s.good_bytes, 0)
        self.assertEqual(s.stop_reason, "the log is shorter (10 bytes) than the offset %d" % r.good_bytes)


class Safetensors(unittest.TestCase):
    def setUp(self):
        self.dir = harness.temp_dir("st")

    def p(self, name):
        return os.path.join(self.dir, name)

    def test_every_dtype_round_trips(self):
        rng = np.random.default_rng(2)
        tensors = {
            "f64": rng.standard_normal((2, 3)), "f32": rng.standard_normal(5).astype(np.float32),
            "f16": rng.standard_normal((2, 2)).astype(np.float16), "i64": np.array([-2**62, 7], np.int64),
            "i32": np.arange(6, dtype=np.int32).reshape(2, 3), "i16": np.array([-3], np.int16),
            "i8": np.array([[-128, 127]], np.int8), "u8": np.frombuffer(b"abc", np.uint8), "bool": np.array([True, False]),
            "scalar": np.float32(3.5), "empty": np.zeros((0, 4), np.float32),
            "bf16": st.RawTensor("BF16", (3,), st.float32_to_bf16(np.array([1.0, -2.5, 3.1415927], np.float32)).tobytes()),
        }
        st.save_safetensors(self.p("a.safetensors"), tensors, {"k": "v", "a": "{\"x\": 1}"})
        raw = read(self.p("a.safetensors"))
        n = struct.unpack("<Q", raw[:8])[0]
        self.assertEqual(n % 8, 0)
        header = json.loads(raw[8:8 + n])
        self.assertEqual(list(header)[0], "__metadata__")
        self.assertEqual(list(header)[1:], list(tensors))  # the given order
        f = st.load_safetensors(self.p("a.safetensors"))
        self.assertEqual(f.metadata, {"k": "v", "a": "{\"x\": 1}"})
        for k, v in tensors.items():
            if k == "bf16":
                continue
            np.testing.assert_array_equal(f[k], np.asarray(v))
            self.assertEqual(f[k].dtype, np.asarray(v).dtype, k)
        self.assertEqual(f.dtypes["bf16"], "BF16")
        np.testing.assert_array_equal(f["bf16"], np.array([1.0, -2.5, 3.140625], np.float32))
        self.assertEqual(list(f), list(tensors))  # by data offset = the written order
        # A file written again from what was read is byte for byte the same.
        again = dict(f.items())
        again["bf16"] = st.RawTensor("BF16", (3,), st.load_safetensors(self.p("a.safetensors"), bf16="raw")["bf16"].tobytes())
        st.save_safetensors(self.p("b.safetensors"), again, f.metadata)
        self.assertEqual(read(self.p("b.safetensors")), raw)

    def rejects(self, data, *parts):
        write(self.p("bad.safetensors"), data)
        with self.assertRaises(ms.SafetensorsError) as cm:
            st.load_safetensors(self.p("bad.safetensors"))
        msg = str(cm.exception)
        self.assertIn(self.p("bad.safetensors"), msg)
        for part in parts:
            self.assertIn(part, msg)
        return msg

    @staticmethod
    def file(header, data=b"", raw_header=None):
        h = raw_header if raw_header is not None else json.dumps(header).encode()
        return struct.pack("<Q", len(h)) + h + data

    def test_caps_on_rank_and_tensor_count(self):
        p = os.path.join(self.dir, "cap.safetensors")

        def file_of(header, data=b""):
            h = json.dumps(header).encode()
            write(p, struct.pack("<Q", len(h)) + h + data)

        file_of({"x": {"dtype": "F32", "shape": [1] * st.MAX_RANK, "data_offsets": [0, 4]}}, b"\0" * 4)
        self.assertEqual(st.load_safetensors(p)["x"].ndim, st.MAX_RANK)
        file_of({"x": {"dtype": "F32", "shape": [1] * (st.MAX_RANK + 1), "data_offsets": [0, 4]}}, b"\0" * 4)
        with self.assertRaises(st.SafetensorsError) as cm:
            st.load_safetensors(p)
        self.assertEqual(str(cm.exception), "%s: tensor 'x': shape has 17 dimensions, over the limit of 16" % p)
        many = {"t%d" % i: {"dtype": "U8", "shape": [0], "data_offsets": [0, 0]} for i in range(st.MAX_TENSORS + 1)}
        file_of(many)
        with self.assertRaises(st.SafetensorsError) as cm:
            st.load_safetensors(p)
        self.assertEqual(str(cm.exception), "%s: header lists 65537 tensors, over the limit of 65536" % p)

    def test_rejections_name_the_file_the_tensor_and_the_problem(self):
        self.rejects(b"", "file is 0 bytes, shorter than the 8-byte header length prefix")
        self.rejects(b"1234567", "file is 7 bytes")
        self.rejects(struct.pack("<Q", 100) + b"{}", "header length 100 bytes runs past the end of the file (2 bytes")
        self.rejects(struct.pack("<Q", st.MAX_HEADER_BYTES + 1), "exceeds the limit")
        self.rejects(self.file(None, raw_header=b"{nope"), "header is not valid JSON")
        self.rejects(self.file([1, 2]), "header is not a JSON object")
        self.rejects(self.file(None, raw_header=b'{"a":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},'
                                          b'"a":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}}'),
                     "header lists 'a' more than once")
        self.rejects(self.file({"t": {"dtype": "F8", "shape": [1], "data_offsets": [0, 1]}}, b"x"),
                     "tensor 't'", "unknown dtype 'F8'")
        self.rejects(self.file({"t": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, b"x" * 8),
                     "tensor 't'", "shape [3] with dtype F32 needs 12 bytes but data_offsets [0, 8] span 8 bytes")
        self.rejects(self.file({"t": {"dtype": "F32", "shape": [3], "data_offsets": [0, 12]}}, b"x" * 8),
                     "tensor 't'", "run past the end of the data section (8 bytes); the file is truncated")
        self.rejects(self.file({"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]},
                                "b": {"dtype": "U8", "shape": [4], "data_offsets": [2, 6]}}, b"x" * 6),
                     "tensor 'b'", "overlap tensor 'a' [0, 4]")
        self.rejects(self.file({"t": {"dtype": "BOOL", "shape": [2], "data_offsets": [0, 2]}}, b"\x00\x02"),
                     "BOOL data holds byte value 2 at element 1")
        self.rejects(self.file({"t": {"dtype": "U8", "shape": [-1], "data_offsets": [0, 0]}}), "shape dimension 0 is negative")
        self.rejects(self.file({"t": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1.0]}}, b"x"),
                     "data_offsets end is not an integer")
        self.rejects(self.file({"t": {"dtype": "U8", "shape": [0], "data_offsets": [1, 0]}}, b"x"), "have begin after end")
        self.rejects(self.file({"__metadata__": {"k": 1}}), "value for key 'k' is not a string")
        self.rejects(self.file({"t": {"shape": [0], "data_offsets": [0, 0]}}), 'missing "dtype"')
        with self.assertRaises(ms.SafetensorsError) as cm:
            st.load_safetensors(self.p("missing.safetensors"))
        self.assertIn("file does not exist", str(cm.exception))
        with self.assertRaises(ms.SafetensorsError) as cm:
            st.load_safetensors(self.dir)
        self.assertIn("is a directory", str(cm.exception))

    def test_truncated_files_are_rejected_at_every_length(self):
        st.save_safetensors(self.p("t.safetensors"), {"a": np.arange(10, dtype=np.float32), "b": np.ones(3)})
        raw = read(self.p("t.safetensors"))
        for cut in range(len(raw)):
            write(self.p("bad.safetensors"), raw[:cut])
            with self.assertRaises(ms.SafetensorsError, msg=str(cut)):
                st.load_safetensors(self.p("bad.safetensors"))

    def test_writer_rejections_touch_nothing(self):
        target = self.p("keep.safetensors")
        st.save_safetensors(target, {"a": np.ones(2, np.float32)})
        before = read(target)
        for tensors, meta, part in [
            ({"__metadata__": np.ones(1)}, None, "reserved for the metadata block"),
            ([("a", np.ones(1)), ("a", np.ones(1))], None, "duplicate tensor name"),
            ({"c": np.ones(2, np.complex64)}, None, "dtype complex64 is not supported"),
            ({"u": np.ones(2, np.uint32)}, None, "is not supported"),
            ({"": np.ones(1)}, None, "has an empty name"),
            ({"a": np.ones(1)}, {"k": 3}, "metadata must map strings to strings"),
        ]:
            with self.assertRaises(ms.SafetensorsError) as cm:
                st.save_safetensors(target, tensors, meta)
            self.assertIn(part, str(cm.exception))
        self.assertEqual(read(target), before)
        self.assertEqual(sorted(os.listdir(self.dir)), ["keep.safetensors"])

    def test_atomic_write_leaves_the_old_file_when_writing_fails(self):
        target = self.p("x.bin")
        write_file_atomic(target, b"old")

        def chunks():
            yield b"new part"
            raise RuntimeError("disk full (simulated)")

        with self.assertRaises(RuntimeError):
            write_file_atomic(target, chunks())
        self.assertEqual(read(target), b"old")
        self.assertEqual(os.listdir(self.dir), ["x.bin"])  # no temp file left
        write_file_atomic(target, [b"a", b"b"])
        self.assertEqual(read(target), b"ab")


class Keys(unittest.TestCase):
    def test_coercion_and_rejections(self):
        self.assertEqual(keys.coerce("rmt.attn.0", np.ones((1, 1, 4, 4))).dtype, np.float32)
        self.assertEqual(keys.coerce("input.tokens", np.ones((1, 3), np.int32)).dtype, np.int64)
        self.assertEqual(keys.coerce("user.anything", np.ones(3, np.uint32)).dtype, np.uint32)
        for key, value, part in [
            ("rmt.attn.0", np.ones((1, 1, 4, 4), np.int64), "must be floating point"),
            ("input.tokens", np.ones((1, 3), np.float32), "must be an integer tensor"),
            ("memformer.slot_type", np.array([[300]]), "do not fit its dtype int8"),
            ("rmt.attention.0", np.ones(1), "is not a canonical key"),
            ("rmt.attn.x", np.ones(1), "is not a canonical key"),
        ]:
            with self.assertRaises(ms.TraceKeyError) as cm:
                keys.coerce(key, value)
            self.assertIn(part, str(cm.exception))
            self.assertIn(key, str(cm.exception))

    def test_segment_shapes(self):
        rng = np.random.default_rng(3)
        self.assertTrue(keys.validate_segment(rmt_segment(rng)))
        for change, part in [
            (lambda s: s.update({"rmt.attn.0": np.ones((1, 2, 8), np.float32)}), "shape [1, 2, 8]; the canonical key is F32 [B, H, T, T]"),
            (lambda s: s.update({"rmt.attn.0": np.ones((1, 2, 8, 7), np.float32)}), "must be square"),
            (lambda s: s.update({"rmt.attn.0": np.ones((1, 2, 9, 9), np.float32)}), "T must be 8"),
            (lambda s: s.update({"rmt.block_mass.0": np.ones((1, 2, 4), np.float32)}), "canonical shape is [B, H, 3]"),
            (lambda s: s.update({"input.tokens": np.ones((2, 4), np.int64)}), "disagrees with 'input.tokens', where B = 2"),
            (lambda s: s.update({"hash.enc.q.counts": np.ones((2, 6), np.int64)}), "must be a power of two"),
        ]:
            seg = rmt_segment(rng)
            change(seg)
            with self.assertRaises(ms.TraceKeyError) as cm:
                keys.validate_segment(seg)
            self.assertIn(part, str(cm.exception))


class PredictedToken(unittest.TestCase):
    def test_which_token_each_loss_value_predicts(self):
        # docs/formats.md "lm.loss": Memformer's segment 2 of 16-token segments predicts tokens
        # 48.. of segment 3; every other kind's segment 2 predicts tokens 33..48.
        self.assertEqual(keys.predicted_token("memformer", 2, 16, 0), 48)
        self.assertEqual(keys.predicted_token("memformer", 2, 16, 15), 63)
        for kind in ("rmt", "rmt-write-only", "trxl", "trxl-rmt", "transformer", "mtn"):
            self.assertEqual(keys.predicted_token(kind, 2, 16, 0), 33)
            self.assertEqual(keys.predicted_token(kind, 2, 16, 15), 48)


class WriteThenRead(unittest.TestCase):
    def setUp(self):
        self.dir = os.path.join(harness.temp_dir("sess"), "run")

    def test_log_eval_writes_the_apps_eval_contract(self):
        with ms.SessionWriter(self.dir, config={"model": RMT_MODEL}) as w:
            w.log_eval(2, split="valid", loss=0.5, accuracy=0.75)
            w.log_eval(2, split="valid", zero_memory=True, final=True, loss=0.9, accuracy=0.25)
            with self.assertRaisesRegex(ValueError, r"split must be one of train, valid, test, got 'valid_zero_memory'; "
                                                    r"an evaluation with the memory zeroed is .*zero_memory=True"):
                w.log_eval(2, split="valid_zero_memory", loss=0.9)
            with self.assertRaisesRegex(ValueError, r"split must be one of train, valid, test, got 'dev'$"):
                w.log_eval(2, split="dev", loss=0.9)
        m = ms.open_session(self.dir).metrics
        self.assertEqual(m.column("accuracy", type="eval", split="valid").value.tolist(), [0.75])
        self.assertEqual(m.column("accuracy", type="eval", split="valid", zero_memory=True, final=True).value.tolist(), [0.25])
        self.assertEqual(m.column("accuracy", type="eval", split="valid", final=False, zero_memory=None).value.tolist(), [0.75])

    def test_session_round_trip(self):
        rng = np.random.default_rng(4)
        doc = "abcdefghij"  # 10 bytes in segments of 4: 3 segments
        segs = [rmt_segment(rng) for _ in range(3)]
        with ms.SessionWriter(self.dir, config={"model": RMT_MODEL, "note": "test"}) as w:
            for s in range(1, 6):
                w.log(s, loss=3.0 / s, accuracy=np.float32(0.25) * s, lr=1e-3, grad_norm=float("inf") if s == 3 else 0.5,
                      nested={"a": [1, None]})
            w.log_eval(4, split="valid", loss=0.5, accuracy=0.75)
            path = w.record(5, doc, segs, loss=[1.0, float("nan"), 2.0])
            w.checkpoint(5, {"w": np.arange(4, dtype=np.float32), "b": np.zeros(2, np.int64)}, {"note": "x"})
        self.assertEqual(path, os.path.join(self.dir, "traces", "step-000000005.safetensors"))
        s = ms.open_session(self.dir)
        self.assertEqual(s.format_version, (ms.FORMAT_MAJOR, ms.FORMAT_MINOR))
        self.assertEqual(s.manifest["kind"], "python")
        self.assertEqual(s.config["note"], "test")
        loss = s.metrics["loss"]
        np.testing.assert_array_equal(loss.step, [1, 2, 3, 4, 5])
        np.testing.assert_allclose(loss.value, [3.0, 1.5, 1.0, 0.75, 0.6])
        g = s.metrics["grad_norm"]
        self.assertTrue(math.isnan(g.value[2]))  # Inf was logged: stored as null, read as NaN, flagged
        np.testing.assert_array_equal(g.non_finite, [False, False, True, False, False])
        np.testing.assert_array_equal(g.non_finite_steps, [3])
        np.testing.assert_allclose(s.metrics["accuracy"].value, [0.25, 0.5, 0.75, 1.0, 1.25])
        self.assertTrue(s.metrics["nested.a[1]"].non_finite.all())
        valid = s.metrics.column("loss", type="eval", split="valid")
        np.testing.assert_array_equal(valid.value, [0.5])
        cols = s.metrics.columns("probe")
        self.assertIn("rmt_block_mass.0[2]", cols)
        with self.assertRaises(KeyError) as cm:
            s.metrics["los"]
        self.assertIn("accuracy, grad_norm, loss", str(cm.exception))
        # The recording: every array back as written, per segment, by canonical key.
        r = s.recording()
        self.assertEqual((r.step, r.segment_len, len(r)), (5, 4, 3))
        self.assertEqual(r.document, doc.encode())
        for i in range(3):
            self.assertEqual(sorted(r[i]), sorted(segs[i]))
            for k in segs[i]:
                np.testing.assert_array_equal(r[i][k], segs[i][k])
        self.assertEqual(r.loss[0], 1.0)
        self.assertTrue(math.isnan(r.loss[1]))
        self.assertEqual(r.token_range(2), (8, 2))
        self.assertEqual(r.stack("rmt.memory").shape, (3, 1, 2, 8))
        # Its summary record equals the summary computed from the arrays.
        probe = s.metrics.probes[0]
        self.assertEqual(probe["step"], 5)
        self.assertAlmostEqual(probe["loss"], 1.5)
        want = np.mean([seg["rmt.block_mass.0"].astype(np.float64).reshape(-1, 3).mean(0) for seg in segs], 0)
        np.testing.assert_allclose(probe["rmt_block_mass"]["0"], want, rtol=1e-12)
        c = s.checkpoint()
        self.assertEqual(c.step, 5)
        np.testing.assert_array_equal(c["w"], np.arange(4, dtype=np.float32))
        self.assertEqual(c.metadata["step"], "5")
        self.assertEqual(c.metadata["note"], "x")
        self.assertEqual(read(os.path.join(self.dir, "checkpoints", "latest")), b"step-000000005.safetensors\n")

    def test_bad_input_is_rejected_before_anything_is_written(self):
        rng = np.random.default_rng(5)
        with ms.SessionWriter(self.dir, config={"model": RMT_MODEL}) as w:
            before = sorted(os.listdir(os.path.join(self.dir, "traces")))
            log_before = read(os.path.join(self.dir, "metrics.log"))
            for segs, doc, part in [
                ([rmt_segment(rng)] * 2, "abcdefghij", "it has 3 segments"),
                ([{"rmt.attn.0": np.ones((1, 2, 8, 8), np.int32)}], "abcd", "must be floating point"),
                ([{"rmt.attn": np.ones((1, 2, 8, 8))}], "abcd", "is not a canonical key"),
                ([dict(rmt_segment(rng), **{"rmt.memory": np.ones((1, 3, 8), np.float32),
                                            "rmt.memory_prev": np.ones((1, 3, 8), np.float32)})], "abcd", "T must be 10"),
            ]:
                with self.assertRaises((ms.TraceKeyError, ValueError)) as cm:
                    w.record(1, doc, segs)
                self.assertIn(part, str(cm.exception))
            self.assertEqual(sorted(os.listdir(os.path.join(self.dir, "traces"))), before)
            self.assertEqual(read(os.path.join(self.dir, "metrics.log")), log_before)
            with self.assertRaises(TypeError):
                w.log(1, loss=object())
            with self.assertRaises(ValueError):
                w.log(-1, loss=1.0)
        with self.assertRaises(ms.SessionError) as cm:
            ms.SessionWriter(self.dir)
        self.assertIn("exists and is not empty", str(cm.exception))
        for model, part in [({"model": "rmt", "slot": 4}, "config field 'slot' is unknown"),
                            ({"model": "lstm"}, "config field 'model' = 'lstm' must be \"memformer\", \"rmt\""),
                            ({"model": "rmt", "dim": 10, "heads": 4}, "must be divisible by 'heads'"),
                            ({"model": "rmt", "slots": "4"}, "must be an integer"),
                            ({"model": "memformer", "memory_scale": "big"}, "'memory_scale' = 'big' must be")]:
            with self.assertRaises(ValueError) as cm:
                ms.SessionWriter(self.dir + "-x", config={"model": model})
            self.assertIn(part, str(cm.exception))
        self.assertFalse(os.path.exists(self.dir + "-x"))

    def test_checkpoints_keep_last_and_fall_back_past_a_corrupt_newest(self):
        with ms.SessionWriter(self.dir, keep_last=2) as w:
            for step in (10, 20, 30):
                w.checkpoint(step, {"w": np.full(3, step, np.float32)})
        s = ms.open_session(self.dir)
        self.assertEqual(s.checkpoint_steps, [20, 30])
        newest = s.checkpoint_path(30)
        write(newest, read(newest)[:50])
        c = s.checkpoint()
        self.assertEqual(c.step, 20)
        self.assertEqual(len(c.skipped), 1)
        self.assertIn("step-000000030.safetensors", c.skipped[0])
        os.unlink(newest)
        c = s.checkpoint()
        self.assertEqual(c.step, 20)
        self.assertIn("names 'step-000000030.safetensors', which is missing", c.skipped[0])
        write(s.checkpoint_path(20), b"garbage")
        with self.assertRaises(ms.SessionError) as cm:
            s.checkpoint()
        self.assertIn("no checkpoint loads", str(cm.exception))

    def test_resume_drops_later_records_and_repairs_a_torn_tail(self):
        with ms.SessionWriter(self.dir) as w:
            for s in range(1, 8):
                w.log(s, loss=float(s))
            w.log_eval(6, loss=0.1)
        log = os.path.join(self.dir, "metrics.log")
        write(log, read(log)[:-3])  # the crash tore the last record
        stale = os.path.join(self.dir, "checkpoints", ".step-000000005.safetensors.tmp-1-2-abcd")
        write(stale, b"half")
        w, repaired = ms.SessionWriter.resume(self.dir, 4)
        self.assertIn("dropped", repaired)
        self.assertIn("torn tail", repaired)
        self.assertFalse(os.path.exists(stale))
        with w:
            w.log(5, loss=50.0)
            w.log_eval(4, loss=0.4)  # out of step order: placed before step 5
        m = ms.open_session(self.dir).metrics
        self.assertTrue(m.clean)
        np.testing.assert_array_equal(m["loss"].step, [1, 2, 3, 4, 5])
        np.testing.assert_array_equal(m["loss"].value, [1, 2, 3, 4, 50])
        self.assertEqual([e["step"] for e in m.evals], [4])
        self.assertEqual(m.resumes, 1)
        # Resuming a session of a newer format is refused like opening one.
        man = json.loads(read(os.path.join(self.dir, "manifest.json")))
        man["format_version"] = ms.FORMAT_MAJOR + 1
        write(os.path.join(self.dir, "manifest.json"), json.dumps(man).encode())
        with self.assertRaises(ms.FormatVersionError):
            ms.SessionWriter.resume(self.dir, 4)

    def test_damaged_metrics_are_skipped_and_warned_about_naming_bytes_and_steps(self):
        with ms.SessionWriter(self.dir) as w:
            for s in range(1, 4):
                w.log(s, loss=float(s))
        log = os.path.join(self.dir, "metrics.log")
        clean = framed_log.read_framed_log(log)
        self.assertEqual(len(clean.offsets), 3)
        raw = bytearray(read(log))
        rec, rec_end = clean.offsets[1], clean.offsets[2]
        raw[rec + 10] ^= 1
        write(log, bytes(raw))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            m = ms.open_session(self.dir).metrics
        self.assertEqual([r["step"] for r in m.steps], [1, 3])
        self.assertFalse(m.clean)
        self.assertEqual(len(caught), 1)
        self.assertIs(caught[0].category, ms.MetricsWarning)
        want = ("skipped bytes %d-%d of metrics.log (checksum mismatch in record payload) between step 1 and step 3"
                % (rec, rec_end))
        self.assertEqual([g.describe() for g in m.gaps], [want])
        self.assertIn(want, str(caught[0].message))
        # A record that is not JSON is skipped the same way (Session::read_metrics).
        write(log, bytes(raw[:rec]) + framed_log.frame(b"not json") + bytes(raw[rec_end:]))
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            m = ms.open_session(self.dir).metrics
        self.assertEqual([r["step"] for r in m.steps], [1, 3])
        self.assertEqual([g.describe() for g in m.gaps],
                         ["skipped bytes %d-%d of metrics.log (record is not valid JSON) between step 1 and step 3"
                          % (rec, rec + 20)])


class FormatVersion(unittest.TestCase):
    def session(self, manifest):
        d = harness.temp_dir("ver")
        write(os.path.join(d, "manifest.json"), json.dumps(manifest).encode())
        return d

    def test_symbolic_links_below_a_session_are_not_followed(self):
        base = harness.temp_dir("links")
        d, outside = os.path.join(base, "run"), os.path.join(base, "outside")
        with ms.SessionWriter(d) as w:
            w.log(1, loss=1.0)
            w.checkpoint(10, {"w": np.ones(2, dtype=np.float32)})
        with ms.SessionWriter(outside) as w:
            w.log(1, loss=2.0)
            w.checkpoint(99, {"w": np.zeros(2, dtype=np.float32)})
        os.symlink(os.path.join(outside, "checkpoints", "step-000000099.safetensors"),
                   os.path.join(d, "checkpoints", "step-000000099.safetensors"))
        s = ms.open_session(d)
        self.assertEqual(s.checkpoint_steps, [10])
        c = s.checkpoint()
        self.assertEqual(c.step, 10)
        self.assertEqual(len(c.skipped), 1)
        self.assertIn("'checkpoints/step-000000099.safetensors' is a symbolic link", c.skipped[0])
        os.unlink(os.path.join(d, "metrics.log"))
        os.symlink(os.path.join(outside, "metrics.log"), os.path.join(d, "metrics.log"))
        with self.assertRaises(ms.SessionError) as cm:
            ms.open_session(d).metrics
        self.assertIn("'metrics.log' is a symbolic link; a session reads only files inside its directory", str(cm.exception))
        f = ms.open_session(d).follower()
        self.assertEqual(f.poll(), [])
        self.assertIn("is a symbolic link", f.problem)
        os.unlink(os.path.join(d, "manifest.json"))
        os.symlink(os.path.join(outside, "manifest.json"), os.path.join(d, "manifest.json"))
        with self.assertRaises(ms.SessionError) as cm:
            ms.open_session(d)
        self.assertIn("'manifest.json' is a symbolic link", str(cm.exception))

    def test_manifest_at_the_cap_opens_one_byte_more_is_refused(self):
        cap = ms.session.MAX_MANIFEST_BYTES
        d = harness.temp_dir("cap")
        text = json.dumps({"format_version": 1})
        write(os.path.join(d, "manifest.json"), (text + " " * (cap - len(text))).encode())
        self.assertEqual(ms.open_session(d).format_version, (1, 0))
        write(os.path.join(d, "manifest.json"), (text + " " * (cap + 1 - len(text))).encode())
        with self.assertRaises(ms.SessionError) as cm:
            ms.open_session(d)
        self.assertEqual(str(cm.exception), "%s: manifest is larger than the limit of %d bytes; it is not a session "
                         "manifest" % (os.path.join(d, "manifest.json"), cap))

    def test_newer_major_rejected_naming_both_versions(self):
        d = self.session({"format_version": ms.FORMAT_MAJOR + 1, "format_minor": 2})
        with self.assertRaises(ms.FormatVersionError) as cm:
            ms.open_session(d)
        self.assertIn("session format version %d.2 is newer than the %d.%d this reader supports"
                      % (ms.FORMAT_MAJOR + 1, ms.FORMAT_MAJOR, ms.FORMAT_MINOR), str(cm.exception))
        self.assertIn(os.path.join(d, "manifest.json"), str(cm.exception))

    def test_same_major_any_minor_opens(self):
        for m in ({"format_version": ms.FORMAT_MAJOR}, {"format_version": ms.FORMAT_MAJOR, "format_minor": 9, "new": 1}):
            self.assertEqual(ms.open_session(self.session(m)).format_version[0], ms.FORMAT_MAJOR)

    def test_malformed_versions(self):
        for m, part in [({}, "has no format_version"), ({"format_version": "1"}, "has no format_version"),
                        ({"format_version": 0}, "has no format_version"), ({"format_version": True}, "has no format_version"),
                        ({"format_version": 1, "format_minor": -1}, "format_minor -1 is not a non-negative integer")]:
            with self.assertRaises(ms.SessionError) as cm:
                ms.open_session(self.session(m))
            self.assertIn(part, str(cm.exception))
        with self.assertRaises(ms.SessionError) as cm:
            ms.open_session(harness.temp_dir("empty"))
        self.assertIn("not a session (no readable manifest.json)", str(cm.exception))


class Follow(unittest.TestCase):
    def test_follower_sees_records_as_they_are_written_and_waits_for_torn_ones(self):
        d = os.path.join(harness.temp_dir("follow"), "run")
        w = ms.SessionWriter(d)
        f = ms.open_session(d).follower()
        self.assertEqual(f.poll(), [])
        w.log(1, loss=1.0)
        w.log(2, loss=2.0)
        self.assertEqual([r["step"] for r in f.poll()], [1, 2])
        # A record half written: not returned until it is complete.
        frame = framed_log.frame(b'{"step":3,"type":"step"}')
        log = os.path.join(d, "metrics.log")
        with open(log, "ab") as fh:
            fh.write(frame[:9])
        self.assertEqual(f.poll(), [])
        self.assertEqual(f.problem, "")
        with open(log, "ab") as fh:
            fh.write(frame[9:])
        self.assertEqual([r["step"] for r in f.poll()], [3])
        # The log cut shorter (a resume repaired it): read again from the start.
        os.truncate(log, 0)
        w2 = framed_log.FramedLogWriter(log)
        w2.append(b'{"step":1,"type":"resume"}')
        w2.close()
        self.assertEqual(f.poll(), [{"step": 1, "type": "resume"}])
        self.assertEqual(f.epoch, 1)
        w.close()

    def test_follow_yields_from_a_writer_in_another_thread(self):
        d = os.path.join(harness.temp_dir("follow2"), "run")
        w = ms.SessionWriter(d)

        def produce():
            for s in range(20):
                w.log(s, loss=float(s))
                time.sleep(0.01)
            w.close()

        t = threading.Thread(target=produce)
        t.start()
        got = [r["step"] for r in ms.open_session(d).follow(interval=0.02, idle_timeout=1.0, timeout=30)]
        t.join()
        self.assertEqual(got, list(range(20)))


class Summary(unittest.TestCase):
    def test_summary_by_hand(self):
        segs = [
            {"memformer.slot_type": np.array([[0, 1, 2, 2]], np.int8),
             "memformer.forget_norm": np.array([9, 9, 9, 9], np.float32),
             "rmt.block_mass.0": np.array([[[0.2, 0.4, 0.6], [0.4, 0.6, 0.8]]], np.float32),
             "hash.enc.counts": np.array([[2, 2, 0, 0], [4, 0, 0, 0]], np.int64)},
            {"memformer.slot_type": np.array([[0, 0, 0, 1]], np.int8),
             "memformer.forget_norm": np.array([1, 2, 3, 4, 5], np.float32),
             "rmt.block_mass.0": np.array([[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]], np.float32),
             "hash.enc.counts": np.array([[0, 0, 2, 2], [0, 0, 0, 0]], np.int64)},
        ]
        j = ms.summarize_recording(segs, [2.0, None])
        self.assertAlmostEqual(j["loss"], 2.0)
        self.assertEqual(j["slot_types"], {"retain": 4 / 8, "mix": 2 / 8, "overwrite": 2 / 8})
        # Quantiles of the last segment's norms [1..5] (linear interpolation): p10 = 1.4, p90 = 4.6.
        self.assertAlmostEqual(j["forget_norm"]["p10"], 1.4, places=6)
        self.assertAlmostEqual(j["forget_norm"]["p50"], 3.0)
        self.assertAlmostEqual(j["forget_norm"]["p90"], 4.6, places=6)
        # Block masses: mean over heads per segment, then over segments: (0.3+1)/2, (0.5+1)/2, (0.7+1)/2.
        np.testing.assert_allclose(j["rmt_block_mass"]["0"], [0.65, 0.75, 0.85], rtol=1e-6)
        # Table 0 summed over segments: [2,2,2,2] -> entropy 1; table 1: one bucket -> 0.
        np.testing.assert_allclose(j["hash_entropy"]["enc"], [1.0, 0.0])


class StepOutput(unittest.TestCase):
    def test_read_trace_of_step_output(self):
        d = harness.temp_dir("step")
        for i in range(2):
            os.makedirs(os.path.join(d, "step-%04d" % i))
            st.save_safetensors(os.path.join(d, "step-%04d" % i, "trace.safetensors"),
                                {"memformer.writer_attn": np.full((1, 2, 3, 6), i, np.float32),
                                 "memformer.slot_type": np.zeros((1, 3), np.int8)},
                                {"segment": str(i), "model": json.dumps({"model": "memformer", "slots": 3})})
        t = ms.read_trace(os.path.join(d, "step-0001"))
        self.assertEqual(t.segment, 1)
        self.assertEqual(t.model["slots"], 3)
        self.assertEqual(float(t["memformer.writer_attn"].mean()), 1.0)
        self.assertEqual([x.segment for x in ms.read_traces(d)], [0, 1])
        st.save_safetensors(os.path.join(d, "bad.safetensors"), {"memformer.slot_type": np.zeros((1, 3), np.int64)})
        with self.assertRaises(ms.TraceKeyError) as cm:
            ms.read_trace(os.path.join(d, "bad.safetensors"))
        self.assertIn("'memformer.slot_type' is stored as I64 with shape [1, 3]; the canonical key is I8 [B, k]", str(cm.exception))


if __name__ == "__main__":
    harness.main()
