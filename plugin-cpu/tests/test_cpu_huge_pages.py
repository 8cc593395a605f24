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
out = np.asarray(cm.create_infer_request().infer({"x": np.load(x_path)})[0])
np.save(x_path + "." + prec + ".out.npy", out)
hg, size = 0, 0
for line in open("/proc/self/smaps"):
    if line.startswith("Size:"):
        size = int(line.split()[1])
    elif line.startswith("VmFlags:") and " hg" in " " + line.split(":", 1)[1]:
        hg += size
print(json.dumps({"hg_kb": hg}))
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


def child(path: Path, x: np.ndarray, prec: str, env: dict[str, str]) -> tuple[np.ndarray, int]:
    x_path = str(path) + ".x.npy"
    np.save(x_path, x)
    res = subprocess.run([sys.executable, "-c", CHILD, str(path), x_path, prec], env=dict(os.environ, **env),
                         capture_output=True, text=True, timeout=120, check=True)
    return np.load(x_path + "." + prec + ".out.npy"), int(json.loads(res.stdout.strip().splitlines()[-1])["hg_kb"])


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
