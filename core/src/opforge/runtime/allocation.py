"""The one size check a device makes before it allocates a tensor at run time.

Shapes reach a device from user inputs (a dynamic dimension of 10^9) and from values computed at
run time (an ``Expand`` to ``(2**62, 4)``, a ``OneHot`` depth of 10^9). Allocating such a tensor
kills the process (an OpenCL driver segfaults), or escapes as a bare ``MemoryError``, or, where the
element count wraps around 64 bits, allocates too little and writes out of bounds. So every
device sizes each tensor with Python integers (which cannot overflow) against what it can hold,
before allocating, and raises :class:`~opforge.errors.ResourceLimitError` naming the tensor, its
shape and bytes, the device and the limit.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable

from opforge.errors import ResourceLimitError

#: element counts past this wrap a signed 64-bit index (C++ and OpenCL kernels use int64 sizes)
MAX_ELEMENTS = 2**63 - 1


def human_bytes(n: int) -> str:
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"


def check_allocation(shape: Iterable[int], itemsize: int, *, what: str, device: str, limit: int,
                     limit_name: str) -> int:
    """The byte size of a tensor of ``shape``; raises :class:`ResourceLimitError` when its element
    count overflows 64 bits or its bytes exceed ``limit`` (described by ``limit_name``)."""
    dims = [int(d) for d in shape]
    count = math.prod(dims)
    shape_text = "(" + ", ".join(map(str, dims)) + ("," if len(dims) == 1 else "") + ")"
    if count > MAX_ELEMENTS:
        raise ResourceLimitError(
            f"{what} on {device}: shape {shape_text} has {count} elements, more than a 64-bit element "
            f"count holds ({MAX_ELEMENTS})"
        )
    nbytes = count * int(itemsize)
    if nbytes > limit:
        raise ResourceLimitError(
            f"{what} on {device}: shape {shape_text} needs {nbytes} bytes ({human_bytes(nbytes)}), more than "
            f"{limit_name} ({limit} bytes, {human_bytes(limit)})"
        )
    return nbytes


def host_available_bytes() -> int:
    """Memory a new allocation of this process can still get: the kernel's ``MemAvailable``, and
    what ``RLIMIT_AS`` leaves above the current address space. A CPU OpenCL device (PoCL) takes
    its buffers from here and crashes, rather than failing, when they do not fit."""
    avail = MAX_ELEMENTS
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY:
            with open("/proc/self/statm", encoding="ascii") as f:
                used = int(f.read().split()[0]) * int(os.sysconf("SC_PAGE_SIZE"))
            avail = min(avail, max(0, soft - used))
    except (ImportError, OSError, ValueError, IndexError):
        pass
    return avail


def host_memory_bytes() -> int:
    """Physical memory of this machine (no single tensor can be larger); 2^63-1 where unknown."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, OSError, ValueError):
        return MAX_ELEMENTS
