"""Fixtures of the GPU plugin tests. They run on whatever OpenCL device is there (PoCL's CPU
device in CI) and compare with opforge's NumPy reference (``opforge.reference``)."""

from __future__ import annotations

import sys
from pathlib import Path

import opforge
import pytest

# the tests import their helpers (gpu_util) by name; pytest's importlib mode adds no path
sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(scope="session")
def core() -> opforge.Core:
    c = opforge.Core()
    if "GPU" not in c.device_plugins():
        pytest.skip("the GPU plugin is not installed")
    if not any(d.startswith("GPU") for d in c.available_devices):
        pytest.skip(f"no OpenCL device: {c.unavailable_devices().get('GPU')}")
    return c
