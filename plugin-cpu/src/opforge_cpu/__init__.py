"""opforge-cpu: the CPU device of opforge.

The device compiles a model into a C++ program (kernels on oneDNN, a planned arena of buffers)
that runs without the GIL. Third-party packages add kernels for their own ops through the
``opforge_register_kernels`` hook, either as NumPy callables (the slow path) or as compiled
kernels built against the C header in :func:`get_include`.
"""

from __future__ import annotations

from pathlib import Path

__version__ = "0.1.0"

#: the kernel ABI this package's executor speaks (OPFORGE_CPU_KERNEL_ABI_VERSION in the header)
KERNEL_ABI_VERSION = 1


def get_include() -> str:
    """The folder holding ``opforge_cpu/kernel_abi.h``, for a plugin's compiler include path."""
    return str(Path(__file__).resolve().parent / "include")


__all__ = ["KERNEL_ABI_VERSION", "__version__", "get_include"]
