"""The host rules of bf16 grouped (not depthwise) convolutions (core/nn.cpp, stop 19), where
oneDNN's effective ISA has no AMX (an AVX512_BF16 host such as the AMD Zen 5 VM):

- ``regroup_on_this_host``: the original groups run as they are (oneDNN's jit_bf16) instead of
  merged into groups of 32 channels with block-diagonal weights on brgconv, which does m times the
  multiply-adds and ran 1.6-2.8x slower there. OPFORGE_CPU_REGROUP_HOST_RULE=0 merges them on every
  host (conftest.py sets it for the suite, so test_cpu_bf16_grouped.py's tests take the merged
  path everywhere; the children here run without it).
- ``grouped_bf16_nhwc_on_this_host``: RegNet's groups of 16 channels whose source a 1x1
  convolution wrote channels-last run jit_bf16 on nhwc instead of nChw16c, so the
  squeeze-excitation Multiply after them reads the nhwc tensor as it is (not "reorder+ref").
  OPFORGE_CPU_GROUPED_BF16_NHWC=0: oneDNN's layout.

On AMX hosts both rules leave oneDNN's and regroup_bf16's choices as before. Every program is
checked against ONNX Runtime f32 within bf16 rounding, at 1 and 2 threads."""

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

RULES = ("OPFORGE_CPU_REGROUP_HOST_RULE", "OPFORGE_CPU_GROUPED_BF16_NHWC")


class Graph(OnnxGraph):
    def regnet_block(self, x: str, cin: int, cout: int, stride: int) -> str:
        """RegNetY's bottleneck: 1x1 -> grouped 3x3 of 16 channels a group (stride) -> SE -> 1x1,
        + projected residual."""
        h = self.relu(self.conv(x, cin, cout))
        h = self.relu(self.conv(h, cout, cout, 3, group=cout // 16, stride=stride))
        s = self.relu(self.conv(self.node("GlobalAveragePool", [h]), cout, max(4, cin // 4)))
        h = self.node("Mul", [h, self.node("Sigmoid", [self.conv(s, max(4, cin // 4), cout)])])
        y = self.conv(h, cout, cout)
        short = x if stride == 1 and cin == cout else self.conv(x, cin, cout, stride=stride)
        return self.relu(self.node("Add", [y, short]))


def check_against_ort(path: Path, x: np.ndarray, got: list[np.ndarray]) -> None:
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    for g, w in zip(got, want, strict=True):
        scale = float(np.abs(w).max())
        assert np.abs(g - w).max() / scale < 3e-2, np.abs(g - w).max() / scale


@needs_bf16
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("channels", "groups", "stride"), [(128, 32, 1), (256, 32, 2), (64, 4, 1)])
def test_regroup_host_rule(tmp_path: Path, threads: int, channels: int, groups: int, stride: int) -> None:
    # ResNeXt's groups of 4 and 8, RegNet's of 16 (an even count, which regroup_bf16 merges in pairs)
    g = Graph(channels + groups + stride)
    h = g.relu(g.conv("x", 32, channels))
    out = g.relu(g.conv(h, channels, channels, 3, group=groups, stride=stride))
    path = g.save(tmp_path / "m.onnx", (1, 32, 14, 14), [out])
    x = g.rng.standard_normal((1, 32, 14, 14)).astype(np.float32)
    results = {}
    for rule in ("default", "0"):
        env = {} if rule == "default" else {"OPFORGE_CPU_REGROUP_HOST_RULE": "0"}
        got, rows = bf16_in_child(tmp_path, path, x, threads, RULES, env)
        check_against_ort(path, x, got)
        grouped = [e for t, e in rows if t == "GroupConvolution"]
        assert len(grouped) == 1, rows
        merged = rule == "0" or AMX
        # merged groups of 32 run oneDNN's brgconv; the original ones of 4-16 its jit_bf16
        assert grouped[0].startswith("brgconv" if merged else "jit_bf16"), (rule, grouped)
        results[rule] = got
    # the merged groups add exact zeros (f32 sums): the two programs agree within f32 rounding
    for a, b in zip(results["default"], results["0"], strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-5 * float(np.abs(b).max()))


@needs_bf16
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("size", [28, 15])
def test_grouped_bf16_nhwc_host_rule(tmp_path: Path, threads: int, size: int) -> None:
    # 48 channels (3 groups of 16: an odd count, never merged) and 64 (4 groups) after a stem
    g = Graph(5)
    h = g.relu(g.conv("x", 3, 32, 3, stride=2))
    h = g.regnet_block(h, 32, 48, 2)
    h = g.regnet_block(h, 48, 48, 1)
    h = g.regnet_block(h, 48, 64, 1)
    out = g.node("GlobalAveragePool", [h])
    path = g.save(tmp_path / "m.onnx", (1, 3, 2 * size, 2 * size), [out, h])
    x = np.random.default_rng(6).standard_normal((1, 3, 2 * size, 2 * size)).astype(np.float32)
    results = {}
    for rule in ("default", "0"):
        env = {} if rule == "default" else {"OPFORGE_CPU_GROUPED_BF16_NHWC": "0"}
        got, rows = bf16_in_child(tmp_path, path, x, threads, RULES, env)
        check_against_ort(path, x, got)
        grouped = [e for t, e in rows if t == "GroupConvolution"]
        scales = [e for t, e in rows if t == "Multiply"]
        assert len(grouped) == 3 and len(scales) == 3, rows
        if not AMX:
            assert all(e.startswith("jit_bf16") for e in grouped), grouped
            if rule == "default":
                # the SE scale reads the grouped convolution's nhwc output as it is
                assert not any(e.startswith("reorder") for e in scales), scales
            else:
                # oneDNN's nChw16c for the odd group count: the scale reorders it to plain
                assert scales[0].startswith("reorder"), scales
        results[rule] = got
    # the same jit_bf16 kernel in either layout: f32 accumulation of the same bf16 products
    for a, b in zip(results["default"], results["0"], strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-5 * float(np.abs(b).max()))
