"""Print the oneDNN include folder and library path (CMake list) from the installed wheels.

The onednn wheels put their files in the wheel's ``data`` scheme (``<prefix>/include``,
``<prefix>/lib``); their RECORD lists them relative to site-packages, which ``locate_file``
resolves wherever pip installed them (venv, ``--user``, an isolated build overlay).

``find_onednn.py [omp|tbb]``: the OpenMP build of oneDNN (``onednn-cpu-gomp``, the default) or
the TBB one (``onednn-cpu-tbb``); for ``tbb`` also the TBB headers (``tbb-devel``) and library
(``tbb``), printed as two more list items.
"""

from __future__ import annotations

import importlib.metadata as md
import sys
from pathlib import Path

#: the wheels of each threading runtime's oneDNN 3.2 (headers, library)
ONEDNN_DISTS = {
    "omp": ("onednn-devel-cpu-gomp", "onednn-cpu-gomp"),
    "tbb": ("onednn-devel-cpu-tbb", "onednn-cpu-tbb"),
}


def _files(dist_names: tuple[str, ...]) -> list[Path]:
    out: list[Path] = []
    for dist_name in dist_names:
        try:
            dist = md.distribution(dist_name)
        except md.PackageNotFoundError:
            continue
        out.extend(Path(str(dist.locate_file(f))).resolve() for f in dist.files or [])
    return out


def main(argv: list[str]) -> int:
    threading = argv[1] if len(argv) > 1 else "omp"
    if threading not in ONEDNN_DISTS:
        print(f"unknown threading runtime {threading!r} (omp or tbb)", end="")
        return 2
    include = lib = None
    for p in _files(ONEDNN_DISTS[threading]):
        if p.name == "dnnl.hpp" and p.parent.name == "dnnl" and include is None:
            include = p.parent.parent.parent
        if p.name in ("libdnnl.so.3", "libdnnl.so") and lib is None:
            lib = p
    if include is None or lib is None:
        print(f"include={include} library={lib} (wheels {' and '.join(ONEDNN_DISTS[threading])})", end="")
        return 1
    items = [include, lib]
    if threading == "tbb":
        tbb_include = tbb_lib = None
        for p in _files(("tbb-devel", "tbb")):
            if p.name == "tbb.h" and p.parent.name == "oneapi":  # <include>/oneapi/tbb.h
                tbb_include = p.parent.parent
            if p.name == "libtbb.so.12":
                tbb_lib = p
        if tbb_include is None or tbb_lib is None:
            print(f"tbb include={tbb_include} library={tbb_lib} (wheels tbb-devel and tbb 2021)", end="")
            return 1
        items += [tbb_include, tbb_lib]
    print(";".join(str(i) for i in items), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
