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
    and then sleep (``GOMP_SPINCOUNT=1000``). A spin is one ``pause``: ~40 ns on Sapphire Rapids
    (~140 cycles), a few ns on older cores, so 1000 spins keep the threads awake across the
    microsecond gaps between the ops of one inference and let them sleep within tens of
    microseconds after it. Sleeping at once (``OMP_WAIT_POLICY=PASSIVE``) pays a wake-up per op:
    opforge/OpenVINO 1.08 / 1.87 / 1.52 / 0.96 at 2 threads (resnet18 / mobilenet_v2 / bert_small
    / mlp). Spinning long (libgomp's default 300000, or the 20000 used before) steals the time of
    the threads that have work when the cores are shared: oneDNN splits each primitive
    statically, so a preempted thread holds up the whole op. Measured with chains of the
    bert_small/mlp primitives at 2 threads on a quiet 16-core Xeon (docs/kernel-library.md):
    quiet, 1000 / 20000 / passive / default = 2.87 / 2.90 / 3.19 / 3.58 ms (bert), with a busy
    loop on one of the two cores 6.5 / 24.9 / 5.7 / 224 ms (1 thread: 5.4 ms). Takes effect only
    if libgomp is not loaded yet.
    """
    if "OMP_WAIT_POLICY" not in os.environ:
        os.environ.setdefault("GOMP_SPINCOUNT", "1000")
    try:
        from opforge_cpu import _core  # type: ignore[attr-defined]  # compiled at install
    except ImportError:
        _preload_onednn()
        from opforge_cpu import _core  # type: ignore[attr-defined]  # compiled at install
    return _core
