"""IDFT-7: the inverse discrete Fourier transform of a complex tensor.
Inputs: data, axes and optional signal_size (see :mod:`opforge.opset._fft`)."""

from __future__ import annotations

from opforge.opset._fft import FourierTransform


class IDFT(FourierTransform):
    type_name = "IDFT"
    version = "opset7"
    complex_input = True
    complex_output = True
    inverse = True
