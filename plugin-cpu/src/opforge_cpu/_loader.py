"""Imports the compiled executor.

``_core`` links oneDNN as ``libopforge_dnnl.so.3``: the PyPI ``libdnnl.so.3`` copied into this
package with a private soname (see ``docs/kernel-library.md``), found through the module's
``$ORIGIN`` RPATH. It is loaded RTLD_LOCAL, as a dependency of ``_core`` only, so another
package's oneDNN (paddle, torch) neither binds to it nor is bound by it, in either import order.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
from pathlib import Path
from types import ModuleType

#: the private soname of the oneDNN copy shipped in this package
ONEDNN_SONAME = "libopforge_dnnl.so.3"


def _preload_onednn() -> None:
    # Only for layouts where $ORIGIN does not work (a relocated copy of the package): load the
    # copy next to this file by path, locally, so that _core's DT_NEEDED finds it by soname.
    # (An editable install keeps _core and the library in site-packages, apart from this file.)
    spec = importlib.util.find_spec("opforge_cpu._core")
    folders = [Path(__file__).parent] + ([Path(spec.origin).parent] if spec and spec.origin else [])
    for folder in folders:
        path = folder / ONEDNN_SONAME
        if path.exists():
            ctypes.CDLL(str(path), mode=ctypes.RTLD_LOCAL)
            return


def load_core() -> ModuleType:
    """The ``opforge_cpu._core`` extension module.

    Unless the user chose a wait policy, OpenMP threads spin briefly between parallel regions
    and then sleep (``GOMP_SPINCOUNT=20000``, a few tens of microseconds). Measured on the bench
    models at 2 threads, opforge/OpenVINO: sleeping at once (``OMP_WAIT_POLICY=PASSIVE``) pays a
    wake-up per op, 1.08 / 1.87 / 1.52 / 0.96 (resnet18 / mobilenet_v2 / bert_small / mlp);
    libgomp's default long spin, 1.01 / 0.97 / 1.04 / 0.89 on a quiet machine but 5-8x slower when
    the cores are shared (spinning threads steal the time of the ones with work); the short spin,
    1.02 / 0.88 / 0.96 / 0.66, keeps consecutive ops of one inference on awake threads and lets
    them sleep as soon as the inference is over. Takes effect only if libgomp is not loaded yet.
    """
    if "OMP_WAIT_POLICY" not in os.environ:
        os.environ.setdefault("GOMP_SPINCOUNT", "20000")
    try:
        from opforge_cpu import _core  # type: ignore[attr-defined]  # compiled at install
    except ImportError:
        _preload_onednn()
        from opforge_cpu import _core  # type: ignore[attr-defined]  # compiled at install
    return _core
