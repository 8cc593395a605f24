"""Meta-tests that keep the hook surface honest (datasette's idea): every hookspec in
:mod:`opforge.hookspecs` must be documented in ``docs/plugins.md``, tested by a
``test_hook_<name>`` function, described by a docstring, and actually called by the plugin system.

Hooks a plugin defines for other plugins (``OPFORGE_HOOKSPECS``: HETERO's partition-policy hook)
are held to the same rules when that plugin is installed: documented in the same guide, tested by
a ``test_hook_<name>`` in any tests folder (the plugin's own), and asked by the plugin's code.

Adding a hook therefore means four things: the spec, the call site, the docs section and the test;
each test below fails with a message saying which one is missing.
"""

from __future__ import annotations

import functools
import inspect
import os
import re
from pathlib import Path
from typing import Any

import pytest
from opforge import hookspecs
from opforge.plugins import PluginSystem, default_plugins
from opforge.plugins.manager import plugin_hookspecs

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs" / "plugins.md"
SKIP_DIRS = {"build", "dist", "node_modules", "__pycache__", "site-packages"}



def _spec_modules() -> list[Any]:
    """The core's hookspecs, then those of every loaded plugin that declares its own."""
    found: list[Any] = [hookspecs]
    for rec in default_plugins().records.values():
        specs = plugin_hookspecs(rec.module) if rec.module is not None else None
        if specs is not None and all(specs is not f for f in found):
            found.append(specs)
    return found


def _specs_of(module: Any) -> dict[str, Any]:
    return {name: fn for name, fn in vars(module).items() if name.startswith("opforge_") and callable(fn)}


SPEC_MODULES = _spec_modules()
CORE_HOOKS = sorted(_specs_of(hookspecs))
#: hook name -> its spec function, the core's and the plugins'
SPECS: dict[str, Any] = {name: fn for mod in SPEC_MODULES for name, fn in _specs_of(mod).items()}
HOOKS = sorted(SPECS)


def call_signature(hook: str) -> str:
    """``opforge_register_ops(register)``: what the docs heading must show."""
    params = inspect.signature(SPECS[hook]).parameters
    return f"{hook}({', '.join(params)})"


def register_signature(hook: str) -> str | None:
    """The ``register(...)`` call from the hookspec's ``:param register:`` line, whitespace folded."""
    doc = inspect.getdoc(SPECS[hook]) or ""
    m = re.search(r":param register:\s*``(.+?)``", doc, re.S)
    return " ".join(m.group(1).split()) if m else None


@functools.lru_cache(maxsize=1)
def docs_sections() -> dict[str, str]:
    """``docs/plugins.md`` split by ``##`` heading: {heading line: text below it}."""
    if not DOCS.exists():
        return {}
    sections: dict[str, str] = {}
    heading = ""
    for line in DOCS.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            heading = line
            sections[heading] = ""
        else:
            sections[heading] = sections.get(heading, "") + line + "\n"
    return sections


@functools.lru_cache(maxsize=1)
def hook_tests() -> dict[str, list[str]]:
    """Every ``def test_hook_<name>`` in a ``tests`` folder of the repository: {name: [files]}."""
    found: dict[str, list[str]] = {}
    pattern = re.compile(r"^\s*(?:async\s+)?def\s+(test_hook_\w+)\s*\(", re.M)
    for root, dirs, files in os.walk(REPO):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in SKIP_DIRS and not d.endswith(".egg-info")]
        rel = Path(root).relative_to(REPO)
        if "tests" not in rel.parts:
            continue
        for f in files:
            if f.endswith(".py"):
                path = Path(root) / f
                for name in pattern.findall(path.read_text(encoding="utf-8", errors="replace")):
                    found.setdefault(name, []).append(str(path.relative_to(REPO)))
    return found


def test_the_hookspecs_are_found() -> None:
    assert CORE_HOOKS, "no opforge_* functions found in opforge.hookspecs"
    for hook in HOOKS:
        assert hasattr(SPECS[hook], "opforge_spec"), (
            f"{SPECS[hook].__module__}.{hook} is not decorated with @hookspec; decorate it, or rename it so "
            "it does not start with opforge_")
    clashes = sorted(set(CORE_HOOKS) & {n for mod in SPEC_MODULES[1:] for n in _specs_of(mod)})
    assert not clashes, f"plugin hookspecs redefine core hooks: {', '.join(clashes)}"


