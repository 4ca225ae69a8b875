"""The config field tables of the C++ side as data (docs/formats.md#config-schema).

config_schema.json beside this file is what `mnemoscope info --config-schema` prints: for each
config ("model", "train", "train.curriculum", "task", "task (qa)") its fields in declaration
order, each with its kind, range or allowed values, default, command-line flag and help. The
package reads the model config's fields, defaults and checks from it, so a field added to
ModelConfig::fields() (core/models/config.cpp) reaches Python by regenerating the file:

    build/mnemoscope info --config-schema > python/mnemoscope/config_schema.json

(ctest config_schema_in_sync fails while the copy differs from the program's output.)
"""

import json
import math
import os

_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "config_schema.json")
_SCHEMA = None


def schema():
    """The whole schema: {"schema_version": 1, "model": [rows], "train": [rows], ...}."""
    global _SCHEMA
    if _SCHEMA is None:
        with open(_PATH, "rb") as f:
            s = json.loads(f.read().decode("utf-8"))
        if s.get("schema_version") != 1:
            raise ValueError("%s: schema_version %r is not 1; reinstall the package" % (_PATH, s.get("schema_version")))
        _SCHEMA = s
    return _SCHEMA


def fields(config="model"):
    """The rows of one config, in declaration order (each a dict: name, kind, help, default, ...)."""
    return schema()[config]


def defaults(config="model"):
    """{field: default} of one config, in declaration order (the order to_json writes)."""
    return {r["name"]: r["default"] for r in fields(config)}


def number_text(v):
    """A number as the C++ messages print it (core/io/config_fields.h number_text: %.10g)."""
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    if isinstance(v, float) and math.isinf(v):
        return "Inf" if v > 0 else "-Inf"
    return "%.10g" % v


def _bound_text(v):
    return ("inf" if v > 0 else "-inf") if math.isinf(v) else number_text(v)


def _choices(values):
    quoted = ['"%s"' % v for v in values]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]


_KIND_WORDS = {"int": "an integer", "seed": "a non-negative integer", "real": "a number", "bool": "true or false",
               "string": "a string", "object": "a JSON object"}


def _json_text(v):
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


def _kind_ok(kind, v):
    if kind == "int":
        return isinstance(v, int) and not isinstance(v, bool)
    if kind == "seed":
        return isinstance(v, int) and not isinstance(v, bool) and v >= 0
    if kind == "real":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if kind == "bool":
        return isinstance(v, bool)
    if kind == "string":
        return isinstance(v, str)
    return isinstance(v, dict)


def check(config, values, prefix=""):
    """Checks `values` (a dict) against one config's table as ConfigFields::read and ::validate do:
    each key in sorted order (nlohmann's object order) known and of its kind, then every field
    (values over defaults) in range, in declaration order. Returns the merged dict; raises
    ValueError with the C++ message."""
    rows = fields(config)
    by_name = {r["name"]: r for r in rows}
    for k in sorted(values):
        r = by_name.get(k)
        if r is None:
            raise ValueError("config field '%s%s' is unknown; known fields: %s" % (prefix, k, ", ".join(by_name)))
        if not _kind_ok(r["kind"], values[k]):
            raise ValueError("config field '%s%s' must be %s, got %s" % (prefix, k, _KIND_WORDS[r["kind"]],
                                                                         _json_text(values[k])))
    merged = dict(defaults(config), **values)
    for r in rows:
        v, p = merged[r["name"]], prefix + r["name"]
        if r["kind"] == "int" and not r["min"] <= v <= r["max"]:
            raise ValueError("config field '%s' = %d is out of range %d..%d" % (p, v, r["min"], r["max"]))
        if r["kind"] == "real":
            lo = -math.inf if r["min"] is None else r["min"]
            hi = math.inf if r["max"] is None else r["max"]
            inside = not math.isnan(v) and (v > lo if r["min_open"] else v >= lo) and (v < hi if r["max_open"] else v <= hi)
            if not inside:
                raise ValueError("config field '%s' = %s is out of range %s%s, %s%s" % (
                    p, number_text(float(v)), "(" if r["min_open"] else "[", _bound_text(lo), _bound_text(hi),
                    ")" if r["max_open"] else "]"))
        if r["kind"] == "string" and r.get("allowed") and v not in r["allowed"]:
            raise ValueError("config field '%s' = '%s' must be %s" % (p, v, _choices(r["allowed"])))
    return merged
