"""SegFormer's decode head and Mix-FFN on the CPU (passes/resize_concat_conv.py, and the one-Transpose
chains of passes/permute_chain.py): onnx.helper models with seeded weights, against ONNX Runtime.

- the decode head: per-stage token projections (MatMul + bias), each viewed channels-first and
  resized to the largest map (stage 0 to its own size), concatenated, mixed by a 1x1 convolution
  with BatchNorm and ReLU, then a classifier 1x1 convolution. With the passes the mixing
  convolution is gone (no Convolution step reads 4 D channels), the same-size Resize is gone, and
  the result is within f32 rounding of ONNX Runtime; OPFORGE_CPU_CONV_THROUGH_RESIZE=0 keeps the
  graph as it is.
- other Resize modes and rules (nearest, cubic, align_corners, scales) and near misses (a 3x3
  mixing convolution, a Concat read elsewhere, a downsampling Resize) that must stay correct.
- the Mix-FFN: MatMul -> Transpose -> Reshape -> depthwise 3x3 -> Reshape -> Transpose -> GELU ->
  MatMul runs the depthwise convolution on a channels-last view (no permute step);
  OPFORGE_CPU_PERMUTE_VIEW=0 keeps the permutes.
1 and 2 threads give the same bytes; bf16 within its rounding."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from cpu_testing import infer_twice  # noqa: E402
from onnx_graph import OnnxGraph  # noqa: E402
from opforge_cpu._loader import load_core  # noqa: E402

helper, TP = onnx.helper, onnx.TensorProto
NATIVE_BF16 = bool(load_core().native_bf16())
needs_bf16 = pytest.mark.skipif(not NATIVE_BF16, reason="this host has no bf16 arithmetic (AVX512_BF16/AMX)")

D = 32  # the decode head's width
# (channels, side) of the four encoder stages, smallest map last
STAGES = [(8, 16), (16, 8), (24, 4), (32, 2)]


def _tokens(g: OnnxGraph, x: str, c: int, side: int, d: int) -> str:
    """A stage's [1, c, side, side] map -> tokens -> Linear(c, d) -> [1, d, side, side]."""
    t = g.node("Transpose", [g.node("Reshape", [x, g.const([1, c, side * side], np.int64)])], perm=[0, 2, 1])
    w = g.rng.standard_normal((c, d)) * c ** -0.5
    y = g.node("Add", [g.node("MatMul", [t, g.const(w)]), g.const(g.rng.standard_normal(d) * 0.1)])
    y = g.node("Transpose", [y], perm=[0, 2, 1])
    return g.node("Reshape", [y, g.const([1, d, side, side], np.int64)])


