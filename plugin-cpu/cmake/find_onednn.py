"""Print the oneDNN include folder and library path (CMake list) from the installed wheels.

The onednn wheels put their files in the wheel's ``data`` scheme (``<prefix>/include``,
``<prefix>/lib``); their RECORD lists them relative to site-packages, which ``locate_file``
resolves wherever pip installed them (venv, ``--user``, an isolated build overlay).
"""

from __future__ import annotations

import importlib.metadata as md
import sys
from pathlib import Path


def main() -> int:
    include = lib = None
    for dist_name in ("onednn-devel-cpu-gomp", "onednn-cpu-gomp"):
        try:
            dist = md.distribution(dist_name)
        except md.PackageNotFoundError:
            continue
        for f in dist.files or []:
            p = Path(str(dist.locate_file(f))).resolve()
            if p.name == "dnnl.hpp" and p.parent.name == "dnnl" and include is None:
                include = p.parent.parent.parent
            if p.name in ("libdnnl.so.3", "libdnnl.so") and lib is None:
                lib = p
    if include is None or lib is None:
        print(f"include={include} library={lib}", end="")
        return 1
    print(f"{include};{lib}", end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
