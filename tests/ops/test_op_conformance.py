"""The op-level conformance suite: every case of :mod:`opforge.testing.cases` on the reference
evaluator and on every available device (``tests/conftest.py``: each device installed here, and
HETERO over them), compared with the op's NumPy reference.

A device whose ``query_model`` does not claim a case's op skips it (``docs/op-coverage.md``
shows those gaps). Real failures are listed, with a reason, in ``known_failures/<DEVICE>.txt``
(``GPU.0`` reads ``GPU.txt``, ``HETERO:...`` reads ``HETERO.txt``; format in
:mod:`opforge.testing.known_failures`): strict expected failures, so a fix is noticed. A device
without a list must pass every case it claims: a new device gets the whole suite by being installed.

Test ids: ``test_op_on_device[<case id>-<device>]``; the lists match the case id.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from pathlib import Path

import opforge
import pytest
from opforge.testing.cases import OpCase, all_cases, uncovered_ops, unknown_ops
from opforge.testing.conformance import REFERENCE, CaseUnsupported, run_case
from opforge.testing.known_failures import (
    Entry,
    known_reason,
    read_known_failures,
    stale_patterns,
    strict_xfail,
)

LISTS = Path(__file__).parent / "known_failures"
#: HETERO warns when a node falls back to a lower-priority device: expected for ops a device lacks
pytestmark = pytest.mark.filterwarnings("ignore:HETERO.*do not run on")
CASES = all_cases()
IDS = [c.id for c in CASES]


def list_name(device: str) -> str:
    """``GPU.0`` -> ``GPU``, ``HETERO:GPU.0,CPU`` -> ``HETERO``."""
    return device.split(":")[0].split(".")[0]


@functools.cache
def known(device: str) -> list[Entry]:
    path = LISTS / f"{list_name(device)}.txt"
    return read_known_failures(path) if path.exists() else []


@pytest.fixture(scope="module")
def core() -> opforge.Core:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return opforge.Core()


def _run(case_id: str, device: str, run: Callable[[], object]) -> None:
    reason = known_reason(known(device), case_id)
    if reason is None:
        run()
    else:
        strict_xfail(run, reason)()


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_op_on_reference(case: OpCase) -> None:
    _run(case.id, REFERENCE, lambda: run_case(case, REFERENCE))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_op_on_device(case: OpCase, device: str, core: opforge.Core) -> None:
    def run() -> None:
        try:
            run_case(case, device, core)
        except CaseUnsupported as err:
            pytest.skip(str(err))

    _run(case.id, device, run)


def test_every_standard_op_has_a_case() -> None:
    missing = uncovered_ops(CASES)
    assert not missing, (f"standard ops without a case in opforge.testing.cases: {missing}; add one to the "
                         "family module the op belongs to")


def test_every_case_names_a_standard_op() -> None:
    unknown = unknown_ops(CASES)
    assert not unknown, f"cases of ops (or op versions) the standard opset does not have: {unknown}"


@pytest.mark.parametrize("path", sorted(LISTS.glob("*.txt")), ids=lambda p: p.name)
def test_known_failure_lists_match_cases(path: Path) -> None:
    stale = stale_patterns(read_known_failures(path), IDS)
    assert not stale, f"{path.name} lists patterns that match no case: {stale}"
