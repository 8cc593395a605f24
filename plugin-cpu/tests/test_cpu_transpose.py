"""Transpose on CPU: the tiled path (the input's contiguous axis becomes the output's
second-innermost one, as attention's K -> K^T) and the row path agree with NumPy exactly."""

from __future__ import annotations

from typing import Any

import numpy as np
import opforge
import pytest
from opforge.graph import Model


@pytest.mark.parametrize(("shape", "perm", "dtype"), [
    ((1, 128, 4, 64), (0, 2, 3, 1), np.float32),   # BERT's K^T: tiled, 4 planes of 64x128
    ((2, 70, 3, 37), (0, 2, 3, 1), np.float32),    # edges: 37 and 70 are not multiples of 16
    ((100, 65), (1, 0), np.int64),                 # one plane, 8-byte elements
    ((3, 17, 9), (2, 0, 1), np.float32),           # too small for tiles: the row path
    ((1, 128, 4, 64), (0, 2, 1, 3), np.float32),   # head split: contiguous inner rows
    ((1, 48, 64, 64), (0, 2, 3, 1), np.float32),   # ConvNeXt/EdgeNeXt NCHW -> NHWC: tiled, inner 48
    ((1, 64, 64, 48), (0, 3, 1, 2), np.float32),   # and back: tiled, power-of-two inner (4096)
    ((2, 20, 9, 7), (0, 2, 3, 1), np.float32),     # inner 20, 63 rows: partial tiles both ways
])
@pytest.mark.parametrize("threads", [1, 2])
def test_transpose_matches_numpy(core: Any, shape: tuple[int, ...], perm: tuple[int, ...], dtype: Any,
                                 threads: int) -> None:
    x = opforge.op("Parameter", shape=list(shape), element_type="f32" if dtype == np.float32 else "i64", name="x")
    y = opforge.op("Transpose", x, opforge.op("Constant", value=np.array(perm, np.int64)), name="t")
    compiled = core.compile_model(Model([y], [x], name="transpose"), "CPU", {"INFERENCE_NUM_THREADS": threads})
    feed = (np.random.default_rng(0).standard_normal(shape) * 1000).astype(dtype)
    np.testing.assert_array_equal(compiled([feed])[0], np.transpose(feed, perm))
