"""The exact integer convolution (kernels/integer_conv_common.hpp IntConvKernel) tap by tap over
output rows (exec type ``int_conv:rows``): the ConvIntegers the int8 im2col kernel does not take
(fewer than 16 filters per group: SegFormer's Mix-FFN depthwise 3x3 of ONNX Runtime's
quantize_dynamic) and every i32 convolution. Bit-identical to ONNX Runtime's ConvInteger at 1 and 2
threads, and to the direct loop it replaces (OPFORGE_CPU_INT_CONV_ROWS=0, in a child process: the
switch is read once a process): strides, dilations, asymmetric and SAME padding, 1-D to 3-D,
u8 and s8 activations, zero points."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from test_cpu_int8_dynamic import child, conv_integer, ort_run, run

CASES = [
    ((1, 32, 16, 16), (32, 1, 3, 3), {"group": 32, "pads": [1, 1, 1, 1]}),               # SegFormer's Mix-FFN
    ((2, 12, 11, 9), (12, 1, 3, 3), {"group": 12, "pads": [1, 1, 1, 1], "strides": [2, 2]}),
    ((1, 8, 13, 14), (8, 1, 3, 3), {"group": 8, "pads": [2, 0, 1, 2], "dilations": [2, 2]}),
    ((1, 6, 9, 9), (6, 1, 5, 5), {"group": 6, "auto_pad": "SAME_UPPER", "strides": [2, 3]}),
    ((1, 8, 30), (8, 1, 5), {"group": 8, "pads": [2, 2]}),                               # 1-D depthwise
    ((1, 4, 6, 6), (4, 2, 3, 3), {"group": 2, "pads": [1, 1, 1, 1]}),                    # two filters per group
    ((1, 3, 4, 3), (6, 1, 2, 2), {"group": 3, "pads": [0, 0, 0, 0], "strides": [1, 2]}),
]


def _model(tmp_path: Path, x_shape: tuple[int, ...], w_shape: tuple[int, ...], attrs: dict[str, Any],
           x_type: type, seed: int) -> tuple[Path, dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    info = np.iinfo(x_type)
    x = rng.integers(info.min, info.max + 1, size=x_shape).astype(x_type)
    w = rng.integers(-128, 128, size=w_shape).astype(np.int8)
    path = conv_integer(tmp_path / "c.onnx", x, w, "input", **attrs)
    return path, {"x": x, "xz": np.array(info.max // 3, x_type)}


@pytest.mark.parametrize(("x_shape", "w_shape", "attrs"), CASES)
@pytest.mark.parametrize("x_type", [np.uint8, np.int8])
def test_int_conv_rows_bit_exact(tmp_path: Path, x_shape: tuple[int, ...], w_shape: tuple[int, ...],
                                 attrs: dict[str, Any], x_type: type) -> None:
    path, feeds = _model(tmp_path, x_shape, w_shape, attrs, x_type, seed=w_shape[0] + len(x_shape))
    want = ort_run(path, feeds)[0]
    for threads in (1, 2):
        got, types = run(path, feeds, threads)
        np.testing.assert_array_equal(got[0], want)
        assert types.get("GroupConvolution") == "int_conv:rows", types


_CHILD = """
import json, numpy as np
from pathlib import Path
from test_cpu_int8_dynamic import run
x = np.load('{x}'); got, types = run(Path('{path}'), {{'x': x, 'xz': np.array({zp}, x.dtype)}}, 2)
print(json.dumps([got[0].tolist(), types.get('GroupConvolution')]))
"""


@pytest.mark.parametrize("case", [0, 1, 2, 4])
def test_int_conv_rows_equal_the_direct_loop(tmp_path: Path, case: int) -> None:
    x_shape, w_shape, attrs = CASES[case]
    path, feeds = _model(tmp_path, x_shape, w_shape, attrs, np.uint8, seed=40 + case)
    np.save(tmp_path / "x.npy", feeds["x"])
    code = _CHILD.format(x=tmp_path / "x.npy", path=path, zp=int(feeds["xz"]))
    rows, rows_type = child(code, {"OPFORGE_CPU_INT_CONV_ROWS": "1"})
    direct, direct_type = child(code, {"OPFORGE_CPU_INT_CONV_ROWS": "0"})
    assert (rows_type, direct_type) == ("int_conv:rows", "int_conv")
    np.testing.assert_array_equal(np.array(rows, np.int32), np.array(direct, np.int32))


def test_int_conv_rows_3d(tmp_path: Path) -> None:
    # a 3-D depthwise ConvInteger (ONNX Runtime's ConvInteger takes 2-D only): against NumPy
    rng = np.random.default_rng(7)
    x = rng.integers(0, 256, size=(1, 3, 4, 5, 6)).astype(np.uint8)
    w = rng.integers(-128, 128, size=(3, 1, 3, 3, 3)).astype(np.int8)
    path = conv_integer(tmp_path / "c.onnx", x, w, "input", group=3, pads=[1, 0, 1, 1, 2, 1])
    zp = 77
    got, types = run(path, {"x": x, "xz": np.array(zp, np.uint8)}, 2)
    xp = np.pad(x.astype(np.int64) - zp, [(0, 0), (0, 0), (1, 1), (0, 2), (1, 1)])
    want = np.zeros((1, 3, 4, 5, 6), np.int64)
    for c in range(3):
        for kz in range(3):
            for ky in range(3):
                for kx in range(3):
                    want[0, c] += xp[0, c, kz:kz + 4, ky:ky + 5, kx:kx + 6] * int(w[c, 0, kz, ky, kx])
    np.testing.assert_array_equal(got[0], want.astype(np.int32))
    assert types.get("GroupConvolution") == "int_conv:rows", types


# --- IntegerConvolution's 1x1 im2col (a tiled transpose; kernels/integer_convolution.cpp) -----------

POINTWISE = [
    ((1, 70, 9, 11), (13, 70, 1, 1), {}, True),                  # channels and pixels not multiples of 64
    ((2, 130, 8, 8), (24, 130, 1, 1), {}, True),                 # two images, three channel tiles
    ((1, 40, 5, 7), (32, 20, 1, 1), {"group": 2}, True),         # grouped (16 filters per group)
    ((1, 16, 20), (8, 16, 1), {}, True),                         # Conv1d
    ((1, 12, 5, 6), (8, 12, 1, 1), {"pads": [0, 0, 1, 1]}, False),  # padded after: not a plain transpose
    ((1, 12, 6, 6), (8, 12, 1, 1), {"strides": [2, 2]}, False),
]


@pytest.mark.parametrize(("x_shape", "w_shape", "attrs", "pointwise"), POINTWISE)
def test_pointwise_conv_integer_bit_exact(tmp_path: Path, x_shape: tuple[int, ...], w_shape: tuple[int, ...],
                                          attrs: dict[str, Any], pointwise: bool) -> None:
    path, feeds = _model(tmp_path, x_shape, w_shape, attrs, np.uint8, seed=x_shape[1])
    want = ort_run(path, feeds)[0]
    for threads in (1, 2):
        got, types = run(path, feeds, threads)
        np.testing.assert_array_equal(got[0], want)
    impl = types.get("IntegerConvolution", "")
    if os.environ.get("ONEDNN_MAX_CPU_ISA"):
        return  # no VNNI under the cap: the exact loop (test_cpu_int8_dynamic.py), same bits
    assert impl.startswith("int8_dynamic:im2col_1x1+" if pointwise else "int8_dynamic:im2col+"), types


_POINTWISE_CHILD = _CHILD.replace("types.get('GroupConvolution')", "types.get('IntegerConvolution')")


def test_pointwise_im2col_equals_the_window_loop(tmp_path: Path) -> None:
    x_shape, w_shape, attrs, _ = POINTWISE[1]
    path, feeds = _model(tmp_path, x_shape, w_shape, attrs, np.uint8, seed=99)
    np.save(tmp_path / "x.npy", feeds["x"])
    code = _POINTWISE_CHILD.format(x=tmp_path / "x.npy", path=path, zp=int(feeds["xz"]))
    tiled, tiled_type = child(code, {"OPFORGE_CPU_INT_CONV_POINTWISE": "1"})
    loop, loop_type = child(code, {"OPFORGE_CPU_INT_CONV_POINTWISE": "0"})
    if not os.environ.get("ONEDNN_MAX_CPU_ISA"):
        assert tiled_type.startswith("int8_dynamic:im2col_1x1+") and loop_type.startswith("int8_dynamic:im2col+")
    np.testing.assert_array_equal(np.array(tiled, np.int32), np.array(loop, np.int32))
