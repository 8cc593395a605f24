"""Channels-last convolution outputs joined along the channels run our own copy (Concat exec
type ``concat_nhwc:avx512``, kernels/concat.cpp) on AVX-512 hosts instead of oneDNN's concat:
pixel by pixel, each input's channels in turn. onnx.helper graphs (convolutions -> Concat ->
a 3x3 convolution and a MaxPool reading the concatenation) in bf16 and f32: UNet's two equal
halves, DenseNet's many growth inputs, channel counts that end in a partial vector (2, 3, 17,
40 channels: 4 to 80 bytes a pixel). Outputs equal ONNX Runtime's within the precision's
rounding and are bit-identical at 1 and 2 threads; with OPFORGE_CPU_NHWC_CONCAT=0 (oneDNN's
concat) they are the same bytes, NaN and inf included. A concatenation that is also a model
output (a plain reader) and AVX2 hosts keep the other paths."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import opforge
import pytest
from opforge_cpu._loader import load_core

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from cpu_testing import ONEDNN_HAS_AMX  # noqa: E402
from onnx_graph import OnnxGraph  # noqa: E402  (after onnx is known to be there)

avx512 = pytest.mark.skipif(not str(load_core().cpu_isa()).startswith("avx512_core"),
                            reason="the channels-last concat is AVX-512 only (other hosts keep oneDNN's)")
NHWC = "concat_nhwc:avx512"


def concat_model(path: Path, cin: int, parts: list[int], size: tuple[int, int], seed: int,
                 cat_output: bool = False, relu: bool = True) -> Path:
    """x[N, cin, H, W] -> one 3x3 Conv (+ Relu) per part -> Concat(axis 1) -> a 3x3 Conv (-> 8)
    and a 2x2 MaxPool; with ``cat_output`` the concatenation is a model output as well."""
    g = OnnxGraph(seed)
    outs = []
    for c in parts:
        w = g.rng.standard_normal((c, cin, 3, 3)) * (2.0 / (cin * 9)) ** 0.5
        h = g.node("Conv", ["x", g.const(w), g.const(g.rng.standard_normal(c) * 0.1)], pads=[1, 1, 1, 1])
        outs.append(g.node("Relu", [h]) if relu else h)
    cat = g.node("Concat", outs, axis=1)
    total = sum(parts)
    w2 = g.rng.standard_normal((8, total, 3, 3)) * (1.0 / (total * 9)) ** 0.5
    y = g.node("Conv", [cat, g.const(w2), g.const(np.zeros(8))], pads=[1, 1, 1, 1])
    pool = g.node("MaxPool", [cat], kernel_shape=[2, 2], strides=[2, 2])
    return g.save(path, (None, cin, *size), [y, pool] + ([cat] if cat_output else []))  # type: ignore[arg-type]


def run(path: Path, x: np.ndarray, threads: int, precision: str) -> tuple[list[np.ndarray], list[str]]:
    """The outputs (after a second run on other data and a third on ``x``, which must repeat the
    first) and the Concat's exec types."""
    core = opforge.Core()
    cm = core.compile_model(core.read_model(str(path)), "CPU", {
        "INFERENCE_NUM_THREADS": threads, "ENABLE_PROFILING": True, "INFERENCE_PRECISION_HINT": precision})
    req = cm.create_infer_request()
    got = [np.array(o) for o in req.infer({"x": x}).to_tuple()]
    req.infer({"x": x * 0.5})
    for a, b in zip(req.infer({"x": x}).to_tuple(), got, strict=True):
        np.testing.assert_array_equal(np.asarray(a), b)
    kinds = [p.exec_type for p in req.get_profiling_info() if p.node_type == "Concat" and p.status == "EXECUTED"]
    return got, kinds


def check(path: Path, x: np.ndarray, precision: str) -> list[str]:
    """1 and 2 threads bit-identical, within the precision's rounding of ONNX Runtime (f32); the
    Concat's exec types at 2 threads."""
    one, _ = run(path, x, 1, precision)
    two, kinds = run(path, x, 2, precision)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    tol = 3e-2 if precision == "bf16" else 1e-5
    for a, b, w in zip(one, two, want, strict=True):
        np.testing.assert_array_equal(b, a)
        assert a.shape == w.shape, (a.shape, w.shape)
        scale = max(float(np.abs(w[np.isfinite(w)]).max(initial=0.0)), 1e-6)
        np.testing.assert_allclose(a, w, rtol=0, atol=tol * scale, equal_nan=True)
    return kinds


CASES = [
    # (input channels, parts, size)
    (8, [16, 16], (24, 20)),        # UNet: two halves of 32 bytes a pixel in bf16
    (8, [32, 32], (9, 13)),         # 64 bytes: one whole zmm
    (4, [64, 32, 32, 32], (7, 7)),  # DenseNet: the block's input and its growth
    (6, [17, 40, 2], (5, 11)),      # partial vectors: 34, 80 and 4 bytes in bf16
    (3, [3, 5], (6, 6)),            # fewer channels than a vector
    (16, [48, 80], (3, 17)),        # 96 + 160 bytes: whole zmm and a tail
]


