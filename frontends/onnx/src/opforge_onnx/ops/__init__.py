"""The standard ONNX translators: one module per ONNX op type, named after it in snake case
(``q_linear_mat_mul.py`` for QLinearMatMul; a trailing ``_`` where the name is a Python keyword:
``if_.py``, ``and_.py``), each exposing its ConversionExtension as ``EXTENSION``. Modules
starting with ``_`` hold shared helpers.

The registry is derived by scanning this package, so adding a translator is adding a file; a
module that exposes anything but exactly one translator, or one for another op than its name
says, is refused (:class:`TranslatorLayoutError`), so the one-op-per-file rule cannot erode.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache

from opforge.errors import OpforgeError
from opforge.frontend.extensions import FrontendExtension


class TranslatorLayoutError(OpforgeError):
    """A translator module breaks the one-op-per-module layout."""


def translator_modules() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def module_matches(module_name: str, op_type: str) -> bool:
    """Whether ``module_name`` is the snake-case spelling of ``op_type`` (case and underscores
    aside: ``is_nan`` / ``IsNaN``, ``not_`` / ``Not``)."""
    return module_name.replace("_", "") == op_type.lower()


def module_translator(module_name: str) -> FrontendExtension:
    mod = importlib.import_module(f"{__name__}.{module_name}")
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
            f"translator module '{mod.__name__}' converts '{ext.op_type}'; its module must be named "
            f"after that op (snake case)"
        )
    return ext


@lru_cache(maxsize=1)
def all_translators() -> tuple[FrontendExtension, ...]:
    found: dict[tuple[str, str, str], FrontendExtension] = {}
    for name in translator_modules():
        ext = module_translator(name)
        if ext.key in found:
            raise TranslatorLayoutError(f"two translator modules convert {ext.key}")
        found[ext.key] = ext
    return tuple(found[k] for k in sorted(found))
