"""Fixtures of the HETERO tests: a Core whose only devices are the fake FAST, SLOW and MID
(see ``hetero_fixtures.py``) plus HETERO itself, so no test depends on the CPU/GPU plugins."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

# The tests import with --import-mode=importlib, so this folder is not on sys.path: make the
# helpers importable as ``hetero_fixtures`` for the test modules.
if "hetero_fixtures" not in sys.modules:
    _spec = importlib.util.spec_from_file_location("hetero_fixtures", Path(__file__).with_name("hetero_fixtures.py"))
    assert _spec is not None and _spec.loader is not None
    _module = importlib.util.module_from_spec(_spec)
    sys.modules["hetero_fixtures"] = _module
    _spec.loader.exec_module(_module)

import opforge
import opforge_hetero.plugin
from hetero_fixtures import FakeDevicesPlugin, Log, fast_model, swish_model
from opforge import Model
from opforge.plugins import PluginInfo, PluginSystem


@pytest.fixture
def log() -> Log:
    return Log()


@pytest.fixture
def plugins(log: Log) -> PluginSystem:
    ps = PluginSystem(autoload=False)
    ps.register_module(FakeDevicesPlugin(log), PluginInfo("fake_devices", "opforge-test-fake-devices", "0.0"))
    ps.register_module(opforge_hetero.plugin, PluginInfo("hetero", "opforge-hetero", "0.1.0"))
    return ps


@pytest.fixture
def core(plugins: PluginSystem) -> opforge.Core:
    return opforge.Core(plugins)


@pytest.fixture(name="swish_model")
def _swish_model() -> Model:
    return swish_model()


@pytest.fixture(name="fast_model")
def _fast_model() -> Model:
    return fast_model()


@pytest.fixture
def x_value() -> np.ndarray:
    return np.array([[-1.0, 2.0, -3.0], [4.0, -5.0, 6.0]], np.float32)


