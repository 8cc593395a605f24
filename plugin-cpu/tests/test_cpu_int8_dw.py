"""Our int8 depthwise kernel (csrc/core/dw_conv_int8.cpp, stop 22) in a QuantizedConvolution's
place (kernels/quantized_dw_conv.cpp): exec type ``dw:avx512_int8`` (``dw:avx2_int8`` under
ONEDNN_MAX_CPU_ISA=AVX2). Its integer sums are exact and its requantization is oneDNN's operation
for operation, so its output bytes are the ones of the primitive it replaces (brdgmm_dw, or
jit_int8 where a depthwise one keeps a source zero point; OPFORGE_CPU_INT8_DW=0, in a child
process) exactly, at AVX-512 and under the AVX2 cap; within one quantization step of ONNX
Runtime's int8 (99 % equal); the same at 1 and 2 threads. QDQ models from ONNX Runtime's static
quantizer over one depthwise convolution with seeded weights: 3x3 and 5x5, strides 1 and 2,
padding 0 to 2, odd widths, channels not a multiple of 8 or 16, batch 2, no activation / ReLU /
ReLU6 (Clip) fused, u8 and s8 activations, a source zero point 0 (a ReLU before it) or not."""

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
ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnxruntime.quantization")
from cpu_testing import infer_twice  # noqa: E402
from int8_testing import assert_close_steps, output_scale  # noqa: E402
from onnx_graph import OnnxGraph  # noqa: E402  (after onnx is known to be there)
from onnxruntime import quantization  # noqa: E402

# (kernel, stride, padding, channels, height, width, batch, activation, source, activation type)
# source "relu": a 1x1 convolution + ReLU before it (source zero point 0, u8; -128, s8); "raw": a
# 1x1 convolution alone (a zero point near the middle of the range)
CASES = [
    (3, 1, 1, 24, 9, 11, 1, "relu6", "relu", "u8"),
    (3, 1, 1, 37, 8, 13, 2, "none", "relu", "u8"),
    (3, 2, 1, 20, 15, 15, 1, "relu", "raw", "u8"),
    (3, 2, 0, 32, 14, 17, 1, "relu6", "relu", "u8"),
    (5, 1, 2, 40, 11, 9, 1, "relu6", "relu", "u8"),
    (5, 2, 2, 24, 16, 16, 2, "relu", "relu", "u8"),
    (5, 2, 1, 19, 13, 13, 1, "none", "raw", "u8"),
    (5, 1, 0, 16, 10, 10, 1, "relu", "raw", "u8"),
    (3, 1, 2, 12, 7, 7, 1, "none", "raw", "i8"),
    (3, 1, 1, 24, 9, 9, 1, "relu6", "relu", "i8"),
    (5, 1, 2, 33, 12, 10, 1, "relu", "raw", "i8"),
    (3, 1, 1, 48, 1, 30, 1, "relu6", "relu", "u8"),
    (5, 1, 2, 8, 3, 3, 1, "relu", "relu", "u8"),
    (3, 2, 1, 64, 7, 7, 1, "none", "raw", "u8"),
]

IDS = [f"k{c[0]}s{c[1]}p{c[2]}-c{c[3]}-{c[4]}x{c[5]}-n{c[6]}-{c[7]}-{c[8]}-{c[9]}" for c in CASES]


def build(path: Path, case: tuple[Any, ...]) -> tuple[Path, np.ndarray]:
    """The float model of ``case`` quantized by ONNX Runtime (per-channel s8 weights), and an input."""
    k, s, p, c, h, w, n, act, source, atype = case
    g = OnnxGraph(17 + k * 7 + c)
    # a 1x1 convolution first, as in the models: its output is the channels-last int8 tensor the
    # depthwise one reads (a Quantize's plain one would be reordered first: kept on oneDNN)
    x = g.conv("x", c, c)
    x = g.relu(x) if source == "relu" else x
    wt = g.rng.standard_normal((c, 1, k, k)) * (2.0 / (k * k)) ** 0.5
    b = g.rng.standard_normal(c) * 0.2
    y = g.node("Conv", [x, g.const(wt), g.const(b)], group=c, pads=[p] * 4, strides=[s, s], kernel_shape=[k, k])
    if act == "relu":
        y = g.relu(y)
    elif act == "relu6":
        y = g.node("Clip", [y, g.const(0.0), g.const(6.0)])
    shape = (n, c, h, w)
    f32 = g.save(path.with_suffix(".f32.onnx"), shape, [y])
    rng = np.random.default_rng(11)
    calib = [{"x": rng.standard_normal(shape).astype(np.float32)} for _ in range(8)]

    class Calibration(quantization.CalibrationDataReader):  # type: ignore[misc]
        def __init__(self) -> None:
            self.it = iter(calib)

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.it, None)

    # the ReLU / Clip after the convolution kept as a node (the quantizer would otherwise drop it
    # into the output's range), so that it reaches the kernel as a fused post-op
    quantization.quantize_static(
        str(f32), str(path), Calibration(), quant_format=quantization.QuantFormat.QDQ, per_channel=True,
        activation_type=quantization.QuantType.QUInt8 if atype == "u8" else quantization.QuantType.QInt8,
        weight_type=quantization.QuantType.QInt8, extra_options={"QDQKeepRemovableActivations": True})
    xin = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    return path, xin


