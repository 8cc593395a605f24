"""``docs/op-coverage.md`` must be what ``scripts/coverage-table`` would write now: adding an op,
a case, a kernel or a known failure without regenerating it fails here. The table has a column
per device, so it can only be checked where the same devices are installed (else: skipped)."""

from __future__ import annotations

import warnings
from pathlib import Path

import opforge
import pytest
from opforge.testing.coverage import render, table_columns, table_devices

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "op-coverage.md"
LISTS = Path(__file__).parent / "known_failures"


def test_committed_coverage_table_is_current() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        core = opforge.Core()
    devices = table_devices(core)
    committed = DOC.read_text()
    here = [d.split(".")[0] for d in devices]
    if table_columns(committed) != here:
        pytest.skip(f"docs/op-coverage.md has device columns {table_columns(committed)}, this machine has {here}")
    assert render(core, devices, LISTS) == committed, "docs/op-coverage.md is stale: run scripts/coverage-table"
