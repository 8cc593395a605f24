"""ONNX's own backend node test cases (``onnx.backend.test.BackendTest``), the "core" subset
(see :mod:`opforge_onnx.testing.node_cases`), run through :mod:`opforge_onnx.backend`.

Devices: ``REFERENCE`` (conversion + the NumPy reference, always) and every opforge device that
is available here *and* has a reviewed list of known failures in ``known_failures/<DEVICE>.txt``
(a device without one is reported as skipped: its results have not been reviewed yet). Each
line of a list is ``<regex> | <reason>``; the regex must match a whole case name (without the
device suffix); the format and its checks are :mod:`opforge.testing.known_failures`, shared with
the op conformance suite (``tests/ops``). Listed cases are strict expected failures: one that starts passing fails the
run, so the list has to be updated when something is fixed; every pattern must match a core
case, so stale entries are noticed too.

Test names are ONNX's case names with the device appended: ``test_relu_reference``.
"""

from __future__ import annotations

import contextvars
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import onnx.backend.test
import pytest
from onnx.backend.test.loader import load_model_tests
from opforge.testing import known_failures
from opforge.testing.known_failures import strict_xfail
from opforge_onnx.backend import REFERENCE, OpforgeBackend
from opforge_onnx.testing.node_cases import core_names

LISTS = Path(__file__).parent / "known_failures"
#: meta devices run other devices' plugins; they are not a target of their own here
_META = {"HETERO", "AUTO", "MULTI", "BATCH"}
#: devices that compute in FP16 compare with fp16 tolerances (at least this rtol, atol)
FP16_TOLERANCE = {"VPU": (1e-2, 1e-3)}
_current_device: contextvars.ContextVar[str] = contextvars.ContextVar("node_case_device", default="")


def read_known_failures(device: str) -> list[tuple[re.Pattern[str], str]]:
    return known_failures.read_known_failures(LISTS / f"{device}.txt")


def _device_bases() -> list[str]:
    import opforge

    bases: list[str] = []
    for d in opforge.Core().available_devices:
        base = d.split(".")[0]
        if base not in bases and base not in _META:
            bases.append(base)
    return bases


DEVICES = [REFERENCE] + [d for d in _device_bases() if (LISTS / f"{d}.txt").exists()]
UNREVIEWED = [d for d in _device_bases() if not (LISTS / f"{d}.txt").exists()]
KNOWN = {d: read_known_failures(d) for d in DEVICES}
CORE = core_names((t.name, t.model) for t in load_model_tests(kind="node") if t.model is not None)


def _suffix(device: str) -> str:
    return device.lower().replace(".", "_")


class NodeSuite(onnx.backend.test.BackendTest):
    """BackendTest restricted to node cases, on opforge's device names."""

    def __init__(self, devices: list[str]) -> None:
        self._devices = devices
        super().__init__(OpforgeBackend, __name__)

    def _add_test(self, category: str, test_name: str, test_func: Callable[..., Any], report_item: Any,
                  devices: Any = (), **kwargs: Any) -> None:
        if category != "NodeModel":
            return  # real/simple/pytorch models need downloads and are not node cases
        def on_device(test_self: Any, device: str, **kw: Any) -> Any:
            token = _current_device.set(device)
            try:
                return test_func(test_self, device, **kw)
            finally:
                _current_device.reset(token)

        super()._add_test(category, test_name, on_device, report_item, devices=self._devices, **kwargs)

    @classmethod
    def assert_similar_outputs(cls, ref_outputs: Any, outputs: Any, rtol: float, atol: float,
                               model_dir: str | None = None) -> None:
        # an FP16 device (VPU) is held to fp16 tolerances, never to tighter ones than the case's
        tol = FP16_TOLERANCE.get(_current_device.get())
        if tol is not None:
            rtol, atol = max(rtol, tol[0]), max(atol, tol[1])
        super().assert_similar_outputs(ref_outputs, outputs, rtol=rtol, atol=atol, model_dir=model_dir)

    def mark_known_failures(self) -> None:
        for device in self._devices:
            end = f"_{_suffix(device)}"
            for name, item in self._test_items["NodeModel"].items():
                if not name.endswith(end):
                    continue
                case = name[: -len(end)]
                for pattern, reason in KNOWN[device]:
                    if pattern.fullmatch(case):
                        item.func = strict_xfail(item.func, reason)
                        break


backend_test = NodeSuite(DEVICES)
backend_test.include("^(" + "|".join(re.escape(n) for n in sorted(CORE)) + ")_("
                     + "|".join(_suffix(d) for d in DEVICES) + ")$")
backend_test.mark_known_failures()
globals().update(backend_test.test_cases)


@pytest.mark.parametrize("device", DEVICES)
def test_known_failure_patterns_match_core_cases(device: str) -> None:
    stale = known_failures.stale_patterns(KNOWN[device], CORE)
    assert not stale, f"known_failures/{device}.txt lists patterns that match no core case: {stale}"


@pytest.mark.parametrize("device", UNREVIEWED or ["none"])
def test_available_devices_have_reviewed_lists(device: str) -> None:
    if device == "none":
        return
    pytest.skip(f"device {device} is available but known_failures/{device}.txt does not exist, so its node "
                "cases are not run; run them once, review the failures and write the list")


def test_strict_xfail_fails_when_a_known_failure_passes() -> None:
    with pytest.raises(AssertionError, match="known failure now passes"):
        strict_xfail(lambda: None, "reason")()


def test_strict_xfail_reports_the_failure_as_expected() -> None:
    def broken() -> None:
        raise ValueError("boom")

    with pytest.raises(pytest.xfail.Exception, match=r"reason .*ValueError: boom"):
        strict_xfail(broken, "reason")()


def test_core_subset_is_the_harness_size() -> None:
    # run_node_tests.py counts 1520 core cases of 1884 with onnx 1.23.2
    import onnx

    if onnx.__version__ == "1.23.2":
        assert len(CORE) == 1520
