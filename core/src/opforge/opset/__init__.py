"""The standard opset: one operation per module, named after the op in snake case
(``convolution.py``, ``group_convolution.py``). Versions of one op live in separate modules
(``top_k_1.py``, ``top_k_11.py``). Modules starting with ``_`` hold shared helpers;
:mod:`opforge.opset.geometry` is the public face of the window geometry devices reuse (it holds
no op, so the scan finds nothing in it).

The list of operations is derived by scanning this package: adding an op is adding a file.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache

from opforge.op import Op


def op_modules() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def ops_in_module(module_name: str) -> list[type[Op]]:
    mod = importlib.import_module(f"{__name__}.{module_name}")
    return [
        v for v in vars(mod).values()
        if isinstance(v, type) and issubclass(v, Op) and v.__module__ == mod.__name__
        and "type_name" in v.__dict__
    ]


@lru_cache(maxsize=1)
def all_ops() -> tuple[type[Op], ...]:
    """Every standard op class, sorted by (type name, version)."""
    found: list[type[Op]] = []
    for name in op_modules():
        found.extend(ops_in_module(name))
    return tuple(sorted(found, key=lambda o: o.key()))
