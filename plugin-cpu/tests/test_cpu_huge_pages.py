"""Packed constants advised into transparent 2 MB pages (core/dnnl_util.cpp pack_constant,
advise_huge_pages; OPFORGE_CPU_HUGE_PAGES=0 turns it off, read once a process). onnx.helper
graphs: a MatMul of 8 MB of f32 weights (4 MB packed in bf16) and a 3x3 convolution of 4.7 MB,
compiled in child processes with the switch on and off. On: the process holds memory advised
MADV_HUGEPAGE (the "hg" VmFlag of /proc/self/smaps, NumPy's own advice turned off) of at least
one whole 2 MB page; off: none; the outputs are the same bytes either way and match NumPy / ONNX
Runtime."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from opforge_cpu._loader import load_core

onnx = pytest.importorskip("onnx")
from onnx_graph import OnnxGraph  # noqa: E402  (after onnx is known to be there)

THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")
linux_thp = pytest.mark.skipif(not THP.exists() or not Path("/proc/self/smaps").exists(),
                               reason="transparent huge pages are a Linux feature")

CHILD = r"""
import sys, json, numpy as np, opforge
try:
    from numpy._core import multiarray as ma
except ImportError:  # (NumPy 1)
    from numpy.core import multiarray as ma
ma._set_madvise_hugepage(False)  # (NumPy advises its own large arrays: only ours are counted)
path, x_path, prec = sys.argv[1], sys.argv[2], sys.argv[3]
core = opforge.Core()
cm = core.compile_model(core.read_model(path), "CPU", {"INFERENCE_PRECISION_HINT": prec, "INFERENCE_NUM_THREADS": 1})
req = cm.create_infer_request()  # (kept: its arena lives as long as it does)
out = np.asarray(req.infer({"x": np.load(x_path)})[0])
np.save(x_path + "." + prec + ".out.npy", out)
hg, size = 0, 0
for line in open("/proc/self/smaps"):
    if line.startswith("Size:"):
        size = int(line.split()[1])
    elif line.startswith("VmFlags:") and " hg" in " " + line.split(":", 1)[1]:
        hg += size
plan = next(iter(cm._executable.programs().values())).program.memory_plan()
print(json.dumps({"hg_kb": hg, "arena": plan["arena_bytes"]}))
"""


def matmul_model(path: Path) -> tuple[Path, np.ndarray, np.ndarray]:
    """x[1, 1024] x W[1024, 2048] (8 MB f32) -> Relu -> x W2[2048, 16]."""
    g = OnnxGraph(3)
    w = (g.rng.standard_normal((1024, 2048)) / 32).astype(np.float32)
    w2 = (g.rng.standard_normal((2048, 16)) / 45).astype(np.float32)
    h = g.node("Relu", [g.node("MatMul", ["x", g.const(w)])])
    y = g.node("MatMul", [h, g.const(w2)])
    return g.save(path, (1, 1024), [y]), w, w2


def conv_model(path: Path) -> Path:
    """x[1, 256, 6, 6] -> 3x3 Conv 256 -> 512 (4.7 MB of f32 weights) -> Relu."""
    g = OnnxGraph(4)
    w = g.rng.standard_normal((512, 256, 3, 3)) * (2.0 / (256 * 9)) ** 0.5
    y = g.node("Relu", [g.node("Conv", ["x", g.const(w), g.const(g.rng.standard_normal(512) * 0.1)], pads=[1, 1, 1, 1])])
    return g.save(path, (1, 256, 6, 6), [y])


def activations_model(path: Path, hw: int, pooled: bool) -> Path:
    """x[1, 16, hw, hw] -> 3x3 Conv 16 -> 16 -> Relu -> 3x3 Conv 16 -> 16 (9 KB of weights each:
    nothing packed reaches 2 MB), then a GlobalAveragePool when ``pooled``: the 64 KB-a-row
    activations live in the request's arena, the unpooled output in a pooled output block."""
    g = OnnxGraph(5)
    h = "x"
    for _ in range(2):
        w = g.rng.standard_normal((16, 16, 3, 3)) * (2.0 / (16 * 9)) ** 0.5
        h = g.node("Relu", [g.node("Conv", [h, g.const(w), g.const(g.rng.standard_normal(16) * 0.1)], pads=[1, 1, 1, 1])])
    y = g.node("GlobalAveragePool", [h]) if pooled else h
    return g.save(path, (1, 16, hw, hw), [y])


def child_info(path: Path, x: np.ndarray, prec: str, env: dict[str, str]) -> tuple[np.ndarray, dict[str, int]]:
    """The output, and the child's advised kB ("hg_kb") and arena bytes ("arena")."""
    x_path = str(path) + ".x.npy"
    np.save(x_path, x)
    res = subprocess.run([sys.executable, "-c", CHILD, str(path), x_path, prec], env=dict(os.environ, **env),
                         capture_output=True, text=True, timeout=120, check=True)
    return np.load(x_path + "." + prec + ".out.npy"), json.loads(res.stdout.strip().splitlines()[-1])


