"""The standard Paddle translators: one module per Paddle op, named after its ProgramDesc op type
(``elementwise_add.py``, ``conv2d_transpose.py``; a trailing ``_`` where the name is a Python
keyword). Each module exposes its ConversionExtension as ``EXTENSION`` and, optionally, as
``PIR``, the :class:`~opforge_paddle.pir_signatures.PirOp` signature(s) that present the PIR op(s) of
the same meaning under that type. Modules starting with ``_`` hold shared helpers.

Both registries are derived by scanning this package, so adding an op is adding a file; a module
that exposes anything but exactly one translator, one for another op than its name says, or a
PIR signature lowering to another op, is refused (:class:`TranslatorLayoutError`), so the
one-op-per-file rule cannot erode.
"""

from __future__ import annotations

import importlib
from functools import lru_cache
from types import ModuleType

from opforge.errors import TranslatorLayoutError
from opforge.frontend import translators
from opforge.frontend.extensions import FrontendExtension

from opforge_paddle.pir_signatures import PirOp

__all__ = ["TranslatorLayoutError", "all_translators", "module_matches", "module_pir_ops", "module_translator",
           "pir_table", "translator_modules"]


def translator_modules() -> list[str]:
    return translators.public_modules(__path__)


def module_matches(module_name: str, op_type: str) -> bool:
    """Whether ``module_name`` is ``op_type`` (Paddle op types are snake case already), with a
    trailing ``_`` allowed for Python keywords."""
    return module_name == op_type or (module_name.endswith("_") and module_name[:-1] == op_type)


def _module(module_name: str) -> ModuleType:
    return importlib.import_module(f"{__name__}.{module_name}")


def module_translator(module_name: str) -> FrontendExtension:
    return translators.module_translator(__name__, module_name, module_matches)


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
    return translators.scan_translators(__name__, __path__, module_matches)


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
