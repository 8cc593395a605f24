"""What several targets share: one Core (plugins loaded once), frontends by name, seed files."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import opforge

CORPUS = Path(__file__).resolve().parents[2] / "corpus"


@functools.lru_cache(maxsize=1)
def core() -> opforge.Core:
    return opforge.Core()


def frontend(name: str) -> Any:
    fe = core().plugins.frontends.lookup(name)
    if fe is None:
        raise RuntimeError(f"frontend {name!r} is not installed")
    return fe


def committed_seeds(target: str) -> list[bytes]:
    """Seed files committed under corpus/<target>/ (made by ../make_seeds.py)."""
    folder = CORPUS / target
    return [p.read_bytes() for p in sorted(folder.glob("*")) if p.is_file()] if folder.is_dir() else []
