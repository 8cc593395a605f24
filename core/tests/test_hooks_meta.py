"""Meta-tests that keep the hook surface honest (datasette's idea): every hookspec in
:mod:`opforge.hookspecs` must be documented in ``docs/plugins.md``, tested by a
``test_hook_<name>`` function, described by a docstring, and actually called by the plugin system.

Adding a hook therefore means four things: the spec, the call site, the docs section and the test;
each test below fails with a message saying which one is missing.
"""

from __future__ import annotations

import functools
import inspect
import os
import re
from pathlib import Path

import pytest
from opforge import hookspecs
from opforge.plugins import PluginSystem

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs" / "plugins.md"
SKIP_DIRS = {"build", "dist", "node_modules", "__pycache__", "site-packages"}

HOOKS = sorted(
    name for name, fn in vars(hookspecs).items()
    if name.startswith("opforge_") and callable(fn)
)


def call_signature(hook: str) -> str:
    """``opforge_register_ops(register)``: what the docs heading must show."""
    params = inspect.signature(getattr(hookspecs, hook)).parameters
    return f"{hook}({', '.join(params)})"


def register_signature(hook: str) -> str | None:
    """The ``register(...)`` call from the hookspec's ``:param register:`` line, whitespace folded."""
    doc = inspect.getdoc(getattr(hookspecs, hook)) or ""
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
    assert HOOKS, "no opforge_* functions found in opforge.hookspecs"
    for hook in HOOKS:
        assert hasattr(getattr(hookspecs, hook), "opforge_spec"), (
            f"opforge.hookspecs.{hook} is not decorated with @hookspec; decorate it, or rename it so it "
            "does not start with opforge_")


def is_query_hook(hook: str) -> bool:
    """``firstresult`` hooks are asked by whoever needs the answer (a device), not collected."""
    return bool(getattr(hookspecs, hook).opforge_spec.get("firstresult"))


def test_every_hookspec_is_called_by_the_plugin_system() -> None:
    adders = set(PluginSystem(autoload=False)._adders())
    missing = sorted(h for h in set(HOOKS) - adders if not is_query_hook(h))
    assert not missing, (
        f"hook(s) {', '.join(missing)} are specified but PluginSystem never calls them: add a register "
        "callback for each to PluginSystem._adders() in core/src/opforge/plugins/manager.py")
    callers = "\n".join(p.read_text() for p in REPO.glob("**/src/**/*.py") if ".venv" not in p.parts)
    uncalled = sorted(h for h in HOOKS if is_query_hook(h) and f"first_result({h!r}" not in callers
                      and f'"{h}"' not in callers)
    assert not uncalled, f"query hook(s) {', '.join(uncalled)} are specified but nothing asks them"
    extra = sorted(adders - set(HOOKS))
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
    fn = getattr(hookspecs, hook)
    doc = inspect.getdoc(fn) or ""
    assert doc.strip(), f"opforge.hookspecs.{hook} has no docstring: say what a plugin registers through it"
    params = inspect.signature(fn).parameters
    for param in params:
        assert f":param {param}:" in doc, (
            f"the docstring of opforge.hookspecs.{hook} does not describe argument '{param}': add a "
            f"':param {param}:' line")
    if "register" in params:
        assert register_signature(hook), (
            f"the ':param register:' line of opforge.hookspecs.{hook} must show the call a plugin makes, "
            "as ``register(thing: Type, *, priority: int = 0)``")


def test_the_meta_tests_would_notice_a_missing_test() -> None:
    """The scan really finds the hook tests, and nothing named like one is left over."""
    tests = hook_tests()
    assert "test_hook_opforge_register_ops" in tests
    assert any(f.endswith("test_plugins.py") for f in tests["test_hook_opforge_register_ops"])
    stale = sorted(n for n in tests if n.removeprefix("test_hook_") not in HOOKS)
    assert not stale, f"test(s) {', '.join(stale)} are named after hooks that do not exist; rename or remove them"
