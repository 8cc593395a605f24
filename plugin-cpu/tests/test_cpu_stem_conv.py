"""A network's first convolution (at most 4 input channels, kernels of at most 9 taps, f32) runs
our direct AVX-512 kernel (core/stem_conv.cpp, exec type ``stem:avx512``) instead of oneDNN's
primitive. onnx.helper graphs (stem -> activation -> a 3x3 convolution that reads its layout):
1-4 input channels, 3x3/2x2/1x3 kernels, strides 1-3, symmetric and asymmetric padding,
dilation, batch 1-3, output channels that are not a multiple of 16, outputs of 1x1, each fused
post-op (SiLU since stop 20), the non-temporal store path of a vgg11-sized stem; results equal
ONNX Runtime's within 1e-5 and bit-identical at 1 and 2 threads, and the tile's register
epilogue (stop 20) bit-identical to the one before it (OPFORGE_CPU_STEM_REGS=0). Kernels of more
taps, more channels, an activation it does not run, AVX2 hosts, OPFORGE_CPU_STEM_CONV=0 and (for a
SiLU stem) OPFORGE_CPU_STEM_SWISH=0 keep oneDNN."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import opforge
import pytest
from opforge_cpu._loader import load_core

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx_graph import OnnxGraph  # noqa: E402  (after onnx is known to be there)

avx512 = pytest.mark.skipif(not str(load_core().cpu_isa()).startswith("avx512_core"),
                            reason="the stem kernel is AVX-512 only (other hosts keep oneDNN)")
STEM = "stem:avx512"


def stem_model(path: Path, c: int, o: int, k: tuple[int, int], strides: tuple[int, int], pads: list[int],
               dil: tuple[int, int], size: tuple[int, int], act: str | None, seed: int, bias: bool = True,
               follow: bool = True) -> Path:
    """x[N, c, H, W] -> Conv(c -> o) -> act -> (follow: Conv 3x3 o -> 16, reading the stem's layout)."""
    g = OnnxGraph(seed)
    w = g.rng.standard_normal((o, c, *k)) * (1.0 / (c * k[0] * k[1])) ** 0.5
    ins = ["x", g.const(w)] + ([g.const(g.rng.standard_normal(o) * 0.1)] if bias else [])
    h = g.node("Conv", ins, kernel_shape=list(k), strides=list(strides), pads=pads, dilations=list(dil))
    if act == "Relu":
        h = g.node("Relu", [h])
    elif act == "Relu6":
        h = g.node("Clip", [h, g.const(0.0), g.const(6.0)])
    elif act == "ClipNeg":
        h = g.node("Clip", [h, g.const(-0.3), g.const(0.4)])
    elif act == "Sigmoid":
        h = g.node("Sigmoid", [h])
    elif act == "HardSwish":  # MobileNetV3's stem
        h = g.node("HardSwish", [h])
    elif act == "SiLU":  # EfficientNet's stem: x * sigmoid(x), fused as Swish
        h = g.node("Mul", [h, g.node("Sigmoid", [h])])
    elif act == "ReluClip":  # two fused activations: the tile's per-register loop, not its clamp
        h = g.node("Clip", [g.node("Relu", [h]), g.const(-0.3), g.const(0.4)])
    if follow:
        w2 = g.rng.standard_normal((16, o, 3, 3)) * (1.0 / (o * 9)) ** 0.5
        h = g.node("Conv", [h, g.const(w2), g.const(np.zeros(16))], pads=[1, 1, 1, 1])
    return g.save(path, (None, c, *size), [h])  # type: ignore[arg-type]


def run(path: Path, x: np.ndarray, threads: int) -> tuple[np.ndarray, list[str]]:
    core = opforge.Core()
    cm = core.compile_model(core.read_model(str(path)), "CPU",
                            {"INFERENCE_NUM_THREADS": threads, "ENABLE_PROFILING": True})
    req = cm.create_infer_request()
    out = np.array(req.infer({"x": x})[0])
    kinds = [p.exec_type for p in req.get_profiling_info() if p.node_type == "Convolution"]
    return out, kinds


def reference(path: Path, x: np.ndarray) -> Any:
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


def check(path: Path, x: np.ndarray, stem: bool = True) -> list[str]:
    out1, kinds = run(path, x, 1)
    assert (STEM in kinds) == stem, kinds
    out2, kinds2 = run(path, x, 2)
    assert kinds2 == kinds
    np.testing.assert_array_equal(out1, out2)
    ref = reference(path, x)
    np.testing.assert_allclose(out1, ref, rtol=1e-5, atol=1e-5 * max(1.0, float(np.abs(ref).max())))
    return kinds


# (channels in, out, kernel, strides, pads [top, left, bottom, right], dilations, input size, batch)
SHAPES = [
    (3, 64, (3, 3), (1, 1), [1, 1, 1, 1], (1, 1), (20, 20), 1),     # vgg-like
    (3, 32, (3, 3), (2, 2), [1, 1, 1, 1], (1, 1), (23, 23), 2),     # mobilenet_v2 / regnet
    (3, 64, (3, 3), (2, 2), [0, 0, 0, 0], (1, 1), (25, 25), 1),     # squeezenet
    (3, 32, (3, 3), (2, 2), [0, 0, 0, 0], (1, 1), (31, 29), 3),     # inception_v3
    (1, 24, (3, 3), (1, 1), [0, 1, 2, 1], (1, 1), (17, 15), 3),     # asymmetric padding, 24 channels
    (2, 40, (3, 3), (2, 2), [2, 0, 1, 2], (2, 2), (19, 21), 1),     # dilation
    (4, 80, (3, 3), (1, 1), [1, 1, 1, 1], (1, 1), (11, 9), 2),      # 64 + 16 channels
    (3, 100, (3, 3), (1, 2), [1, 1, 1, 1], (1, 1), (10, 13), 1),    # 64 + 36: a masked last vector
    (3, 17, (2, 2), (2, 2), [0, 0, 0, 0], (1, 1), (14, 14), 1),     # 2x2, 17 channels
    (3, 48, (1, 3), (1, 1), [0, 1, 0, 1], (1, 1), (9, 12), 2),      # 1x3
    (3, 48, (3, 3), (3, 3), [1, 1, 1, 1], (1, 1), (16, 16), 1),     # stride 3 (run-time step)
    (3, 16, (3, 3), (1, 1), [0, 0, 0, 0], (1, 1), (3, 3), 2),       # a 1x1 output
]


@avx512
@pytest.mark.parametrize("shape", SHAPES, ids=[f"c{s[0]}o{s[1]}k{s[2][0]}{s[2][1]}s{s[3][0]}{s[3][1]}" for s in SHAPES])
def test_stem_matches_onnxruntime(tmp_path: Path, shape: tuple[Any, ...]) -> None:
    c, o, k, strides, pads, dil, size, batch = shape
    path = stem_model(tmp_path / "m.onnx", c, o, k, strides, pads, dil, size, "Relu", seed=o + c)
    x = np.random.default_rng(o).standard_normal((batch, c, *size)).astype(np.float32)
    check(path, x)


@avx512
@pytest.mark.parametrize("act", [None, "Relu", "Relu6", "ClipNeg", "SiLU", "ReluClip"])
@pytest.mark.parametrize("bias", [True, False])
def test_stem_post_ops(tmp_path: Path, act: str | None, bias: bool) -> None:
    path = stem_model(tmp_path / "m.onnx", 3, 24, (3, 3), (2, 2), [1, 1, 1, 1], (1, 1), (15, 15), act, seed=4,
                      bias=bias)
    x = (np.random.default_rng(2).standard_normal((2, 3, 15, 15)) * 4).astype(np.float32)
    check(path, x)


@avx512
def test_stem_as_model_output(tmp_path: Path) -> None:
    """No convolution reads it: the program's output in plain NCHW, whatever the stem wrote."""
    path = stem_model(tmp_path / "m.onnx", 3, 32, (3, 3), (2, 2), [1, 1, 1, 1], (1, 1), (18, 18), "Relu6", seed=8,
                      follow=False)
    x = np.random.default_rng(8).standard_normal((1, 3, 18, 18)).astype(np.float32)
    check(path, x)


@avx512
def test_stem_large_output_streams(tmp_path: Path) -> None:
    """vgg11's stem (64 x 224 x 224 f32, 12.8 MB): the non-temporal store path."""
    path = stem_model(tmp_path / "m.onnx", 3, 64, (3, 3), (1, 1), [1, 1, 1, 1], (1, 1), (224, 224), "Relu", seed=1,
                      follow=False)
    x = np.random.default_rng(1).standard_normal((1, 3, 224, 224)).astype(np.float32)
    check(path, x)


@avx512
@pytest.mark.parametrize("act", ["Relu", "SiLU"])
def test_stem_nan_inf(tmp_path: Path, act: str) -> None:
    path = stem_model(tmp_path / "m.onnx", 3, 32, (3, 3), (1, 1), [1, 1, 1, 1], (1, 1), (12, 12), act, seed=6,
                      follow=False)
    x = np.random.default_rng(6).standard_normal((1, 3, 12, 12)).astype(np.float32)
    x[0, 0, 3, 4] = np.nan
    x[0, 1, 8, 8] = np.inf
    x[0, 2, 0, 11] = -np.inf
    ref = reference(path, x)
    for threads in (1, 2):
        out, kinds = run(path, x, threads)
        assert STEM in kinds, kinds
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)  # (NaN where ONNX Runtime has NaN)


