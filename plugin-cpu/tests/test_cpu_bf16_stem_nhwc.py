"""The bf16 stem host rule (core/nn.cpp ``stem_bf16_nhwc_on_this_host``, stop 19): where oneDNN's
effective ISA has no AMX, a bf16 convolution of a plain source (the network's first, on the image:
3 input channels, no brgconv) that oneDNN gives jit_bf16 writing nChw16c asks for the same kernel
writing nhwc. DenseNet's first dense block then concatenates nhwc tensors only (the channels-last
Concat, not "reorder+memcpy" to plain) and runs its BatchNormInference on nhwc, not as "ref".
OPFORGE_CPU_STEM_BF16_NHWC=0: oneDNN's layout. Checked against ONNX Runtime f32 within bf16
rounding, at 1 and 2 threads, in child processes (the plugin reads the switch once a process)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from opforge_cpu._loader import load_core

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from cpu_testing import ONEDNN_HAS_AMX, bf16_in_child  # noqa: E402
from onnx_graph import OnnxGraph  # noqa: E402  (after onnx is known to be there)

needs_bf16 = pytest.mark.skipif(not bool(load_core().native_bf16()),
                                reason="this host has no bf16 arithmetic (AVX512_BF16/AMX)")

AMX = ONEDNN_HAS_AMX
SWITCH = "OPFORGE_CPU_STEM_BF16_NHWC"


class Graph(OnnxGraph):
    def conv(self, x: str, cin: int, cout: int, k: int, stride: int = 1) -> str:
        w = self.rng.standard_normal((cout, cin, k, k)) * (2.0 / (cin * k * k)) ** 0.5
        return self.node("Conv", [x, self.const(w), self.const(self.rng.standard_normal(cout) * 0.1)],
                         pads=[k // 2] * 4, strides=[stride, stride])

    def bn_relu(self, x: str, c: int) -> str:
        r = self.rng
        bn = self.node("BatchNormalization", [x, self.const(r.uniform(0.5, 1.5, c)), self.const(r.standard_normal(c) * 0.1),
                                              self.const(r.standard_normal(c) * 0.1), self.const(r.uniform(0.5, 1.5, c))])
        return self.node("Relu", [bn])


def densenet_start(tmp_path: Path, size: int) -> Path:
    """DenseNet's stem (7x7/2 + ReLU, MaxPool 3x3/2) and two dense layers (BN-ReLU-1x1-BN-ReLU-3x3,
    concatenated onto their input), then a transition's BN-ReLU-1x1."""
    g = Graph(11)
    h = g.node("MaxPool", [g.node("Relu", [g.conv("x", 3, 32, 7, 2)])], kernel_shape=[3, 3], strides=[2, 2],
               pads=[1, 1, 1, 1])
    c = 32
    for _ in range(2):
        y = g.conv(g.bn_relu(g.conv(g.bn_relu(h, c), c, 64, 1), 64), 64, 16, 3)
        h = g.node("Concat", [h, y], axis=1)
        c += 16
    out = g.conv(g.bn_relu(h, c), c, 32, 1)
    return g.save(tmp_path / "m.onnx", (1, 3, size, size), [out])


@needs_bf16
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("size", [64, 50])
def test_bf16_stem_writes_nhwc(tmp_path: Path, threads: int, size: int) -> None:
    path = densenet_start(tmp_path, size)
    x = np.random.default_rng(12).standard_normal((1, 3, size, size)).astype(np.float32)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    results = {}
    for switch in (None, "0"):
        got, rows = bf16_in_child(tmp_path, path, x, threads, (SWITCH,), {} if switch is None else {SWITCH: switch})
        for a, w in zip(got, want, strict=True):
            scale = float(np.abs(w).max())
            assert np.abs(a - w).max() / scale < 3e-2, np.abs(a - w).max() / scale
        types = {t: [e for tt, e in rows if tt == t] for t in ("Convolution", "Concat", "BatchNormInference")}
        assert not any(e.startswith("ref") for e in types["Convolution"]), rows
        if not AMX and switch is None:
            # the stem's kernel writes nhwc: the block keeps one layout
            assert not any(e.startswith(("reorder", "ref")) for e in types["Concat"] + types["BatchNormInference"]), rows
        elif not AMX:
            # (the case the rule is for: a blocked stem output reaches the first Concat)
            assert types["Concat"][0].startswith("reorder"), rows
        results[switch] = got
    # the same bf16 products in f32 either way; the BatchNormInference kernels differ (ours on
    # nhwc, oneDNN's reference on plain), so the two agree within f32 rounding, not bytes
    for a, b in zip(results[None], results["0"], strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-5 * float(np.abs(b).max()))
