"""Fixtures shared by the core tests: a clean plugin environment and fake installed plugins."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from opforge.plugins import reset_default_plugins

# The tests import with --import-mode=importlib, so this folder is not on sys.path: make the
# helper modules (``plugin_fixtures``, ``graph_building``) importable for the test modules.
for _name in ("plugin_fixtures", "graph_building"):
    if _name not in sys.modules:
        _spec = importlib.util.spec_from_file_location(_name, Path(__file__).with_name(f"{_name}.py"))
        assert _spec is not None and _spec.loader is not None
        _module = importlib.util.module_from_spec(_spec)
        sys.modules[_name] = _module
        _spec.loader.exec_module(_module)

from plugin_fixtures import PLUGIN_ENV_VARS, FakeDists  # noqa: E402 - loaded just above


@pytest.fixture
def plugin_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """No OPFORGE_* plugin variables from the caller's shell, and a process-wide plugin system
    rebuilt from scratch before and after the test. Yields ``monkeypatch`` to set them."""
    for var in PLUGIN_ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    reset_default_plugins()
    yield monkeypatch
    reset_default_plugins()


@pytest.fixture
def fake_dists(tmp_path: Path, plugin_env: pytest.MonkeyPatch) -> Iterator[FakeDists]:
    """Install fake distributions for this test only (see :mod:`plugin_fixtures`)."""
    before = set(sys.modules)
    dists = FakeDists(tmp_path / "sites", plugin_env)
    yield dists
    dists.forget_modules(before)
    reset_default_plugins()