def run(path: Path, x: np.ndarray, threads: int) -> tuple[np.ndarray, list[str]]:
    got, rows = infer_twice(path, {"x": x}, threads, "f32")
    return got[0], [r.exec_type for r in rows if r.node_type == "QuantizedConvolution"]


CHILD = """
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[2])
from pathlib import Path
from test_cpu_int8_dw import run
out = {}
for m, x in json.loads(sys.argv[1]):
    y, types = run(Path(m), np.load(x), 1)
    np.save(m + '.' + sys.argv[3] + '.npy', y)
    out[m] = types
print(json.dumps(out))
"""


def child(models: list[tuple[str, str]], tag: str, **env: str) -> tuple[dict[str, np.ndarray], dict[str, list[str]]]:
    """Each model's output and QuantizedConvolution exec types at one thread in a child process
    with ``env`` (the switches and the ISA cap are read once a process)."""
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(models), str(Path(__file__).parent), tag],
                          env=dict(os.environ, **env), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    types = json.loads(done.stdout.strip().splitlines()[-1])
    return {m: np.load(m + "." + tag + ".npy") for m, _ in models}, types


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Path, np.ndarray]]:
    d = tmp_path_factory.mktemp("int8_dw")
    return [build(d / f"m{i}.onnx", case) for i, case in enumerate(CASES)]


def saved(models: list[tuple[Path, np.ndarray]]) -> list[tuple[str, str]]:
    out = []
    for m, x in models:
        np.save(str(m) + ".x.npy", x)
        out.append((str(m), str(m) + ".x.npy"))
    return out


@pytest.fixture(scope="module")
def switched_off(models: list[tuple[Path, np.ndarray]]) -> tuple[dict[str, np.ndarray], dict[str, list[str]]]:
    return child(saved(models), "off", OPFORGE_CPU_INT8_DW="0")


def expect_ours(case: tuple[Any, ...], types_off: list[str], isa: str) -> bool:
    """Whether the rule gives this case our kernel: every shape except a 3x3 stride-2 one that
    oneDNN runs as brdgmm_dw at AVX-512."""
    k, s = case[0], case[1]
    return not (isa == "avx512" and k == 3 and s == 2 and any(t.startswith("brdgmm_dw") for t in types_off))


@pytest.mark.parametrize("i", range(len(CASES)), ids=IDS)
def test_int8_dw_same_bytes(i: int, models: list[tuple[Path, np.ndarray]],
                            switched_off: tuple[dict[str, np.ndarray], dict[str, list[str]]]) -> None:
    path, x = models[i]
    one, types = run(path, x, 1)
    two, types2 = run(path, x, 2)
    np.testing.assert_array_equal(two, one)
    assert types2 == types
    off, off_types = switched_off[0][str(path)], switched_off[1][str(path)]
    assert not any(t.startswith("dw:") for t in off_types), off_types
    capped = os.environ.get("ONEDNN_MAX_CPU_ISA", "").upper() in ("AVX2", "AVX2_VNNI")
    isa = "avx2" if capped or "avx512" not in "".join(off_types) else "avx512"
    ours = [t for t in types if t.startswith("dw:")]
    if expect_ours(CASES[i], off_types, isa):
        assert ours == [f"dw:{isa}_int8"], (types, off_types)
    else:
        assert not ours, types
    # the bytes of the primitive it replaces
    np.testing.assert_array_equal(one, off)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert_close_steps(one, sess.run(None, {"x": x})[0], output_scale(path))


def test_int8_dw_avx2_cap(models: list[tuple[Path, np.ndarray]],
                          switched_off: tuple[dict[str, np.ndarray], dict[str, list[str]]]) -> None:
    """Under ONEDNN_MAX_CPU_ISA=AVX2 (an emulated AVX2 host): the AVX2 build on every case, the
    bytes of oneDNN's AVX2 primitive (the switch off, capped too)."""
    if os.environ.get("ONEDNN_MAX_CPU_ISA"):
        pytest.skip("already capped")
    m = saved(models)
    on, on_types = child(m, "cap_on", ONEDNN_MAX_CPU_ISA="AVX2")
    off, off_types = child(m, "cap_off", ONEDNN_MAX_CPU_ISA="AVX2", OPFORGE_CPU_INT8_DW="0")
    for (path, _x), case in zip(models, CASES):
        key = str(path)
        # an s8 source reaches the kernel as u8 bytes + 128 there (passes/int8/s8_shift.py: oneDNN's
        # s8 depthwise convolution without VNNI halves the weights, 1-2 steps off, and the rule
        # refuses an s8 source on such a host), so every case runs the AVX2 build
        want = ["dw:avx2_int8"]
        assert [t for t in on_types[key] if t.startswith("dw:")] == want, (case, on_types[key])
        assert not any("avx512" in t for t in off_types[key]), off_types[key]
        # (not against ONNX Runtime: without VNNI the 1x1 convolution before it runs its weights
        # rounded to 7 bits, test_cpu_int8_no_vnni.py, several steps away on these models)
        np.testing.assert_array_equal(on[key], off[key], err_msg=str(case))
