"""Element types and precision the GPU device handles its own way: Fourier transforms under the f16
inference-precision hint, and f64 spectra and deformable convolutions, which the GPU does not
claim (``query_model`` leaves them to another device)."""

from __future__ import annotations

from typing import Any

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


def _gpu_info() -> Any:
    """GPU.0's description (the process's cached enumeration, as the device uses)."""
    from opforge_gpu.opencl import devices

    return devices()[0]


def test_builtin_kernels_ask_for_correctly_rounded_division(core: opforge.Core, monkeypatch: pytest.MonkeyPatch) -> None:
    from opforge_gpu.opencl import DeviceContext

    seen: list[str] = []
    original = DeviceContext.program

    def recording(self: DeviceContext, source: str, options: str, *args: Any, **kw: Any) -> Any:
        seen.append(options)
        return original(self, source, options, *args, **kw)

    monkeypatch.setattr(DeviceContext, "program", recording)
    a, b = param([64], name="a"), param([64], name="b")
    core.compile_model(Model([opforge.op("Divide", a, b)], [a, b]), "GPU")
    assert seen, "compiling a Divide built no program"
    flag = "-cl-fp32-correctly-rounded-divide-sqrt"
    if _gpu_info().correctly_rounded_divide:
        assert all(flag in o for o in seen), seen
    else:
        assert not any(flag in o for o in seen), seen


@pytest.mark.parametrize("op", ["Divide", "Sqrt"])
def test_division_and_sqrt_match_numpy_bit_for_bit(core: opforge.Core, op: str) -> None:
    # round(x / scale) in QuantizeLinear flips at ties when `/` is a few ulp off (an H100's OpenCL
    # did, before the build asked for IEEE division), so the quotient itself must be exact
    if not _gpu_info().correctly_rounded_divide:
        pytest.skip("this OpenCL device cannot divide correctly rounded")
    rng = np.random.default_rng(3)
    n = 1 << 16
    a = (rng.standard_normal(n) * np.exp2(rng.integers(-20, 20, n))).astype(np.float32)
    b = (rng.standard_normal(n) * np.exp2(rng.integers(-20, 20, n))).astype(np.float32)
    if op == "Divide":
        x, y = param([n], name="a"), param([n], name="b")
        m, feeds, want = Model([opforge.op("Divide", x, y)], [x, y]), [a, b], a / b
    else:
        x = param([n], name="a")
        m, feeds, want = Model([opforge.op("Sqrt", x)], [x]), [np.abs(a)], np.sqrt(np.abs(a))
    got = core.compile_model(m, "GPU")(feeds)[0]
    differ = np.flatnonzero(got.view(np.uint32) != want.view(np.uint32))
    assert differ.size == 0, f"{differ.size} of {n} results differ from NumPy, first at {differ[:5]}"