def is_query_hook(hook: str) -> bool:
    """``firstresult`` hooks are asked by whoever needs the answer (a device), not collected."""
    return bool(SPECS[hook].opforge_spec.get("firstresult"))


def test_every_hookspec_is_called_by_the_plugin_system() -> None:
    adders = set(PluginSystem(autoload=False)._adders())
    missing = sorted(h for h in set(CORE_HOOKS) - adders if not is_query_hook(h))
    assert not missing, (
        f"hook(s) {', '.join(missing)} are specified but PluginSystem never calls them: add a register "
        "callback for each to PluginSystem._adders() in core/src/opforge/plugins/manager.py")
    callers = "\n".join(p.read_text() for p in REPO.glob("**/src/**/*.py") if ".venv" not in p.parts)
    # the core asks its query hooks; a plugin asks (or collects) the hooks it defines itself
    uncalled = sorted(h for h in HOOKS if (is_query_hook(h) or h not in CORE_HOOKS)
                      and f"first_result({h!r}" not in callers and f'"{h}"' not in callers)
    assert not uncalled, f"query hook(s) {', '.join(uncalled)} are specified but nothing asks them"
    extra = sorted(adders - set(CORE_HOOKS))
    assert not extra, f"PluginSystem calls hook(s) {', '.join(extra)} that opforge.hookspecs does not specify"


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_is_documented(hook: str) -> None:
    sig = call_signature(hook)
    assert DOCS.exists(), f"{DOCS.relative_to(REPO)} is missing: write the plugin guide with one section per hook"
    headings = [h for h in docs_sections() if hook in h]
    assert headings, f"docs/plugins.md has no heading for hook {hook}: add a section '## {sig}'"
    matching = [h for h in headings if sig in h]
    assert matching, (
        f"docs/plugins.md has a heading for {hook} ({headings[0]!r}) but not with its exact signature: "
        f"write it as '## {sig}'")
    body = docs_sections()[matching[0]]
    reg = register_signature(hook)
    if reg is not None:
        assert reg in " ".join(body.split()), (
            f"the docs section '## {sig}' does not show the register call of the hookspec: add `{reg}`")
    assert "@hookimpl" in body or "@opforge.hookimpl" in body, (
        f"the docs section '## {sig}' has no example: add a short complete plugin using @opforge.hookimpl")


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_has_a_test(hook: str) -> None:
    name = f"test_hook_{hook}"
    assert name in hook_tests(), (
        f"no test named {name} in any tests/ folder of the repository: add `def {name}(fake_dists)` to "
        "core/tests/test_plugins.py, exercising the hook end to end through a fake distribution")


@pytest.mark.parametrize("hook", HOOKS)
def test_hookspec_has_a_docstring_with_params(hook: str) -> None:
    fn = SPECS[hook]
    doc = inspect.getdoc(fn) or ""
    assert doc.strip(), f"{fn.__module__}.{hook} has no docstring: say what a plugin registers through it"
    params = inspect.signature(fn).parameters
    for param in params:
        assert f":param {param}:" in doc, (
            f"the docstring of {fn.__module__}.{hook} does not describe argument '{param}': add a "
            f"':param {param}:' line")
    if "register" in params:
        assert register_signature(hook), (
            f"the ':param register:' line of {fn.__module__}.{hook} must show the call a plugin makes, "
            "as ``register(thing: Type, *, priority: int = 0)``")


def test_the_meta_tests_would_notice_a_missing_test() -> None:
    """The scan really finds the hook tests, and nothing named like one is left over."""
    tests = hook_tests()
    assert "test_hook_opforge_register_ops" in tests
    assert any(f.endswith("test_plugins.py") for f in tests["test_hook_opforge_register_ops"])
    # a plugin's own hooks count as declared even where that plugin is not installed
    spec = re.compile(r"^def (opforge_\w+)\(", re.M)
    declared = set(HOOKS) | {n for p in REPO.glob("*/src/*/hookspecs.py") for n in spec.findall(p.read_text())}
    stale = sorted(n for n in tests if n.removeprefix("test_hook_") not in declared)
    assert not stale, f"test(s) {', '.join(stale)} are named after hooks that do not exist; rename or remove them"
