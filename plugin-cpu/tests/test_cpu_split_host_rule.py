"""The host rule of the bf16 chunk splits (core/chunk_split.cpp, stop 18): a 1x1 convolution's
pixel split (``+pixelsK``) and a constant-weight MatMul's row split (``+rowsK``) run at 2 threads
by default only where oneDNN's effective ISA has AMX; elsewhere (an AVX512_BF16 host such as the
AMD Zen 5 VM) the step keeps oneDNN's own 2-thread primitive. OPFORGE_CPU_SPLIT_HOST_RULE=0 takes
the splits on every host (conftest.py sets it for the suite; this test's child runs without it).
Either way the outputs are the bytes of the 1-thread program and within bf16 rounding of ONNX
Runtime f32."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from opforge_cpu._loader import load_core

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from cpu_testing import ONEDNN_HAS_AMX, bf16_run, check_bf16_split  # noqa: E402
from onnx_graph import OnnxGraph  # noqa: E402  (after onnx is known to be there)

needs_bf16 = pytest.mark.skipif(not bool(load_core().native_bf16()),
                                reason="this host has no bf16 arithmetic (AVX512_BF16/AMX)")

AMX = ONEDNN_HAS_AMX


def conv_model(tmp_path: Path) -> tuple[Path, np.ndarray]:
    """Two 1x1 convolutions (ReLU between) over 32x32 pixels: the pixel split's."""
    g = OnnxGraph(31)
    h = g.node("Relu", [g.node("Conv", ["x", g.const(g.rng.standard_normal((64, 16, 1, 1)) * 0.25),
                                        g.const(g.rng.standard_normal(64) * 0.1)], kernel_shape=[1, 1])])
    out = g.node("Conv", [h, g.const(g.rng.standard_normal((32, 64, 1, 1)) * 0.125)], kernel_shape=[1, 1])
    path = g.save(tmp_path / "conv.onnx", (1, 16, 32, 32), [out])
    return path, g.rng.standard_normal((1, 16, 32, 32)).astype(np.float32)


def matmul_model(tmp_path: Path) -> tuple[Path, np.ndarray]:
    """Two MatMuls with constant weights and bias (GELU-free) over 256 rows: the row split's."""
    g = OnnxGraph(37)
    h = g.node("Add", [g.node("MatMul", ["x", g.const(g.rng.standard_normal((64, 96)) / 8.0)]),
                       g.const(g.rng.standard_normal(96) * 0.1)])
    out = g.node("MatMul", [g.node("Relu", [h]), g.const(g.rng.standard_normal((96, 64)) / 10.0)])
    path = g.save(tmp_path / "mm.onnx", (1, 256, 64), [out])
    return path, g.rng.standard_normal((1, 256, 64)).astype(np.float32)


@needs_bf16
@pytest.mark.parametrize(("make", "marker"), [(conv_model, "+pixels"), (matmul_model, "+rows")])
def test_split_host_rule_default_and_switch(tmp_path: Path, make: Callable[[Path], tuple[Path, np.ndarray]],
                                            marker: str) -> None:
    path, x = make(tmp_path)
    # this process: the suite's OPFORGE_CPU_SPLIT_HOST_RULE (0 unless set otherwise); 1 vs 2
    # threads bit-exact, within bf16 rounding of ONNX Runtime f32
    rule_off = os.environ.get("OPFORGE_CPU_SPLIT_HOST_RULE", "1") == "0"
    _, types2 = check_bf16_split(path, x, marker)
    assert any(marker in t for t in types2.values()) == (rule_off or AMX), types2
    want, _ = bf16_run(path, x, 1)
    # a child without the variable: the default rule
    np.save(tmp_path / "x.npy", x)
    code = ("import sys, numpy as np; sys.path.insert(0, sys.argv[3]); from cpu_testing import bf16_run; "
            "from pathlib import Path; g, t = bf16_run(Path(sys.argv[1]), np.load(sys.argv[2]), 2); "
            "np.savez(sys.argv[2] + '.out.npz', *g); print(sorted(t.values()))")
    env = {k: v for k, v in os.environ.items() if k != "OPFORGE_CPU_SPLIT_HOST_RULE"}
    res = subprocess.run([sys.executable, "-c", code, str(path), str(tmp_path / "x.npy"), str(Path(__file__).parent)],
                         env=env, capture_output=True, text=True, timeout=120, check=True)
    assert (marker in res.stdout) == AMX, res.stdout
    got = np.load(str(tmp_path / "x.npy") + ".out.npz")
    for i, w in enumerate(want):
        np.testing.assert_array_equal(got[f"arr_{i}"], w)
