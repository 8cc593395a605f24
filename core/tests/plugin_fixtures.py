"""Fake installed distributions, for testing how opforge finds, loads and reports plugins.

A :class:`FakeDists` writes what ``pip install`` would leave behind -- a
``<name>-<version>.dist-info`` folder with ``METADATA`` and ``entry_points.txt``, plus the
plugin's own modules -- into a temporary folder put on ``sys.path``. ``importlib.metadata``
then finds those entry points exactly as it finds real ones, so the code under test is the real
discovery path, not a mock.

Plugins are written as source text: real modules with ``@opforge.hookimpl`` functions. Every
module gets a name unique in the process, and everything imported from the temporary folder
is removed from ``sys.modules`` afterwards (see the ``fake_dists`` fixture in ``conftest.py``).
"""

from __future__ import annotations

import dataclasses
import importlib
import itertools
import re
import sys
import textwrap
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest
from opforge.plugins import PluginInfo, PluginSystem, PluginWarning

#: environment variables that change plugin loading; cleared for every plugin test
PLUGIN_ENV_VARS = (
    "OPFORGE_DISABLE_PLUGIN_AUTOLOAD",
    "OPFORGE_LOAD_PLUGINS",
    "OPFORGE_STRICT_PLUGINS",
    "OPFORGE_TRACE_PLUGINS",
)

#: put at the top of every fake plugin module
PRELUDE = """\
from __future__ import annotations

import numpy as np

import opforge
from opforge import Op, TensorSpec, hookimpl
"""

#: a device for the tests: runs the Python kernels registered for it, nothing else
#: (``kernel(attrs, inputs) -> outputs``, registered with ``version=None``)
MINI_DEVICE_SOURCE = """
from opforge.runtime import Availability, Device, Executable


class MiniExecutable(Executable):
    def __init__(self, model, kernels):
        self.order = model.get_ordered_ops()
        self.params = [p.id for p in model.parameters]
        self.results = [r.id for r in model.results]
        self.kernels = kernels

    def infer(self, inputs, state):
        values = {pid: [a] for pid, a in zip(self.params, inputs)}
        for n in self.order:
            if n.id in values:
                continue
            ins = [values[i.node.id][i.index] for i in n.inputs]
            if n.type_name == "Result":
                values[n.id] = ins
            else:
                values[n.id] = list(self.kernels[(n.type_name, None)](n.attrs, ins))
        return [values[r][0] for r in self.results]


class MiniDevice(Device):
    def full_name(self, device_name):
        return f"mini test device {device_name}"

    def query_model(self, model, ctx):
        kernels = ctx.kernels()
        return {n.name: self.name for n in model.get_ordered_ops()
                if n.type_name in ("Parameter", "Result") or (n.type_name, None) in kernels}

    def compile_model(self, model, ctx):
        return MiniExecutable(model, ctx.kernels())


class AbsentDevice(MiniDevice):
    def availability(self):
        return Availability(False, "no absent hardware here (test device)")
"""

_module_ids = itertools.count(1)


