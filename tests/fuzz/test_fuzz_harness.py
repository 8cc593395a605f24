"""The harness reports each kind of finding: a target misbehaving on purpose (targets/_selftest.py)
is run the way the smoke test runs the real ones (a child process, the seeded engine)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from opforge_fuzz import driver


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> dict[str, object]:
    monkeypatch.setenv("OPFORGE_FUZZ_SELFTEST", mode)
    args = argparse.Namespace(engine="random", runs=3, seconds=None, seed=0, timeout=0.2, memory_mb=2048,
                              max_len=1024, workdir=str(tmp_path), stop_on_finding=False)
    return driver.run_target("_selftest", args)


@pytest.mark.parametrize(("mode", "kind", "exception"), [
    ("bare", "bare-exception", "KeyError"),
    ("empty", "empty-message", "ModelFormatError"),
    ("hang", "hang", "InputTimeout"),
])
def test_findings_are_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, kind: str,
                               exception: str) -> None:
    summary = _run(tmp_path, monkeypatch, mode)
    findings = summary["findings"]
    assert isinstance(findings, list) and len(findings) == 1, summary
    f = findings[0]
    assert (f["kind"], f["exception"]) == (kind, exception)
    assert f["count"] == 4  # the seed and three mutations, one unique finding
    assert Path(f["input"]).read_bytes() == mode.encode()
    assert summary["execs"] == 4 and summary["returncode"] == 0


def test_crash_is_reported_with_its_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    summary = _run(tmp_path, monkeypatch, "crash")
    (f,) = summary["findings"]  # type: ignore[misc]
    assert f["kind"] == "crash" and summary["returncode"] != 0
    assert Path(f["input"]).read_bytes() == b"crash"


def test_expected_errors_are_not_findings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    summary = _run(tmp_path, monkeypatch, "ok")
    assert summary["findings"] == [] and summary["execs"] == 4
