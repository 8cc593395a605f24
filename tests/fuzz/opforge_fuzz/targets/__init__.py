"""The fuzz targets, one module each, found by scanning this package (no hand-kept list).

A target module defines ``NAME``, ``fuzz_one(data: bytes) -> None``, ``seeds() -> list[bytes]``
and ``mutate(data: bytes, rng: random.Random) -> bytes``.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def names() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def load(name: str) -> ModuleType:
    if name not in names() and name != "_selftest":
        raise SystemExit(f"unknown fuzz target {name!r}; targets: {', '.join(names())}")
    return importlib.import_module(f"{__name__}.{name}")
