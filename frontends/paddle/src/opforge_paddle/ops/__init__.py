"""The standard Paddle translators: one module per Paddle op, named after its ProgramDesc op type
(``elementwise_add.py``, ``conv2d_transpose.py``; a trailing ``_`` where the name is a Python
keyword). Each module exposes its ConversionExtension as ``EXTENSION`` and, optionally, as
``PIR``, the :class:`~opforge_paddle.lowering.PirOp` signature(s) that present the PIR op(s) of
the same meaning under that type. Modules starting with ``_`` hold shared helpers.

Both registries are derived by scanning this package, so adding an op is adding a file; a module
that exposes anything but exactly one translator, one for another op than its name says, or a
PIR signature lowering to another op, is refused (:class:`TranslatorLayoutError`), so the
one-op-per-file rule cannot erode.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache
from types import ModuleType

from opforge.errors import OpforgeError
from opforge.frontend.extensions import FrontendExtension

from opforge_paddle.lowering import PirOp


class TranslatorLayoutError(OpforgeError):
    """A translator module breaks the one-op-per-module layout."""


def translator_modules() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def module_matches(module_name: str, op_type: str) -> bool:
    """Whether ``module_name`` is ``op_type`` (Paddle op types are snake case already), with a
    trailing ``_`` allowed for Python keywords."""
    return module_name == op_type or (module_name.endswith("_") and module_name[:-1] == op_type)


def _module(module_name: str) -> ModuleType:
    return importlib.import_module(f"{__name__}.{module_name}")


def module_translator(module_name: str) -> FrontendExtension:
    mod = _module(module_name)
    found = [(k, v) for k, v in vars(mod).items() if isinstance(v, FrontendExtension)]
    lists = [k for k, v in vars(mod).items()
             if isinstance(v, (list, tuple)) and any(isinstance(e, FrontendExtension) for e in v)]
    if lists or len(found) != 1 or found[0][0] != "EXTENSION":
        names = [k for k, _ in found] + lists
        raise TranslatorLayoutError(
            f"translator module '{mod.__name__}' must expose exactly one translator as EXTENSION; "
            f"it exposes {', '.join(names) or 'none'}"
        )
    ext = found[0][1]
    if not module_matches(module_name, ext.op_type):
        raise TranslatorLayoutError(
            f"translator module '{mod.__name__}' converts '{ext.op_type}'; its module must be named after that op"
        )
    return ext


def module_pir_ops(module_name: str) -> list[PirOp]:
    """The PIR signatures of a translator module (``PIR``: one or a list), all lowering to its op."""
    mod = _module(module_name)
    ext = module_translator(module_name)
    stray = [k for k, v in vars(mod).items() if k != "PIR" and (
        isinstance(v, PirOp) or (isinstance(v, (list, tuple)) and any(isinstance(e, PirOp) for e in v)))]
    if stray:
        raise TranslatorLayoutError(
            f"translator module '{mod.__name__}' declares PIR signatures outside PIR: {', '.join(stray)}")
    pir = getattr(mod, "PIR", [])
    found = list(pir) if isinstance(pir, (list, tuple)) else [pir]
    for p in found:
        if not isinstance(p, PirOp):
            raise TranslatorLayoutError(f"translator module '{mod.__name__}': PIR holds {p!r}, not a PirOp")
        if p.legacy != ext.op_type:
            raise TranslatorLayoutError(
                f"translator module '{mod.__name__}' converts '{ext.op_type}' but its PIR signature "
                f"pd_op.{p.pir} lowers to '{p.legacy}'; declare it in the module of '{p.legacy}'"
            )
    return found


@lru_cache(maxsize=1)
def all_translators() -> tuple[FrontendExtension, ...]:
    found: dict[tuple[str, str, str], FrontendExtension] = {}
    for name in translator_modules():
        ext = module_translator(name)
        if ext.key in found:
            raise TranslatorLayoutError(f"two translator modules convert {ext.key}")
        found[ext.key] = ext
    return tuple(found[k] for k in sorted(found))


@lru_cache(maxsize=1)
def pir_table() -> dict[str, PirOp]:
    """PIR op name (``pd_op`` dialect, without the in-place ``_``) -> its ProgramDesc form."""
    table: dict[str, PirOp] = {}
    for name in translator_modules():
        for p in module_pir_ops(name):
            if p.pir in table:
                raise TranslatorLayoutError(
                    f"PIR op pd_op.{p.pir} is declared twice (lowering to '{table[p.pir].legacy}' and '{p.legacy}')")
            table[p.pir] = p
    return table
