"""MaxPool on CPU keeps NaN (ONNX / IEEE: a window holding a NaN gives NaN) although oneDNN's
max pooling skips it. The kernel screens the source for NaN in vectorised chunks and re-pools
only when one is found; these inputs are large enough (> 65536 values) to be screened in several
chunks, with NaN and +-inf in different chunks."""

from __future__ import annotations

from typing import Any

import numpy as np
import opforge
import pytest
from cpu_testing import param, rand
from opforge.graph import Model


def max_pool_model(shape: tuple[int, ...]) -> Model:
    x = param("x", list(shape))
    y = opforge.op("MaxPool", x, strides=[2, 2], dilations=[1, 1], pads_begin=[1, 1], pads_end=[1, 1],
                   kernel=[3, 3], rounding_type="floor", auto_pad="explicit", name="pool")
    return Model([y.output(0)], [x], name="max_pool")


def max_pool_ref(x: np.ndarray) -> np.ndarray:
    """3x3, stride 2, pad 1 max pooling where NaN wins (np.max propagates NaN)."""
    h, w = x.shape[2:]
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    oh, ow = (h - 1) // 2 + 1, (w - 1) // 2 + 1
    windows = np.stack([xp[:, :, i:i + 2 * oh:2, j:j + 2 * ow:2] for i in range(3) for j in range(3)])
    return windows.max(axis=0)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("poison", ["none", "nan", "inf_only"])
def test_max_pool_screens_for_nan(core: Any, threads: int, poison: str) -> None:
    shape = (1, 16, 112, 112)  # 200704 values: several chunks of the screen
    x = rand(shape, seed=7)
    if poison == "nan":
        x[0, 0, 0, 0] = np.nan       # first chunk, a corner window
        x[0, 15, 111, 111] = np.nan  # last chunk
        x[0, 8, 50, 51] = np.inf     # an inf next to them stays inf
        x[0, 3, 20, 20] = -np.inf
    elif poison == "inf_only":
        x[0, 5, 60, 60] = np.inf  # flags the screen (inf - inf) but holds no NaN
        x[0, 9, 7, 7] = -np.inf
    compiled = core.compile_model(max_pool_model(shape), "CPU",
                                  {"INFERENCE_NUM_THREADS": threads, "INFERENCE_PRECISION_HINT": "f32"})
    got = compiled([x]).to_tuple()[0]
    want = max_pool_ref(x)
    np.testing.assert_array_equal(got, want)  # exact: a max picks one of its inputs
    assert int(np.isnan(got).sum()) == (2 if poison == "nan" else 0)  # one window each
