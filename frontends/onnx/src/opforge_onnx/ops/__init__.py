"""The standard ONNX translators: one module per ONNX op (a few families of plain one-to-one
mappings share a table module). Each module exposes ConversionExtension objects at top level;
the list is derived by scanning this package, so adding a translator is adding a file.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache

from opforge.frontend.extensions import FrontendExtension


def translator_modules() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


@lru_cache(maxsize=1)
def all_translators() -> tuple[FrontendExtension, ...]:
    found: dict[tuple[str, str, str], FrontendExtension] = {}
    for name in translator_modules():
        mod = importlib.import_module(f"{__name__}.{name}")
        for v in vars(mod).values():
            exts = v if isinstance(v, (list, tuple)) else [v]
            for e in exts:
                if isinstance(e, FrontendExtension) and e.key not in found:
                    found[e.key] = e
    return tuple(found[k] for k in sorted(found))
