"""benchmarks/bench_ab.py, the A/B runner of a CPU-plugin change: what it does without building
or timing anything (its command line, the revision lookup, reusing a built package, the output
comparison). The build itself (git worktree + pip wheel, minutes) and the timing are exercised
by running the tool (kernel-library.md, 'A/B of a C++ change')."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from cpu_testing import load_module

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_ab.py"


def _load() -> ModuleType:
    return load_module(SCRIPT)


def test_help_describes_the_tool() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "--before REV" in done.stdout and "--before-pkg DIR" in done.stdout and "git worktree" in done.stdout


def test_revisions_resolve_or_refuse() -> None:
    ab = _load()
    head = subprocess.run(["git", "-C", str(SCRIPT.parent), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    assert ab.resolve("HEAD") == head
    with pytest.raises(SystemExit, match="does not know revision 'no-such-rev-"):
        ab.resolve("no-such-rev-5b1e")


def test_a_built_package_is_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A commit built before is not built again (no git worktree, no pip)."""
    ab = _load()
    pkg = tmp_path / "abc123" / "pkg"
    (pkg / "opforge_cpu").mkdir(parents=True)
    (pkg / "opforge_cpu" / "__init__.py").write_text("")

    def no_run(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"built again: {args}")

    monkeypatch.setattr(ab.subprocess, "run", no_run)
    assert ab.build_before("abc123", tmp_path) == pkg


def test_relative_difference() -> None:
    ab = _load()
    a = np.array([1.0, -4.0, 2.0], np.float32)
    assert ab.relative_difference(a, a) == 0.0
    assert ab.relative_difference(a, a + np.float32(0.5)) == pytest.approx(0.125)
    assert ab.relative_difference(a, a[:2]) == float("inf")
