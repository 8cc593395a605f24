"""Fixtures of the VPU plugin tests: they run on whatever OpenCL device is there (PoCL's CPU device
in CI, which has no cl_khr_fp16, so the half shim is what runs) and compare with opforge's NumPy
reference."""

from __future__ import annotations

import sys
from pathlib import Path

import opforge
import pytest

# the tests import their helpers by name; pytest's importlib mode adds no path
sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
def core() -> opforge.Core:
    """A fresh Core per test: CONFIG_FILE must not leak between tests."""
    c = opforge.Core()
    if "VPU" not in c.device_plugins():
        pytest.skip("the VPU plugin is not installed")
    if not any(d.startswith("VPU") for d in c.available_devices):
        pytest.skip(f"no OpenCL device: {c.unavailable_devices().get('VPU')}")
    return c
