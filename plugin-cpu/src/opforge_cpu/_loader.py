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


#: The run-time libraries of a TBB build (OPFORGE_CPU_THREADING=tbb) that come from other wheels,
#: by wheel, in load order. (The TBB oneDNN also lists Intel's libimf.so and libintlc.so.5; the
#: build replaced them with libopforge_intel_mem.so, shipped beside libopforge_dnnl.so.3 and found
#: through its $ORIGIN RUNPATH: CMakeLists.txt.)
TBB_RUNTIME_LIBS = (("tbb", "libtbb.so.12"),)


def _preload_tbb_runtime() -> list[str]:
    # Found through the RUNPATH $ORIGIN/../../.. (<prefix>/lib of a venv or --user install) where
    # pip puts these wheels' libraries; elsewhere, load them by path from their wheels' RECORD
    # so that the DT_NEEDED sonames find them loaded. Returns the ones it could not find.
    import importlib.metadata as md

    missing = []
    for dist_name, lib in TBB_RUNTIME_LIBS:
        try:
            files = md.distribution(dist_name).files or []
        except md.PackageNotFoundError:
            missing.append(f"{lib} (wheel {dist_name})")
            continue
        paths = [Path(str(f.locate())) for f in files if Path(str(f)).name == lib]
        if not paths:
            missing.append(f"{lib} (wheel {dist_name})")
            continue
        ctypes.CDLL(str(paths[0]), mode=ctypes.RTLD_GLOBAL)
    return missing


#: GOMP_SPINCOUNT by CPU vendor (``vendor_id`` of /proc/cpuinfo), each measured on that vendor's
#: 2-vCPU VMs; any other vendor gets Intel's
SPIN_COUNT_BY_VENDOR = {"GenuineIntel": 300, "AuthenticAMD": 1000}


def default_spin_count(cpuinfo: str | None = None) -> int:
    """The ``GOMP_SPINCOUNT`` used when the user set no OpenMP wait policy.

    300 spins was tuned on Intel Xeons (see :func:`load_core`). On the AMD EPYC (Zen 5) VM of
    stop 18 (a ``pause`` is ~23 ns) 300 spins lost the second thread altogether: at 2 threads
    every benchmark model ran at its 1-thread speed or worse (opforge / OpenVINO f32 resnet18
    1.80, mobilenet_v2 2.45, bert_small 1.70, mlp 1.70). Most of that was the wake-up of a
    worker on a halted vCPU, which the SCHED_IDLE spinners of ``csrc/core/keep_warm.hpp`` now
    remove on every host (mobilenet_v2 f32 300 spins: 2.2x OpenVINO without them, 0.90-1.12x
    with). Models of many small steps (bert_small bf16, mlp) still lose the worker between
    steps at 300 spins there (1.5-2.0x on a quiet host); 3000 (~70 us, stop 18's choice) and
    1000 (~23 us, stop 19) bring them level (0.84-1.10x). Longer spins lose under load: libgomp
    never yields while it spins, so a thread at a barrier holds the vCPU that the thread with
    work (preempted by another process) needs; on a loaded host 10000 spins ran 2.6-13x slower
    than OpenVINO. Stop 19 (docs/kernel-library.md, "AMD: 1000 spins"): on the quiet VM 1000
    and 3000 read alike at 2 threads (1000 / 3000 f32 bert_small 0.97, mobilenet_v2 0.97 and
    1.04, timm_deit_tiny 0.92 and 1.01, resnet18 1.00; bf16 mobilenet_v2 1.04, 1.06), while
    with one more busy process on the 2 vCPUs 1000 was 1.2-2x faster (bert_small f32 0.58,
    0.60; timm_deit_tiny 0.82, 0.61; bert_small bf16 0.52, 0.51 during a build).
    """
    text = cpuinfo
    if text is None:
        try:
            text = Path("/proc/cpuinfo").read_text(encoding="ascii", errors="replace")
        except OSError:
            text = ""
    for line in text.splitlines():
        if line.startswith("vendor_id"):
            vendor = line.partition(":")[2].strip()
            return SPIN_COUNT_BY_VENDOR.get(vendor, SPIN_COUNT_BY_VENDOR["GenuineIntel"])
    return SPIN_COUNT_BY_VENDOR["GenuineIntel"]


def load_core() -> ModuleType:
    """The ``opforge_cpu._core`` extension module.

    Unless the user chose a wait policy, OpenMP threads spin briefly between parallel regions
    and then sleep (``GOMP_SPINCOUNT=300``). A spin is one ``pause``: ~140 cycles (~40 ns) on the
    16-core Xeons this was tuned on, so 300 spins (~12 us there) keep the threads awake across the
    gaps between the ops of one inference and give the core back soon after it. (On the 2-vCPU
    Sapphire Rapids VM of stop 13 a ``pause`` is ~15 ns, so 300 spins last ~4.5 us; longer spins
    were measured there and not adopted: docs/kernel-library.md, "int8 at 2 threads".) oneDNN
    splits each primitive statically, so at 2 threads a preempted thread holds up every op, and
    threads that spin long (libgomp's default 300000, or the 20000 used before, ~1 ms) take the
    core from the threads with work. Sleeping at once (``OMP_WAIT_POLICY=PASSIVE``) pays a
    wake-up per op instead.
    Chains of primitives at 2 threads on a quiet 16-core Xeon (median ms; mlp / bert_small-like /
    100 small ops; docs/kernel-library.md): quiet, spin 20000 1.57 / 3.45 / 2.18, 1000 1.73 /
    3.82 / 2.11, 300 1.66 / 3.80 / 2.36, passive 1.65 / 4.30 / 3.77; with a busy loop on one of
    the two cores 5.72 / 30.8 / 81.9, 2.79 / 6.81 / 6.73, 3.51 / 6.01 / 4.37, 3.83 / 5.81 / 3.41
    (1 thread 3.33 / 6.80 / 2.97). Takes effect only if libgomp is not loaded yet.

    AMD hosts spin longer (:func:`default_spin_count`).
    """
    if "OMP_WAIT_POLICY" not in os.environ:
        os.environ.setdefault("GOMP_SPINCOUNT", str(default_spin_count()))
    try:
        from opforge_cpu import _core  # type: ignore[attr-defined]  # compiled at install
    except ImportError as first:
        missing = _preload_tbb_runtime() if "libtbb" in str(first) else []
        try:
            # loading oneDNN by path fails with an OSError, not an ImportError, when its own
            # dependencies (libtbb) are missing: a --target install leaves the tbb wheel's
            # library out of reach (stop 24, on the device machine); say what to install
            _preload_onednn()
            from opforge_cpu import _core  # type: ignore[attr-defined]  # compiled at install
        except (ImportError, OSError) as err:
            if missing:
                raise ImportError(
                    f"{err}: this opforge-cpu was built on TBB (OPFORGE_CPU_THREADING=tbb) and needs "
                    f"the wheel tbb (pip install 'tbb==2021.13.1'); missing: {', '.join(missing)}"
                ) from err
            if isinstance(err, OSError):
                raise ImportError(f"opforge-cpu's compiled executor cannot be loaded: {err}") from err
            raise
    return _core
