"""f32 channels-last MaxPool of a 3-wide window at column stride 1 walked by columns
(kernels/max_pool.cpp row_max3_s1_nhwc_avx512, exec type ``max_nhwc_cols:avx512``): Inception's
3x3/1 branch pool and its relatives (no padding, 2 or 5 window rows, asymmetric pads, dilated
rows, rows 1-2 pixels wide, 16 to 100 channels, batch 2). onnx.helper graphs from
test_cpu_maxpool_rows (3x3 Conv -> MaxPool -> 3x3 Conv); results within 1e-5 of ONNX Runtime,
bit-identical at 1 and 2 threads, and equal to the row walk (OPFORGE_CPU_POOL_COLS=0) with NaN
and +-inf in the input."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")
from test_cpu_maxpool_rows import ROWS, avx512, child, pool_model, run  # noqa: E402  (after onnxruntime is known)

COLS = "max_nhwc_cols:avx512"

POOLS: list[dict[str, Any]] = [
    dict(kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1]),                # Inception's branch
    dict(kernel_shape=[3, 3], strides=[1, 1]),                                   # no padding
    dict(kernel_shape=[2, 3], strides=[2, 1], pads=[0, 1, 1, 2]),                # asymmetric, row stride 2
    dict(kernel_shape=[5, 3], strides=[1, 1], pads=[2, 1, 2, 1]),
    dict(kernel_shape=[3, 3], strides=[1, 1], pads=[2, 1, 2, 1], dilations=[2, 1]),
    dict(kernel_shape=[3, 3], strides=[1, 1], pads=[1, 2, 1, 2], ceil_mode=1),  # windows past both ends
]
IDS = ["3x3p1", "3x3p0", "2x3s21asym", "5x3", "3x3d21", "3x3p12"]
SIZES = [(13, 17), (6, 2), (5, 1)]
# every pool over every size where the output has a column (3x3 without padding needs 3)
CASES = [pytest.param(p, s, id=f"{i}-{s[0]}x{s[1]}") for p, i in zip(POOLS, IDS) for s in SIZES
         if s[1] + p.get("pads", [0] * 4)[1] + p.get("pads", [0] * 4)[3] >= 3]


@avx512
@pytest.mark.parametrize("c", [16, 40, 100])
@pytest.mark.parametrize(("pool", "size"), CASES)
def test_maxpool_cols_match_onnxruntime(tmp_path: Path, c: int, pool: dict[str, Any], size: tuple[int, int]) -> None:
    path = pool_model(tmp_path / "m.onnx", c, size, seed=c, **pool)
    x = np.random.default_rng(c).standard_normal((2, 8, *size)).astype(np.float32)
    one, _ = run(path, x, 1, "f32")
    two, kinds = run(path, x, 2, "f32")
    assert kinds == [COLS], kinds
    np.testing.assert_array_equal(two, one)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert one.shape == want.shape, (one.shape, want.shape)
    np.testing.assert_allclose(one, want, rtol=0, atol=1e-5 * float(np.abs(want).max()))


@avx512
@pytest.mark.parametrize("pool", POOLS[:2] + POOLS[3:4], ids=[IDS[0], IDS[1], IDS[3]])
def test_maxpool_cols_equal_row_walk_with_nan(tmp_path: Path, pool: dict[str, Any]) -> None:
    # OPFORGE_CPU_POOL_COLS=0 (read once a process) goes back to the row walk; the same maxima,
    # NaN where a window held one (no Relu before the pool: oneDNN's fused ReLU drops NaN)
    on, kinds_on = child(tmp_path, {}, pool, "f32")
    off, kinds_off = child(tmp_path, {"OPFORGE_CPU_POOL_COLS": "0"}, pool, "f32")
    assert kinds_on == f"[{COLS!r}]\n" and kinds_off == f"[{ROWS['f32']!r}]\n", (kinds_on, kinds_off)
    assert np.isnan(on).any()
    np.testing.assert_array_equal(on, off)


@avx512
@pytest.mark.parametrize("pool", [dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
                                  dict(kernel_shape=[3, 3], strides=[1, 1], pads=[2, 2, 2, 2], dilations=[2, 2]),
                                  dict(kernel_shape=[2, 2], strides=[1, 1])], ids=["3x3s2", "3x3d2", "2x2s1"])
def test_other_windows_keep_the_row_walk(tmp_path: Path, pool: dict[str, Any]) -> None:
    # column stride 2 (slower by columns), dilated columns and other widths: the row walk
    path = pool_model(tmp_path / "m.onnx", 24, (9, 11), seed=3, **pool)
    x = np.random.default_rng(3).standard_normal((1, 8, 9, 11)).astype(np.float32)
    got, kinds = run(path, x, 2, "f32")
    assert kinds == [ROWS["f32"]], kinds
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * float(np.abs(want).max()))


@avx512
@pytest.mark.parametrize("c", [8, 40, 100])
@pytest.mark.parametrize("pool", POOLS[:2] + POOLS[3:4], ids=[IDS[0], IDS[1], IDS[3]])
def test_maxpool_cols_one_compare_same_bytes(tmp_path: Path, pool: dict[str, Any], c: int) -> None:
    # The column walk's maximum with one mask compare (nan_max_v) against the two-compare form
    # (OPFORGE_CPU_POOL_INTERLEAVE=0, read once a process): the same bytes, NaN and inf included
    on, kinds_on = child(tmp_path, {}, pool, "f32", c)
    off, kinds_off = child(tmp_path, {"OPFORGE_CPU_POOL_INTERLEAVE": "0"}, pool, "f32", c)
    assert kinds_on == kinds_off == f"[{COLS!r}]\n", (kinds_on, kinds_off)
    assert np.isnan(on).any()
    np.testing.assert_array_equal(on, off)