def child(path: Path, x: np.ndarray, prec: str, env: dict[str, str]) -> tuple[np.ndarray, int]:
    out, info = child_info(path, x, prec, env)
    return out, int(info["hg_kb"])


@linux_thp
@pytest.mark.parametrize("prec", ["f32", "bf16"])
def test_matmul_weights_in_huge_pages_same_bytes(tmp_path: Path, prec: str) -> None:
    if prec == "bf16" and not bool(load_core().native_bf16()):
        pytest.skip("this host has no bf16 arithmetic (AVX512_BF16/AMX)")
    path, w, w2 = matmul_model(tmp_path / "mm.onnx")
    x = np.random.default_rng(1).standard_normal((1, 1024)).astype(np.float32)
    on, hg_on = child(path, x, prec, {})
    off, hg_off = child(path, x, prec, {"OPFORGE_CPU_HUGE_PAGES": "0"})
    np.testing.assert_array_equal(on, off)
    want = np.maximum(x.astype(np.float64) @ w, 0) @ w2
    tol = 1e-4 if prec == "f32" else 3e-2
    np.testing.assert_allclose(on, want, rtol=0, atol=tol * float(np.abs(want).max()))
    # the packed weights (8 MB f32, 4 MB bf16) hold at least one whole aligned 2 MB page
    assert hg_on >= 2048 and hg_off == 0, (hg_on, hg_off)


@linux_thp
def test_conv_weights_in_huge_pages_same_bytes(tmp_path: Path) -> None:
    ort = pytest.importorskip("onnxruntime")
    path = conv_model(tmp_path / "conv.onnx")
    x = np.random.default_rng(2).standard_normal((1, 256, 6, 6)).astype(np.float32)
    on, hg_on = child(path, x, "f32", {})
    off, hg_off = child(path, x, "f32", {"OPFORGE_CPU_HUGE_PAGES": "0"})
    np.testing.assert_array_equal(on, off)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(on, want, rtol=0, atol=1e-4 * float(np.abs(want).max()))
    assert hg_on >= 2048 and hg_off == 0, (hg_on, hg_off)


@linux_thp
@pytest.mark.parametrize("pooled", [True, False], ids=["arena", "arena_and_output"])
def test_large_activations_in_huge_pages_same_bytes(tmp_path: Path, pooled: bool) -> None:
    """A request's arena of 4 MB or more (dnnl_util.hpp kHugeRunBufferFloor) is 2 MB aligned and
    advised, and so is an output block of 4 MB or more; OPFORGE_CPU_HUGE_ARENA=0 and
    OPFORGE_CPU_HUGE_PAGES=0 each leave them in 4 KB pages. The weights are far under 2 MB, so
    every advised page is a run-time buffer's."""
    ort = pytest.importorskip("onnxruntime")
    path = activations_model(tmp_path / "act.onnx", 256, pooled)  # 4 MB a 16-channel activation
    x = np.random.default_rng(6).standard_normal((1, 16, 256, 256)).astype(np.float32)
    on, info = child_info(path, x, "f32", {})
    off_arena, info_arena = child_info(path, x, "f32", {"OPFORGE_CPU_HUGE_ARENA": "0"})
    off_all, info_all = child_info(path, x, "f32", {"OPFORGE_CPU_HUGE_PAGES": "0"})
    np.testing.assert_array_equal(on, off_arena)
    np.testing.assert_array_equal(on, off_all)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(on, want, rtol=0, atol=1e-4 * float(np.abs(want).max()))
    assert info["arena"] >= 4 << 20, info
    # the arena's whole 2 MB pages (and, unpooled, the 4 MB output block's two) are advised
    whole_pages_kb = info["arena"] // (2 << 20) * 2048 + (0 if pooled else 4096)
    assert info["hg_kb"] >= whole_pages_kb, (info, whole_pages_kb)
    assert info_arena["hg_kb"] == 0 and info_all["hg_kb"] == 0, (info_arena, info_all)


@linux_thp
def test_small_arena_stays_in_small_pages(tmp_path: Path) -> None:
    """Under the 4 MB floor a 2 MB page would be mostly padding: the 0.5 MB arena of a model of
    256 kB activations is not advised (no bloat for small models)."""
    path = activations_model(tmp_path / "small.onnx", 64, True)  # 256 kB a 16-channel activation
    x = np.random.default_rng(7).standard_normal((1, 16, 64, 64)).astype(np.float32)
    _, info = child_info(path, x, "f32", {})
    assert 0 < info["arena"] < 4 << 20 and info["hg_kb"] == 0, info
