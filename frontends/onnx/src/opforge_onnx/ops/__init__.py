"""The standard ONNX translators: one module per ONNX op type, named after it in snake case
(``q_linear_mat_mul.py`` for QLinearMatMul; a trailing ``_`` where the name is a Python keyword:
``if_.py``, ``and_.py``), each exposing its ConversionExtension as ``EXTENSION``. Modules
starting with ``_`` hold shared helpers.

The registry is derived by scanning this package, so adding a translator is adding a file; a
module that exposes anything but exactly one translator, or one for another op than its name
says, is refused (:class:`TranslatorLayoutError`), so the one-op-per-file rule cannot erode.
"""

from __future__ import annotations

from functools import lru_cache

from opforge.errors import TranslatorLayoutError
from opforge.frontend import translators
from opforge.frontend.extensions import FrontendExtension

__all__ = ["TranslatorLayoutError", "all_translators", "module_matches", "module_translator", "translator_modules"]


def translator_modules() -> list[str]:
    return translators.public_modules(__path__)


def module_matches(module_name: str, op_type: str) -> bool:
    """Whether ``module_name`` is the snake-case spelling of ``op_type`` (case and underscores
    aside: ``is_nan`` / ``IsNaN``, ``not_`` / ``Not``)."""
    return module_name.replace("_", "") == op_type.lower()


def module_translator(module_name: str) -> FrontendExtension:
    return translators.module_translator(__name__, module_name, module_matches)


@lru_cache(maxsize=1)
def all_translators() -> tuple[FrontendExtension, ...]:
    return translators.scan_translators(__name__, __path__, module_matches)
