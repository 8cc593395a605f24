"""Element types and precision the GPU device handles its own way: Fourier transforms under the f16
inference-precision hint, and f64 spectra and deformable convolutions, which the GPU does not
claim (``query_model`` leaves them to another device)."""

from __future__ import annotations

import numpy as np
import opforge
import pytest
from gpu_util import check, const, param, rand
from opforge.graph import Model


@pytest.mark.parametrize(("op", "shape", "axes"), [("RDFT", [4, 8], [1]), ("IRDFT", [3, 4, 5, 2], [0, 2]),
                                                ("DFT", [3, 4, 2], [0, 1])])
def test_fourier_f16(core: opforge.Core, op: str, shape: list, axes: list) -> None:
    x = param(shape)
    m = Model([opforge.op(op, x, const(axes, np.int64))], [x])
    check(core, m, [rand(shape)], rtol=1e-2, atol=3e-2, config={"INFERENCE_PRECISION_HINT": "f16"})


def test_fourier_f64_not_supported(core: opforge.Core) -> None:
    x = param([4, 6, 2], "f64")
    y = opforge.op("DFT", x, const([0], np.int64))
    m = Model([y], [x])
    assert y.name not in core.query_model(m, "GPU")


def test_deformable_convolution_f64_not_supported(core: opforge.Core) -> None:
    x, off = param([1, 1, 4, 4], "f64"), param([1, 8, 3, 3], "f64", "off")
    y = opforge.op("DeformableConvolution", x, off, const(rand([1, 1, 2, 2]), np.float64), strides=[1, 1],
                   pads_begin=[0, 0], pads_end=[0, 0], dilations=[1, 1])
    m = Model([y], [x, off])
    assert y.name not in core.query_model(m, "GPU")
