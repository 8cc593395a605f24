"""RDFT-9: the discrete Fourier transform of a real tensor, one-sided (the last axis keeps n // 2 + 1 frequencies).
Inputs: data, axes and optional signal_size (see :mod:`opforge.opset._fft`)."""

from __future__ import annotations

from opforge.opset._fft import FourierTransform


class RDFT(FourierTransform):
    type_name = "RDFT"
    version = "opset9"
    complex_input = False
    complex_output = True
    inverse = False