@avx512
@pytest.mark.parametrize("case", ["k5", "k7", "c5", "sigmoid", "hardswish", "pad_ge_kernel"])
def test_stem_rule_keeps_onednn(tmp_path: Path, case: str) -> None:
    """More than 9 taps (7x7/2 lost to oneDNN), more than 4 channels, an activation it does not
    run (Sigmoid) or was not faster with (HardSwish, stop 25); padding as wide as the kernel,
    where oneDNN picks gemm with a plain destination (a layout the stem kernel does not write)."""
    c = 5 if case == "c5" else 3
    k = {"k5": (5, 5), "k7": (7, 7), "pad_ge_kernel": (2, 2)}.get(case, (3, 3))
    pads = [2] * 4 if case == "pad_ge_kernel" else [k[0] // 2] * 4
    act = {"sigmoid": "Sigmoid", "hardswish": "HardSwish"}.get(case, "Relu")
    path = stem_model(tmp_path / "m.onnx", c, 32, k, (2, 2), pads, (1, 1), (16, 16), act, seed=3)
    x = np.random.default_rng(3).standard_normal((1, c, 16, 16)).astype(np.float32)
    check(path, x, stem=False)


def child_kinds(tmp_path: Path, env: dict[str, str], act: str | None = "Relu6") -> tuple[np.ndarray, np.ndarray, str]:
    path = stem_model(tmp_path / "m.onnx", 3, 32, (3, 3), (2, 2), [1, 1, 1, 1], (1, 1), (20, 20), act, seed=5)
    x = np.random.default_rng(5).standard_normal((2, 3, 20, 20)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    code = ("import sys, numpy as np; sys.path.insert(0, sys.argv[3]); from test_cpu_stem_conv import run; "
            "from pathlib import Path; out, k = run(Path(sys.argv[1]), np.load(sys.argv[2]), 2); "
            "np.save(sys.argv[2] + '.out.npy', out); print(repr(k))")
    res = subprocess.run([sys.executable, "-c", code, str(path), str(tmp_path / "x.npy"), str(Path(__file__).parent)],
                         env=dict(os.environ, **env), capture_output=True, text=True, timeout=120, check=True)
    return np.load(str(tmp_path / "x.npy") + ".out.npy"), reference(path, x), res.stdout


@avx512
def test_stem_switch_off(tmp_path: Path) -> None:
    # OPFORGE_CPU_STEM_CONV=0 (read once a process): oneDNN's primitive, same results
    out, ref, kinds = child_kinds(tmp_path, {"OPFORGE_CPU_STEM_CONV": "0"})
    assert STEM not in kinds, kinds
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5 * float(np.abs(ref).max()))


@avx512
@pytest.mark.parametrize("act", [None, "Relu6", "SiLU", "ReluClip"])
def test_stem_register_epilogue_same_bytes(tmp_path: Path, act: str | None) -> None:
    """Stop 20's tile epilogue on registers (a clamp for none/ReLU/Clip, the per-register loop
    otherwise) writes the same bytes as the epilogue through memory (OPFORGE_CPU_STEM_REGS=0)."""
    (tmp_path / "on").mkdir()
    (tmp_path / "off").mkdir()
    on, ref, kinds_on = child_kinds(tmp_path / "on", {}, act)
    off, _, kinds_off = child_kinds(tmp_path / "off", {"OPFORGE_CPU_STEM_REGS": "0"}, act)
    assert STEM in kinds_on and STEM in kinds_off, (kinds_on, kinds_off)
    np.testing.assert_array_equal(on, off)
    np.testing.assert_allclose(on, ref, rtol=1e-5, atol=1e-5 * float(np.abs(ref).max()))


@avx512
def test_stem_swish_switch_off(tmp_path: Path) -> None:
    # OPFORGE_CPU_STEM_SWISH=0: a stem with a fused SiLU keeps oneDNN's primitive, same results
    out, ref, kinds = child_kinds(tmp_path, {"OPFORGE_CPU_STEM_SWISH": "0"}, "SiLU")
    assert STEM not in kinds, kinds
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5 * float(np.abs(ref).max()))


def test_stem_avx2_host_keeps_onednn(tmp_path: Path) -> None:
    # the AVX2 build of the tile lost to oneDNN's jit:avx2 first convolution: not used there
    out, ref, kinds = child_kinds(tmp_path, {"ONEDNN_MAX_CPU_ISA": "AVX2"})
    assert STEM not in kinds, kinds
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5 * float(np.abs(ref).max()))
