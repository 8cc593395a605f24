"""Cross-package suites: they run against every device installed and available here (the
brief's "conformance run against every device"), so each test is parametrised by device."""

from __future__ import annotations

import warnings

import opforge
import pytest


def _devices() -> list[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        core = opforge.Core()
        devs = list(core.available_devices)
        if "HETERO" in core.meta_devices() and len(devs) >= 2:
            # GPU first so HETERO really splits the sample model (its custom op has no GPU kernel)
            names = sorted(devs, key=lambda d: (not d.startswith("GPU"), d))
            devs.append("HETERO:" + ",".join(names))
    return devs


DEVICES = _devices()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "device" in metafunc.fixturenames:
        metafunc.parametrize("device", DEVICES or [pytest.param("none", marks=pytest.mark.skip(
            reason="no device plugin installed"))])