@avx512
@pytest.mark.parametrize("precision", ["bf16", "f32"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: "+".join(map(str, c[1])))
def test_nhwc_concat_matches_onnxruntime(tmp_path: Path, precision: str,
                                         case: tuple[int, list[int], tuple[int, int]]) -> None:
    cin, parts, size = case
    path = concat_model(tmp_path / "m.onnx", cin, parts, size, seed=len(parts) + cin)
    x = np.random.default_rng(cin).standard_normal((2, cin, *size)).astype(np.float32)
    kinds = check(path, x, precision)
    producers = conv_kinds(path, x, precision)[:-1]  # the last convolution reads the Concat
    # Without AMX oneDNN runs bf16 convolutions with 3-4 input channels as jit_bf16; since stop 19
    # (core/nn.cpp's stem rule) one of the model's plain input, as every producer here, writes
    # nhwc; with OPFORGE_CPU_STEM_BF16_NHWC=0 it writes oneDNN's blocked layout
    stem_rule = precision == "bf16" and not AMX and os.environ.get("OPFORGE_CPU_STEM_BF16_NHWC", "1") != "0"
    if all(k.startswith(CHANNELS_LAST_CONVS + (("jit_bf16:",) if stem_rule else ())) for k in producers):
        assert kinds == [NHWC], (kinds, producers)
    else:
        # the Concat's inputs are not channels-last, so our kernel must refuse and oneDNN's
        # concatenation runs
        assert NHWC not in kinds, (kinds, producers)


#: convolution exec types that write the channels-last layout the NHWC concat reads
# convolutions that write channels-last: oneDNN's brgconv here, our stem and depthwise kernels, and
# oneDNN 3.2's older AMX convolution (it takes bf16 convolutions of 3-4 input channels on AMX hosts,
# and runs on nhwc only)
CHANNELS_LAST_CONVS = ("brgconv:", "stem:", "dw:", "jit:avx512_core_amx")
AMX = ONEDNN_HAS_AMX


def conv_kinds(path: Path, x: np.ndarray, precision: str) -> list[str]:
    """The exec types of the model's convolutions at 2 threads, in execution order."""
    core = opforge.Core()
    cm = core.compile_model(core.read_model(str(path)), "CPU", {
        "INFERENCE_NUM_THREADS": 2, "ENABLE_PROFILING": True, "INFERENCE_PRECISION_HINT": precision})
    req = cm.create_infer_request()
    req.infer({"x": x})
    return [p.exec_type for p in req.get_profiling_info()
            if p.node_type == "Convolution" and p.status == "EXECUTED"]


@avx512
@pytest.mark.parametrize("precision", ["bf16", "f32"])
def test_nhwc_concat_as_model_output(tmp_path: Path, precision: str) -> None:
    # the concatenation is also a model output, a plain reader: the plain path (reorder+memcpy)
    path = concat_model(tmp_path / "m.onnx", 8, [16, 24], (10, 12), seed=7, cat_output=True)
    x = np.random.default_rng(7).standard_normal((1, 8, 10, 12)).astype(np.float32)
    assert NHWC not in check(path, x, precision)


def child(tmp_path: Path, env: dict[str, str], precision: str = "bf16",
          special: bool = False) -> tuple[list[np.ndarray], str]:
    """The outputs and the Concat's exec types in a child process with ``env``; ``special``: NaN
    and inf in the input (no Relu, whose fused form in oneDNN drops NaN)."""
    path = concat_model(tmp_path / "m.onnx", 8, [16, 40], (9, 10), seed=11, relu=not special)
    x = np.random.default_rng(11).standard_normal((1, 8, 9, 10)).astype(np.float32)
    if special:
        x[0, :, 2, 3] = np.nan
        x[0, 1, 5, 5] = np.inf
        x[0, 2, 7, 1] = -np.inf
    np.save(tmp_path / "x.npy", x)
    code = ("import sys, numpy as np; sys.path.insert(0, sys.argv[3]); from test_cpu_concat_nhwc import run; "
            "from pathlib import Path; out, k = run(Path(sys.argv[1]), np.load(sys.argv[2]), 2, sys.argv[4]); "
            "[np.save(sys.argv[2] + f'.{i}.npy', o) for i, o in enumerate(out)]; print(repr(k))")
    res = subprocess.run([sys.executable, "-c", code, str(path), str(tmp_path / "x.npy"), str(Path(__file__).parent), precision],
                         env=dict(os.environ, **env), capture_output=True, text=True, timeout=120, check=True)
    return [np.load(str(tmp_path / "x.npy") + f".{i}.npy") for i in range(2)], res.stdout


@avx512
def test_nhwc_concat_switch_off_same_bytes(tmp_path: Path) -> None:
    # OPFORGE_CPU_NHWC_CONCAT=0 (read once a process): oneDNN's concat, the same bytes
    on, kinds_on = child(tmp_path, {})
    off, kinds_off = child(tmp_path, {"OPFORGE_CPU_NHWC_CONCAT": "0"})
    assert NHWC in kinds_on and NHWC not in kinds_off, (kinds_on, kinds_off)
    for a, b in zip(on, off, strict=True):
        np.testing.assert_array_equal(a, b)


@avx512
@pytest.mark.parametrize("precision", ["bf16", "f32"])
def test_nhwc_concat_nan_inf_same_bytes_as_onednn(tmp_path: Path, precision: str) -> None:
    # a copy: NaN and +-inf reach the concatenation's readers (a convolution, a MaxPool) exactly
    # as through oneDNN's concat
    on, kinds_on = child(tmp_path, {}, precision, special=True)
    off, kinds_off = child(tmp_path, {"OPFORGE_CPU_NHWC_CONCAT": "0"}, precision, special=True)
    assert NHWC in kinds_on and NHWC not in kinds_off, (kinds_on, kinds_off)
    assert np.isnan(on[1]).any()
    for a, b in zip(on, off, strict=True):
        np.testing.assert_array_equal(a, b)


def test_avx2_host_keeps_onednn(tmp_path: Path) -> None:
    _, kinds = child(tmp_path, {"ONEDNN_MAX_CPU_ISA": "AVX2"}, "f32")
    assert NHWC not in kinds, kinds
