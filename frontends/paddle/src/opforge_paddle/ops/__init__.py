"""The standard Paddle translators: one module per Paddle op (a few families of one-to-one
mappings share a table module). Each module exposes, at top level, ConversionExtension objects
(keyed by the ProgramDesc op type) and the :class:`~opforge_paddle.lowering.PirOp` signatures
that present the PIR op of the same meaning under that type. Both lists are derived by scanning
this package, so adding an op is adding a file.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache
from types import ModuleType

from opforge.frontend.extensions import FrontendExtension

from opforge_paddle.lowering import PirOp


def translator_modules() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def _modules() -> list[ModuleType]:
    return [importlib.import_module(f"{__name__}.{name}") for name in translator_modules()]


def _items(mod: ModuleType) -> list[object]:
    out: list[object] = []
    for v in vars(mod).values():
        out.extend(v if isinstance(v, (list, tuple)) else [v])
    return out


@lru_cache(maxsize=1)
def all_translators() -> tuple[FrontendExtension, ...]:
    found: dict[tuple[str, str, str], FrontendExtension] = {}
    for mod in _modules():
        for e in _items(mod):
            if isinstance(e, FrontendExtension) and e.key not in found:
                found[e.key] = e
    return tuple(found[k] for k in sorted(found))


@lru_cache(maxsize=1)
def pir_table() -> dict[str, PirOp]:
    """PIR op name (``pd_op`` dialect, without the in-place ``_``) -> its ProgramDesc form."""
    table: dict[str, PirOp] = {}
    for mod in _modules():
        for e in _items(mod):
            if isinstance(e, PirOp):
                table.setdefault(e.pir, e)
    return table