def head_model(path: Path, *, mode: str = "linear", coord: str = "half_pixel", by: str = "sizes",
               mix_k: int = 1, cat_read_elsewhere: bool = False, down: bool = False, seed: int = 0) -> Path:
    """The decode head on four stage inputs s0..s3 (s0 the largest map). ``by`` "scales" resizes
    by scale factors, ``mix_k`` 3 makes the mixing convolution 3x3 (not a channel mix),
    ``cat_read_elsewhere`` adds the Concat as a second output, ``down`` resizes stage 0 to half
    size first (a downsampling branch) and every other stage to that size."""
    g = OnnxGraph(seed)
    side0 = STAGES[0][1] // 2 if down else STAGES[0][1]
    branches = []
    for i, (c, side) in enumerate(STAGES):
        y = _tokens(g, f"s{i}", c, side, D)
        attrs: dict[str, Any] = {"mode": mode, "coordinate_transformation_mode": coord}
        if mode == "nearest":
            attrs["nearest_mode"] = "floor"
        if by == "scales":
            f = side0 / side
            branches.append(g.node("Resize", [y, "", g.const([1.0, 1.0, f, f])], **attrs))
        else:
            branches.append(g.node("Resize", [y, "", "", g.const([1, D, side0, side0], np.int64)], **attrs))
    cat = g.node("Concat", branches[::-1], axis=1)
    w = g.rng.standard_normal((D, 4 * D, mix_k, mix_k)) * (4 * D * mix_k * mix_k) ** -0.5
    mix = g.node("Conv", [cat, g.const(w)], pads=[mix_k // 2] * 4)
    bn = [g.const(v) for v in (1 + 0.1 * g.rng.standard_normal(D), 0.1 * g.rng.standard_normal(D),
                               0.1 * g.rng.standard_normal(D), 1 + 0.1 * g.rng.random(D))]
    y = g.relu(g.node("BatchNormalization", [mix, *bn]))
    out = g.conv(y, D, 5)
    inputs = [helper.make_tensor_value_info(f"s{i}", TP.FLOAT, (1, c, s, s)) for i, (c, s) in enumerate(STAGES)]
    return g.save_model(path, inputs, [out, cat] if cat_read_elsewhere else [out], 13)


def feeds(seed: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {f"s{i}": rng.standard_normal((1, c, s, s)).astype(np.float32) for i, (c, s) in enumerate(STAGES)}


def reference(path: Path, f: dict[str, np.ndarray]) -> list[np.ndarray]:
    return [np.asarray(v) for v in ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, f)]


def close(got: list[np.ndarray], want: list[np.ndarray], rel: float) -> None:
    for a, w in zip(got, want, strict=True):
        assert a.shape == w.shape
        scale = float(np.abs(w).max())
        assert float(np.abs(a - w).max()) <= rel * scale, (float(np.abs(a - w).max()), scale)


def mixing_convs(rows: list[Any]) -> list[str]:
    """Names of executed Convolution steps over the whole Concat (the classifier's, and the mixing
    one if it is left): not the pass's convolution of the branches kept at full size ("/plain"),
    which reads D channels."""
    return [r.node_name for r in rows if r.node_type == "Convolution" and "/plain" not in r.node_name]


def interpolates(rows: list[Any]) -> int:
    return sum(r.node_type == "Interpolate" for r in rows)


@pytest.mark.parametrize("threads", [1, 2])
def test_decode_head_mix_taken_before_the_resize(tmp_path: Path, threads: int) -> None:
    path = head_model(tmp_path / "head.onnx")
    f = feeds()
    got, rows = infer_twice(path, f, threads, "f32")
    close(got, reference(path, f), 1e-5)
    assert len(mixing_convs(rows)) == 1, mixing_convs(rows)  # the classifier only
    assert interpolates(rows) == 3, [r.node_name for r in rows]  # stage 0's same-size Resize is gone


def test_decode_head_threads_agree(tmp_path: Path) -> None:
    path = head_model(tmp_path / "head.onnx")
    one, _ = infer_twice(path, feeds(), 1, "f32")
    two, _ = infer_twice(path, feeds(), 2, "f32")
    for a, b in zip(one, two, strict=True):
        np.testing.assert_array_equal(a, b)


def test_decode_head_switch_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPFORGE_CPU_CONV_THROUGH_RESIZE", "0")
    path = head_model(tmp_path / "head.onnx")
    f = feeds()
    got, rows = infer_twice(path, f, 1, "f32")
    close(got, reference(path, f), 1e-5)
    assert len(mixing_convs(rows)) == 2 and interpolates(rows) == 4


@pytest.mark.parametrize(("mode", "coord", "by"), [
    ("nearest", "asymmetric", "sizes"), ("cubic", "half_pixel", "sizes"), ("linear", "align_corners", "sizes"),
    ("linear", "half_pixel", "scales"), ("linear", "pytorch_half_pixel", "sizes"),
])
def test_decode_head_resize_modes(tmp_path: Path, mode: str, coord: str, by: str) -> None:
    path = head_model(tmp_path / "head.onnx", mode=mode, coord=coord, by=by, seed=3)
    f = feeds(4)
    got, rows = infer_twice(path, f, 2, "f32")
    close(got, reference(path, f), 1e-5)
    assert len(mixing_convs(rows)) == 1
    # a same-size cubic Resize is not dropped (only nearest and linear are known to be the identity)
    assert interpolates(rows) == (4 if mode == "cubic" else 3)


@pytest.mark.parametrize("miss", ["mix_3x3", "concat_read_elsewhere", "downsampling"])
def test_decode_head_near_misses(tmp_path: Path, miss: str) -> None:
    path = head_model(tmp_path / "head.onnx", mix_k=3 if miss == "mix_3x3" else 1,
                      cat_read_elsewhere=miss == "concat_read_elsewhere", down=miss == "downsampling", seed=5)
    f = feeds(6)
    got, rows = infer_twice(path, f, 1, "f32")
    close(got, reference(path, f), 1e-5)
    if miss != "downsampling":
        assert len(mixing_convs(rows)) == 2  # the mixing convolution is left as it is
    else:
        # stage 0 shrinks (its branch stays at full cost, a "plain" term); the others still grow
        assert len(mixing_convs(rows)) == 1


@needs_bf16
@pytest.mark.parametrize("threads", [1, 2])
def test_decode_head_bf16(tmp_path: Path, threads: int) -> None:
    path = head_model(tmp_path / "head.onnx", seed=7)
    f = feeds(8)
    got, rows = infer_twice(path, f, threads, "bf16")
    close(got, reference(path, f), 3e-2)
    assert len(mixing_convs(rows)) == 1


def mix_ffn_model(path: Path, c: int = 16, hidden: int = 64, side: int = 12, seed: int = 0) -> Path:
    """Tokens [1, side*side, c] -> fc1 -> channels-first view -> depthwise 3x3 -> tokens -> GELU (as
    x * 0.5 * (1 + erf(x / sqrt 2))) -> fc2."""
    g = OnnxGraph(seed)
    h = g.node("Add", [g.node("MatMul", ["x", g.const(g.rng.standard_normal((c, hidden)) * c ** -0.5)]),
                       g.const(0.1 * g.rng.standard_normal(hidden))])
    v = g.node("Reshape", [g.node("Transpose", [h], perm=[0, 2, 1]), g.const([1, hidden, side, side], np.int64)])
    v = g.conv(v, hidden, hidden, k=3, group=hidden)
    t = g.node("Transpose", [g.node("Reshape", [v, g.const([1, hidden, side * side], np.int64)])], perm=[0, 2, 1])
    erf = g.node("Erf", [g.node("Div", [t, g.const(np.float32(np.sqrt(2.0)))])])
    gelu = g.node("Mul", [g.node("Mul", [t, g.node("Add", [erf, g.const(np.float32(1.0))])]), g.const(np.float32(0.5))])
    out = g.node("Add", [g.node("MatMul", [gelu, g.const(g.rng.standard_normal((hidden, c)) * hidden ** -0.5)]),
                         g.const(0.1 * g.rng.standard_normal(c))])
    return g.save(path, (1, side * side, c), [out], 13)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("precision", ["f32", "bf16"])
def test_mix_ffn_depthwise_on_a_channels_last_view(tmp_path: Path, threads: int, precision: str) -> None:
    if precision == "bf16" and not NATIVE_BF16:
        pytest.skip("this host has no bf16 arithmetic (AVX512_BF16/AMX)")
    path = mix_ffn_model(tmp_path / "ffn.onnx")
    x = np.random.default_rng(2).standard_normal((1, 144, 16)).astype(np.float32)
    got, rows = infer_twice(path, {"x": x}, threads, precision)
    close(got, reference(path, {"x": x}), 1e-5 if precision == "f32" else 3e-2)
    permutes = [r.node_name for r in rows if r.node_type == "Transpose" and r.exec_type == "permute"]
    assert not permutes, permutes
    assert any(r.exec_type == "channels_last_view" for r in rows), [(r.node_type, r.exec_type) for r in rows]


def test_mix_ffn_switch_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPFORGE_CPU_PERMUTE_VIEW", "0")
    path = mix_ffn_model(tmp_path / "ffn.onnx", seed=1)
    x = np.random.default_rng(3).standard_normal((1, 144, 16)).astype(np.float32)
    got, rows = infer_twice(path, {"x": x}, 1, "f32")
    close(got, reference(path, {"x": x}), 1e-5)
    assert sum(r.node_type == "Transpose" and r.exec_type == "permute" for r in rows) == 2
