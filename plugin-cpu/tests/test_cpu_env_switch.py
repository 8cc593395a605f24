"""The C++ side reads its OPFORGE_CPU_* variables through csrc/core/env_switch.hpp (kernels.md
"How the C++ switches are read"), and the three kinds keep their rules:

- a default-on switch (OPFORGE_CPU_STEM_CONV) is off only for exactly "0": unset, empty, "00",
  "false" and "1" leave the stem convolution on our kernel (exec type ``stem:avx512``);
- a chunk-count knob (OPFORGE_CPU_CONV_SPLIT_CHUNKS) reads what atoll reads and its call site
  clamps it to at least 1: empty, non-numeric and negative values split a bf16 1x1 convolution at
  2 threads exactly as "1" does, and unset exactly as its default "2" (the ``+pixelsN`` count);
- the word-valued, default-off OPFORGE_CPU_CONV_ROWS splits a bf16 3x3 convolution into row
  chunks (``+rowsK``) only for "1" and "dw": unset, empty, "0" and "yes" keep it whole.

A process reads each variable once, so every setting runs in a child process, which prints the
exec types of an f32 stem model at 1 thread and of a bf16 1x1 -> 3x3 model at 2 threads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx_graph import OnnxGraph  # noqa: E402  (after onnx is known to be there)
from test_cpu_stem_conv import stem_model  # noqa: E402

VARS = ("OPFORGE_CPU_STEM_CONV", "OPFORGE_CPU_CONV_SPLIT_CHUNKS", "OPFORGE_CPU_CONV_ROWS")

CHILD = """
import json, sys
from pathlib import Path
import numpy as np
sys.path.insert(0, sys.argv[1])
from cpu_testing import infer_twice
d = Path(sys.argv[2])
_, stem = infer_twice(d / "stem.onnx", {"x": np.load(d / "stem_x.npy")}, 1, "f32")
_, convs = infer_twice(d / "convs.onnx", {"x": np.load(d / "convs_x.npy")}, 2, "bf16")
print(json.dumps({"stem": sorted(r.exec_type for r in stem if r.node_type == "Convolution"),
                  "convs": {r.node_name: r.exec_type for r in convs if r.node_type == "Convolution"}}))
"""


def conv(g: OnnxGraph, x: str, cin: int, cout: int, k: int) -> str:
    w = g.rng.standard_normal((cout, cin, k, k)) * (2.0 / (cin * k * k)) ** 0.5
    return g.node("Conv", [x, g.const(w), g.const(g.rng.standard_normal(cout) * 0.1)], pads=[k // 2] * 4)


def child(settings: dict[str, str], folder: Path) -> dict[str, Any]:
    """Exec types with ``settings`` for the three variables (those not named: unset)."""
    env = {k: v for k, v in os.environ.items() if k not in VARS}
    env.update(settings)
    res = subprocess.run([sys.executable, "-c", CHILD, str(Path(__file__).parent), str(folder)],
                         env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-3000:]
    out: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
    return out


def marked(types: dict[str, str], marker: str) -> list[str]:
    """The exec types that carry ``marker`` (``+pixels``, ``+rows``), sorted."""
    return sorted(t for t in types.values() if marker in t)


def test_switch_kinds_keep_their_rules(tmp_path: Path) -> None:
    stem_model(tmp_path / "stem.onnx", 3, 32, (3, 3), (2, 2), [1, 1, 1, 1], (1, 1), (24, 24), "Relu", seed=3)
    np.save(tmp_path / "stem_x.npy", np.random.default_rng(3).standard_normal((1, 3, 24, 24)).astype(np.float32))
    g = OnnxGraph(5)
    h = g.node("Relu", [conv(g, "x", 64, 96, 1)])   # 1x1 over 32x32 pixels: the pixel split
    out = g.node("Relu", [conv(g, h, 96, 64, 3)])   # 3x3: row chunks with OPFORGE_CPU_CONV_ROWS
    g.save(tmp_path / "convs.onnx", (1, 64, 32, 32), [out])
    np.save(tmp_path / "convs_x.npy", g.rng.standard_normal((1, 64, 32, 32)).astype(np.float32))

    default = child({}, tmp_path)
    runs = {
        "off": child({"OPFORGE_CPU_STEM_CONV": "0", "OPFORGE_CPU_CONV_SPLIT_CHUNKS": "1",
                      "OPFORGE_CPU_CONV_ROWS": "1"}, tmp_path),
        "empty": child({"OPFORGE_CPU_STEM_CONV": "", "OPFORGE_CPU_CONV_SPLIT_CHUNKS": "",
                        "OPFORGE_CPU_CONV_ROWS": ""}, tmp_path),
        "words": child({"OPFORGE_CPU_STEM_CONV": "00", "OPFORGE_CPU_CONV_SPLIT_CHUNKS": "abc",
                        "OPFORGE_CPU_CONV_ROWS": "yes"}, tmp_path),
        "other": child({"OPFORGE_CPU_STEM_CONV": "false", "OPFORGE_CPU_CONV_SPLIT_CHUNKS": "-3",
                        "OPFORGE_CPU_CONV_ROWS": "dw"}, tmp_path),
        "explicit": child({"OPFORGE_CPU_STEM_CONV": "1", "OPFORGE_CPU_CONV_SPLIT_CHUNKS": "2",
                           "OPFORGE_CPU_CONV_ROWS": "0"}, tmp_path),
    }

    # default-on switch: only "0" turns the stem kernel off (where the host runs it at all)
    if "stem:avx512" in default["stem"]:
        for name, r in runs.items():
            assert ("stem:avx512" in r["stem"]) == (name != "off"), (name, r["stem"])
    else:
        assert all(r["stem"] == default["stem"] for r in runs.values())

    # chunk knob: empty, "abc" and "-3" clamp to 1 chunk a thread, as "1"; "2" is the default
    def pixels(r: dict[str, Any]) -> list[str]:
        return marked(r["convs"], "+pixels")

    for name in ("empty", "words", "other"):
        assert pixels(runs[name]) == pixels(runs["off"]), (name, runs[name]["convs"], runs["off"]["convs"])
    assert pixels(runs["explicit"]) == pixels(default), (runs["explicit"]["convs"], default["convs"])
    if pixels(default):
        # 1024 pixels at 2 threads: 2 chunks a thread by default, 1 with the knob at 1
        assert pixels(runs["off"]) != pixels(default), (runs["off"]["convs"], default["convs"])

    # word-valued, default off: "1" and "dw" split the 3x3 into rows (dw: depthwise ones too, the
    # same here), anything else keeps it whole
    def rows(r: dict[str, Any]) -> list[str]:
        return marked(r["convs"], "+rows")

    for name in ("empty", "words", "explicit"):
        assert rows(runs[name]) == [], (name, runs[name]["convs"])
    assert rows(default) == [], default["convs"]
    assert rows(runs["other"]) == rows(runs["off"]), (runs["other"]["convs"], runs["off"]["convs"])
