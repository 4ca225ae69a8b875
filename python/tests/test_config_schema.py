"""One schema for config fields, two languages: the package's copy of the C++ field tables
(python/mnemoscope/config_schema.json) equals what `mnemoscope info --config-schema` prints, and
the package's model-config check (mnemoscope.validate_model_config, mnemoscope.models.Config)
accepts and refuses exactly what the C++ ModelConfig::from_json does, with the same message:
every field at each end of its range and one past it, a value of the wrong kind, a string outside
its allowed values, an unknown key, a check between fields and several faults at once (which one
is named first). The C++ side is python/tests/session_dump.cpp's `model-config` mode (one process
for every case)."""

import harness

import json
import os
import subprocess
import unittest

from mnemoscope import config_schema, validate_model_config

BIN = harness.tool("MNEMOSCOPE_BIN")
DUMP = harness.tool("MNEMO_SESSION_DUMP")
if not BIN or not DUMP:
    harness.skip_all("the C++ programs are not built (MNEMOSCOPE_BIN, MNEMO_SESSION_DUMP); run this test through ctest")

SCHEMA_FILE = os.path.join(harness.PACKAGE_ROOT, "mnemoscope", "config_schema.json")


def cases():
    """Model configs that probe every row of the table (name, config)."""
    out = [("defaults", {})]
    for r in config_schema.fields("model"):
        n, k = r["name"], r["kind"]
        if k == "int":
            for v in (r["min"], r["max"], r["min"] - 1, r["max"] + 1):
                out.append(("%s=%d" % (n, v), {n: v}))
            out.append(("%s real" % n, {n: 2.5}))
            out.append(("%s bool" % n, {n: True}))
        elif k == "real":
            for b, is_open in ((r["min"], r["min_open"]), (r["max"], r["max_open"])):
                if b is not None:
                    out.append(("%s=%r" % (n, b), {n: b}))
                    out.append(("%s near %r" % (n, b), {n: b + (0.5 if b == r["min"] else -0.5)}))
            out.append(("%s below" % n, {n: (r["min"] if r["min"] is not None else 0) - 1.5}))
            if r["max"] is not None:
                out.append(("%s above" % n, {n: r["max"] + 1.5}))
            out.append(("%s string" % n, {n: "1"}))
            out.append(("%s integer" % n, {n: 1}))
        elif k == "bool":
            out.append(("%s true" % n, {n: True}))
            out.append(("%s number" % n, {n: 1}))
        elif k == "string":
            for a in r.get("allowed", []):
                out.append(("%s=%s" % (n, a), {n: a}))
            out.append(("%s bogus" % n, {n: "bogus"}))
            out.append(("%s number" % n, {n: 3}))
    out += [("unknown key", {"slot": 4}),
            ("dim not divisible", {"dim": 30, "heads": 4}),
            ("two faults: unknown key first (sorted)", {"zz": 1, "dim": 0}),
            ("two faults: range before divisibility", {"dim": 30, "heads": 0}),
            ("two ranges: declaration order", {"heads": 0, "slots": 0}),
            ("kind before range", {"slots": 0, "temperature": "hot"}),
            ("nested object", {"slots": {"n": 4}}),
            ("list", {"dim": [64]})]
    return out


class ConfigSchema(unittest.TestCase):
    def test_copy_equals_the_program(self):
        r = subprocess.run([BIN, "info", "--config-schema"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(SCHEMA_FILE, encoding="utf-8") as f:
            copy = json.load(f)
        self.assertEqual(copy, json.loads(r.stdout),
                         "python/mnemoscope/config_schema.json differs from the program's field tables; "
                         "regenerate it: build/mnemoscope info --config-schema > python/mnemoscope/config_schema.json")
        self.assertEqual(set(copy), {"schema_version", "model", "train", "train.curriculum", "task", "task (qa)"})

    def test_python_checks_as_the_cpp_side(self):
        d = harness.temp_dir("schema")
        cs = cases()
        paths = []
        for i, (_, cfg) in enumerate(cs):
            p = os.path.join(d, "c%03d.json" % i)
            with open(p, "w", encoding="utf-8") as f:
                json.dump(cfg, f)
            paths.append(p)
        r = subprocess.run([DUMP, "model-config"] + paths, capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        cpp = json.loads(r.stdout)
        self.assertEqual(len(cpp), len(cs))
        refused = accepted = 0
        for (name, cfg), c in zip(cs, cpp):
            with self.subTest(case=name):
                try:
                    validate_model_config(cfg)
                    py = None
                except ValueError as e:
                    py = str(e)
                if "error" in c:
                    refused += 1
                    self.assertEqual(py, c["error"])
                else:
                    accepted += 1
                    self.assertIsNone(py, "C++ accepts %s" % json.dumps(cfg))
                    from_py = config_schema.check("model", cfg)
                    self.assertEqual(sorted(from_py), sorted(c["config"]), "the same fields")
                    for k, v in c["config"].items():
                        self.assertEqual(from_py[k], v, k)
        # Both outcomes occur (a check that accepted everything, or refused everything, would pass
        # the comparison above without testing it).
        self.assertGreater(refused, 40)
        self.assertGreater(accepted, 20)

    def test_defaults_follow_the_schema(self):
        try:
            from mnemoscope.models import DEFAULTS
        except ImportError:
            self.skipTest("mnemoscope.models needs torch")
        self.assertEqual(DEFAULTS, config_schema.defaults("model"))


if __name__ == "__main__":
    harness.main()
