"""DFT, IDFT, RDFT, IRDFT and DeformableConvolution (``kernels/spectral.cl``) against the NumPy
reference (``opforge.reference.evaluate_model``)."""

from __future__ import annotations

import numpy as np
import opforge
import pytest
from gpu_util import check, const, param, rand
from opforge.graph import Model


def _supported(core: opforge.Core, m: Model) -> None:
    assert set(core.query_model(m, "GPU")) == {n.name for n in m.get_ordered_ops()}


FFT_CASES = [
    # (op, input shape, axes, signal_size or None)
    ("DFT", [4, 6, 2], [1], None),
    ("DFT", [2, 5, 7, 2], [1, 2], None),
    ("DFT", [3, 8, 2], [-1], [5]),
    ("DFT", [3, 8, 2], [0, 1], [4, 12]),
    ("DFT", [2, 3, 4, 2], [2, 0], [-1, 3]),
    ("IDFT", [4, 6, 2], [1], None),
    ("IDFT", [2, 5, 7, 2], [0, 1, 2], None),
    ("IDFT", [3, 8, 2], [1], [10]),
    ("RDFT", [4, 6], [1], None),
    ("RDFT", [3, 7], [1], None),
    ("RDFT", [2, 5, 6], [1, 2], None),
    ("RDFT", [2, 5, 6], [2, 1], [4, 9]),
    ("RDFT", [3, 8], [-1], [5]),
    ("RDFT", [16], [0], None),
    ("IRDFT", [4, 4, 2], [1], None),
    ("IRDFT", [3, 5, 2], [1], [9]),
    ("IRDFT", [3, 5, 2], [1], [8]),
    ("IRDFT", [2, 5, 4, 2], [0, 2], None),
    ("IRDFT", [2, 5, 4, 2], [1, 2], [3, 5]),
    ("IRDFT", [6, 3, 2], [0, 1], [-1, 3]),
]


@pytest.mark.parametrize(("op", "shape", "axes", "sizes"), FFT_CASES)
def test_fourier_transforms(core: opforge.Core, op: str, shape: list, axes: list, sizes: list | None) -> None:
    x = param(shape)
    ins = [x, const(axes, np.int64)] + ([const(sizes, np.int64)] if sizes is not None else [])
    m = Model([opforge.op(op, *ins)], [x])
    _supported(core, m)
    check(core, m, [rand(shape)], rtol=1e-4, atol=1e-4)


def test_fourier_axes_and_sizes_fed_at_run_time(core: opforge.Core) -> None:
    x, ax, sz = param([3, 6, 2]), param([1], "i64", "axes"), param([1], "i64", "size")
    m = Model([opforge.op("DFT", x, ax, sz)], [x, ax, sz])
    _supported(core, m)
    compiled = core.compile_model(m, "GPU")
    data = rand([3, 6, 2])
    for axes, size in (([1], [6]), ([0], [4]), ([-1], [9])):
        got = compiled([data, np.asarray(axes, np.int64), np.asarray(size, np.int64)])[0]
        want = np.fft.fft(data[..., 0] + 1j * data[..., 1], n=size[0], axis=axes[0])
        np.testing.assert_allclose(got, np.stack([want.real, want.imag], -1), rtol=1e-4, atol=1e-4)


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


DEFORM_CASES = [
    # (data shape, filters shape, kwargs, with mask)
    ([1, 2, 5, 5], [3, 2, 3, 3], {}, False),
    ([2, 4, 6, 7], [4, 4, 3, 2], {"deformable_group": 2}, True),
    ([1, 4, 7, 6], [6, 2, 3, 3], {"group": 2, "strides": [2, 1], "pads_begin": [1, 1], "pads_end": [1, 0]}, True),
    ([1, 4, 8, 8], [4, 1, 2, 2], {"group": 4, "deformable_group": 4, "dilations": [2, 2]}, False),
    ([2, 2, 5, 6], [2, 2, 3, 3], {"auto_pad": "same_upper"}, True),
]


@pytest.mark.parametrize("pad", [False, True])
@pytest.mark.parametrize(("dshape", "fshape", "kw", "with_mask"), DEFORM_CASES)
def test_deformable_convolution(core: opforge.Core, dshape: list, fshape: list, kw: dict, with_mask: bool,
                                pad: bool) -> None:
    attrs = {"strides": [1, 1], "pads_begin": [0, 0], "pads_end": [0, 0], "dilations": [1, 1], **kw,
             "bilinear_interpolation_pad": pad}
    n, (kh, kwd) = dshape[0], fshape[2:]
    dg = attrs.get("deformable_group", 1)
    x = param(dshape)
    # infer the output size from a model with placeholder offsets
    probe = opforge.op("DeformableConvolution", x, param([n, 2 * dg * kh * kwd, 1, 1], name="o"),
                       const(rand(fshape, seed=2)), **attrs)
    oh, ow = probe.output(0).partial_shape.dims[2:]
    off = param([n, 2 * dg * kh * kwd, oh, ow], name="off")
    ins = [x, off, const(rand(fshape, seed=2))]
    params = [x, off]
    if with_mask:
        mk = param([n, dg * kh * kwd, oh, ow], name="mask")
        ins.append(mk)
        params.append(mk)
    m = Model([opforge.op("DeformableConvolution", *ins, **attrs)], params)
    _supported(core, m)
    data = [rand(dshape), rand([n, 2 * dg * kh * kwd, oh, ow], seed=1, low=-2.5, high=2.5)]
    data[1].reshape(-1)[::7] = np.round(data[1].reshape(-1)[::7])  # integral offsets: exact pixels
    if with_mask:
        data.append(rand([n, dg * kh * kwd, oh, ow], seed=3, low=0, high=1))
    check(core, m, data, rtol=1e-4, atol=1e-4)


def test_deformable_convolution_f64_not_supported(core: opforge.Core) -> None:
    x, off = param([1, 1, 4, 4], "f64"), param([1, 8, 3, 3], "f64", "off")
    y = opforge.op("DeformableConvolution", x, off, const(rand([1, 1, 2, 2]), np.float64), strides=[1, 1],
                   pads_begin=[0, 0], pads_end=[0, 0], dilations=[1, 1])
    m = Model([y], [x, off])
    assert y.name not in core.query_model(m, "GPU")
