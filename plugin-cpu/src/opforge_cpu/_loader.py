"""Imports the compiled executor, making sure ``libdnnl.so.3`` can be found first.

The module's RPATH covers the usual layouts (a venv, a system or ``--user`` install put oneDNN's
library in ``<prefix>/lib``). For anything else, preload the library at the path the
``onednn-cpu-gomp`` distribution's RECORD gives, so the dynamic loader finds it by soname.
"""

from __future__ import annotations

import ctypes
import importlib.metadata as md
from pathlib import Path
from types import ModuleType


def _preload_onednn() -> None:
    try:
        dist = md.distribution("onednn-cpu-gomp")
    except md.PackageNotFoundError:
        return
    for f in dist.files or []:
        if f.name == "libdnnl.so.3":
            path = Path(str(dist.locate_file(f)))
            if path.exists():
                ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
            return


def load_core() -> ModuleType:
    """The ``opforge_cpu._core`` extension module."""
    try:
        from opforge_cpu import _core
    except ImportError:
        _preload_onednn()
        from opforge_cpu import _core
    return _core
