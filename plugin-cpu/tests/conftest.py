"""Fixtures of the CPU device tests. The helpers live in cpu_testing.py, importable from every
test module (pytest runs with --import-mode=importlib, so this folder is put on sys.path here)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import opforge
from cpu_testing import make_plugins


@pytest.fixture
def core() -> opforge.Core:
    return opforge.Core(make_plugins())