def load_quietly(**kwargs: Any) -> tuple[PluginSystem, list[str]]:
    """``PluginSystem(**kwargs)``, with the messages of the :class:`PluginWarning` s it issued
    (other warnings pass through)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ps = PluginSystem(**kwargs)
    for w in caught:
        if not issubclass(w.category, PluginWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return ps, [str(w.message) for w in caught if issubclass(w.category, PluginWarning)]


def op_class_source(class_name: str, type_name: str, version: str) -> str:
    """Source of a one-input op that copies its input (shape inference and a reference)."""
    return textwrap.dedent(f"""
        class {class_name}(Op):
            type_name = {type_name!r}
            version = {version!r}

            @classmethod
            def infer(cls, ctx):
                return [TensorSpec(ctx.input_type(0), ctx.input_shape(0))]

            @classmethod
            def evaluate(cls, attrs, inputs):
                return [inputs[0].copy()]
        """)


@dataclasses.dataclass(frozen=True)
class FakePlugin:
    """One fake installed plugin: an entry point ``name`` of distribution ``dist``."""

    name: str
    dist: str
    version: str
    module: str
    site: Path

    @property
    def info(self) -> PluginInfo:
        """The :class:`PluginInfo` opforge should record for it."""
        return PluginInfo(self.name, self.dist, self.version)


class FakeDists:
    """Writes fake installed distributions into folders on ``sys.path``."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = root
        self._mp = monkeypatch
        self._sites: dict[str, Path] = {}
        self.plugins: list[FakePlugin] = []

    @property
    def env(self) -> pytest.MonkeyPatch:
        """The test's monkeypatch, to set OPFORGE_* variables (undone after the test)."""
        return self._mp

    # --- writing -------------------------------------------------------------------------------
    def site(self, name: str = "site-packages") -> Path:
        """A folder on ``sys.path``; a site created later comes earlier in ``sys.path``."""
        if name not in self._sites:
            path = self.root / name
            path.mkdir(parents=True)
            self._mp.syspath_prepend(str(path))
            self._sites[name] = path
        return self._sites[name]

    def add(self, dist: str, *, version: str = "1.0", entry_points: Mapping[str, str],
            files: Mapping[str, str] | None = None, site: str = "site-packages") -> Path:
        """Install distribution ``dist``: its ``.dist-info`` plus ``files`` (relative path ->
        source text). Returns the ``.dist-info`` folder."""
        where = self.site(site)
        for rel, text in (files or {}).items():
            path = where / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        info_dir = where / f"{re.sub(r'[-_.]+', '_', dist)}-{version}.dist-info"
        info_dir.mkdir()
        (info_dir / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n", encoding="utf-8")
        lines = "".join(f"{name} = {value}\n" for name, value in entry_points.items())
        (info_dir / "entry_points.txt").write_text(f"[opforge]\n{lines}", encoding="utf-8")
        # importlib.metadata and the import system cache folder listings.
        importlib.invalidate_caches()
        return info_dir

    def plugin(self, dist: str, source: str = "", *, version: str = "1.0", name: str | None = None,
               attr: str | None = None, prelude: bool = True, site: str = "site-packages") -> FakePlugin:
        """Install ``dist`` with one plugin module made of ``source`` (dedented, after
        :data:`PRELUDE`) and one entry point ``name`` (default: ``dist`` with ``-`` -> ``_``)
        pointing at it (at ``module:attr`` when ``attr`` is given)."""
        ep_name = name or dist.replace("-", "_")
        module = f"opforge_fake_{re.sub(r'[^0-9a-zA-Z]+', '_', dist)}_{next(_module_ids)}"
        text = (PRELUDE if prelude else "") + textwrap.dedent(source)
        value = f"{module}:{attr}" if attr else module
        self.add(dist, version=version, entry_points={ep_name: value}, files={f"{module}.py": text},
                 site=site)
        plugin = FakePlugin(ep_name, dist, version, module, self._sites[site])
        self.plugins.append(plugin)
        return plugin

    def module(self, source: str, *, site: str = "site-packages") -> str:
        """A plain importable module (no distribution, no entry point); returns its name."""
        module = f"opforge_fake_module_{next(_module_ids)}"
        (self.site(site) / f"{module}.py").write_text(PRELUDE + textwrap.dedent(source), encoding="utf-8")
        importlib.invalidate_caches()
        return module

    # --- loading -------------------------------------------------------------------------------
    def load(self, only: Iterable[str] | None = None, **kwargs: Any) -> tuple[PluginSystem, list[str]]:
        """A fresh :class:`PluginSystem` loading only the fake plugins of this test (or
        ``only``), so that whatever else is installed cannot change the outcome. Returns it with
        the messages of the :class:`PluginWarning` s it issued."""
        allow = [p.name for p in self.plugins] if only is None else list(only)
        return load_quietly(allow=allow, **kwargs)

    # --- cleaning up ---------------------------------------------------------------------------
    def forget_modules(self, before: Iterable[str]) -> None:
        """Drop from ``sys.modules`` what was imported from the fake sites (or as a ``.py``
        extension file) since ``before``."""
        known = set(before)
        root = str(self.root)
        for name in list(sys.modules):
            if name in known:
                continue
            mod = sys.modules.get(name)
            file = str(getattr(mod, "__file__", "") or "")
            if file.startswith(root) or name.startswith(("opforge_fake_", "opforge_user_extension_")):
                del sys.modules[name]
        importlib.invalidate_caches()
