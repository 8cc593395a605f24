"""Translator packages: one module per framework op, the registry derived by scanning.

A frontend keeps its standard translators in a package where each public module exposes exactly
one ``ConversionExtension`` as ``EXTENSION`` and is named after the op it converts (modules
starting with ``_`` hold helpers). :func:`scan_translators` enforces that layout and builds the
registry, so adding a translator is adding a file and the one-op-per-file rule cannot erode.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable

from opforge.errors import TranslatorLayoutError
from opforge.frontend.extensions import FrontendExtension

#: ``matches(module_name, op_type)``: whether a module is correctly named for the op it converts
NameRule = Callable[[str, str], bool]


def public_modules(package_path: Iterable[str]) -> list[str]:
    """The translator modules of a package (``__path__``), sorted; helpers (``_x``) left out."""
    return sorted(m.name for m in pkgutil.iter_modules(list(package_path)) if not m.name.startswith("_"))


def module_translator(package: str, module_name: str, matches: NameRule) -> FrontendExtension:
    """The one translator of ``package.module_name``; raises if the module breaks the layout."""
    mod = importlib.import_module(f"{package}.{module_name}")
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
    if not matches(module_name, ext.op_type):
        raise TranslatorLayoutError(
            f"translator module '{mod.__name__}' converts '{ext.op_type}'; its module must be named "
            "after that op"
        )
    return ext


def scan_translators(package: str, package_path: Iterable[str], matches: NameRule) -> tuple[FrontendExtension, ...]:
    """Every translator of the package, sorted by key; two modules converting one key are an error."""
    found: dict[tuple[str, str, str], FrontendExtension] = {}
    for name in public_modules(package_path):
        ext = module_translator(package, name, matches)
        if ext.key in found:
            raise TranslatorLayoutError(f"two translator modules of {package} convert {ext.key}")
        found[ext.key] = ext
    return tuple(found[k] for k in sorted(found))
