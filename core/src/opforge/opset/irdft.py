"""IRDFT-9: the inverse of RDFT: a one-sided complex spectrum back to a real signal (the last axis gets 2 (n - 1) samples unless signal_size says otherwise).
Inputs: data, axes and optional signal_size (see :mod:`opforge.opset._fft`)."""

from __future__ import annotations

from opforge.opset._fft import FourierTransform


class IRDFT(FourierTransform):
    type_name = "IRDFT"
    version = "opset9"
    complex_input = True
    complex_output = False
    inverse = True
