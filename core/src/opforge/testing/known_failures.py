"""Reviewed lists of known failures, one file per device (``known_failures/<DEVICE>.txt``), shared
by the op conformance suite (``tests/ops``) and the ONNX node suite (``frontends/onnx/tests``).

Each line of a list is ``<regex> | <reason>``; the regex must match a whole case name and cannot
contain ``|`` (the first one starts the reason: write one line per alternative); ``#`` starts a
comment. Listed cases are *strict* expected failures (:func:`strict_xfail`): one that
starts passing fails the run, so the list is updated when something is fixed, and every pattern
must match some case (:func:`stale_patterns`), so entries for cases that no longer exist are
noticed too. A reason that starts with ``flaky:`` marks a failure that does not happen on every
run (a kernel reading uninitialised memory): such a case may pass, and fails as expected otherwise.
"""

from __future__ import annotations

import functools
import re
import unittest
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

Entry = tuple[re.Pattern[str], str]
#: the start of the reason of a known failure that may pass on some runs
FLAKY = "flaky:"


def read_known_failures(path: Path) -> list[Entry]:
    """The ``(pattern, reason)`` entries of one list; a malformed line is an error naming it."""
    entries = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        pattern, sep, reason = text.partition("|")
        if not sep or not reason.strip():
            raise ValueError(f"{path}:{n}: expected '<regex> | <reason>', got {text!r}")
        try:
            entries.append((re.compile(pattern.strip()), reason.strip()))
        except re.error as err:
            raise ValueError(f"{path}:{n}: bad regex {pattern.strip()!r}: {err}") from None
    return entries


def known_reason(entries: Iterable[Entry], name: str) -> str | None:
    """The reason of the first entry whose pattern matches all of ``name``, else None."""
    return next((reason for pattern, reason in entries if pattern.fullmatch(name)), None)


def stale_patterns(entries: Iterable[Entry], names: Iterable[str]) -> list[str]:
    """Patterns that match none of ``names``."""
    all_names = list(names)
    return [p.pattern for p, _ in entries if not any(p.fullmatch(n) for n in all_names)]


def strict_xfail(func: Callable[..., Any], reason: str) -> Callable[..., Any]:
    """Expect ``func`` to fail for ``reason``; passing is an error, so a fix is noticed (except
    for a ``flaky:`` reason)."""
    import pytest

    @functools.wraps(func)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        try:
            func(*args, **kwargs)
        except (unittest.SkipTest, pytest.skip.Exception):
            raise
        except Exception as err:  # noqa: BLE001 - any failure is the expected one
            first = str(err).splitlines()[0][:200] if str(err) else ""
            pytest.xfail(f"{reason} [{type(err).__name__}: {first}]")
        if reason.startswith(FLAKY):
            return None
        raise AssertionError(f"known failure now passes; remove it from known_failures/ ({reason})")
    return wrapped
