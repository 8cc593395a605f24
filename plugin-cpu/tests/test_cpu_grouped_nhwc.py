"""A grouped (not depthwise) f32 convolution whose source arrives channels-last runs its JIT kernel
channels-last too (core/nn.cpp prefer_nhwc), as RegNet's groups of 16 channels between 1x1
convolutions do: no reorder into nChw16c before it, and the squeeze-excitation Multiply after it
runs oneDNN's nhwc binary instead of a reorder to plain and the reference binary. onnx.helper
models of RegNetY blocks (1x1 -> grouped 3x3 -> SE -> 1x1 + residual), ResNeXt-like groups of 4
and 8 channels, a grouped convolution of the model's plain input; against ONNX Runtime at 1 and 2
threads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from opforge_cpu._loader import load_core

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
helper, numpy_helper, TP = onnx.helper, onnx.numpy_helper, onnx.TensorProto
from cpu_testing import infer_twice  # noqa: E402
from onnx_graph import OnnxGraph  # noqa: E402  (after onnx is known to be there)

avx512 = load_core().cpu_isa().startswith("avx512")


class Graph(OnnxGraph):
    def regnet_block(self, x: str, cin: int, cout: int, group_width: int, stride: int, se: bool = True) -> str:
        """RegNetY's bottleneck: 1x1 -> grouped 3x3 (stride) -> SE -> 1x1, + projected residual."""
        h = self.relu(self.conv(x, cin, cout))
        h = self.relu(self.conv(h, cout, cout, 3, group=cout // group_width, stride=stride))
        if se:
            s = self.relu(self.conv(self.node("GlobalAveragePool", [h]), cout, max(4, cin // 4)))
            h = self.node("Mul", [h, self.node("Sigmoid", [self.conv(s, max(4, cin // 4), cout)])])
        y = self.conv(h, cout, cout)
        short = x if stride == 1 and cin == cout else self.conv(x, cin, cout, stride=stride)
        return self.relu(self.node("Add", [y, short]))



def run(path: Path, x: np.ndarray, threads: int) -> tuple[list[np.ndarray], list[Any]]:
    return infer_twice(path, {"x": x}, threads, "f32")


def check_against_ort(path: Path, x: np.ndarray, threads: int) -> list[Any]:
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    got, rows = run(path, x, threads)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5 * float(np.abs(w).max()))
    return rows


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("size", [28, 15])
def test_regnet_blocks_stay_channels_last(tmp_path: Path, threads: int, size: int) -> None:
    g = Graph(3)
    h = g.relu(g.conv("x", 3, 32, 3, stride=2))
    h = g.regnet_block(h, 32, 64, 16, 2)
    h = g.regnet_block(h, 64, 64, 16, 1)
    h = g.regnet_block(h, 64, 144, 16, 2)
    out = g.node("GlobalAveragePool", [h])
    path = g.save(tmp_path / "m.onnx", (1, 3, 2 * size, 2 * size), [out, h])
    x = np.random.default_rng(4).standard_normal((1, 3, 2 * size, 2 * size)).astype(np.float32)
    rows = check_against_ort(path, x, threads)
    if avx512:
        grouped = [r for r in rows if r.node_type == "GroupConvolution"]
        assert len(grouped) == 3 and all(r.exec_type.startswith("jit") for r in grouped), grouped
        # the SE scales run on the nhwc tensor as it is (before: "reorder+ref" on the blocked
        # tensor): the channels-last loop (channels_last_bcast.cpp), or oneDNN's nhwc binary
        scales = [r.exec_type for r in rows if r.node_type == "Multiply"]
        assert len(scales) == 3 and all(e.startswith(("jit", "mul_channels_last")) for e in scales), scales
        assert not [r for r in rows if r.node_type == "Reorder" and r.node_name != "output_reorder"], rows


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("group_width", [4, 8, 32])
def test_other_group_widths_over_channels_last(tmp_path: Path, threads: int, group_width: int) -> None:
    # ResNeXt's 4 channels a group (no channels-last JIT kernel there: whatever oneDNN picks),
    # 8, and wide groups; no SE, an odd size and a strided block
    g = Graph(5)
    h = g.relu(g.conv("x", 8, 64, 3))
    h = g.regnet_block(h, 64, 64, group_width, 1, se=False)
    h = g.regnet_block(h, 64, 128, group_width, 2, se=False)
    path = g.save(tmp_path / "m.onnx", (1, 8, 13, 13), [h])
    x = np.random.default_rng(6).standard_normal((1, 8, 13, 13)).astype(np.float32)
    check_against_ort(path, x, threads)


def test_grouped_convolution_of_the_plain_input(tmp_path: Path) -> None:
    # the source is the caller's nchw array: not a channels-last producer, oneDNN's choice stands
    g = Graph(7)
    h = g.relu(g.conv("x", 32, 32, 3, group=2))
    path = g.save(tmp_path / "m.onnx", (1, 32, 12, 12), [g.conv(h, 32, 16)])
    x = np.random.default_rng(8).standard_normal((1, 32, 12, 12)).astype(np.float32)
    check_against_ort(path, x, 1)


def test_nan_and_inf_pass_through_the_grouped_convolution(tmp_path: Path) -> None:
    # no ReLU here: oneDNN's ReLU post-op maps NaN to 0 where ONNX Runtime keeps it (a difference
    # of every fused ReLU, not of the layout); 1x1 -> grouped 3x3 -> 1x1, all nhwc
    g = Graph(9)
    h = g.conv(g.conv(g.conv("x", 16, 32), 32, 32, 3, group=2), 32, 8)
    path = g.save(tmp_path / "m.onnx", (1, 16, 10, 10), [h])
    x = np.random.default_rng(10).standard_normal((1, 16, 10, 10)).astype(np.float32)
    x[0, 2, 3, 3] = np.nan
    x[0, 5, 7, 1] = np.inf
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    (got,), rows = run(path, x, 1)
    assert np.isnan(want).any()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = np.isfinite(want)
    np.testing.assert_allclose(got[ok], want[ok], rtol=1e-5, atol=1e-5 * float(np.abs(want[ok]).max()))
    if avx512:
        assert not [r for r in rows if r.node_type == "Reorder" and r.node_name != "output_reorder"], rows
