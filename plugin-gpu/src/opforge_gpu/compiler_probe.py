"""Whether an OpenCL device's compiler can build a kernel at all, asked once at enumeration.

A driver can list a device whose compiler fails on every program. The case that made this
module: the PoCL that ships in pyopencl's wheels (PoCL 3.0, LLVM 14) on a CPU newer than its
LLVM (an AMD Zen 5 EPYC, family 0x1A). LLVM names that CPU "generic", PoCL passes it on as
``-target-cpu generic``, and clang refuses every build with ``unknown target CPU 'generic'``.
Numbering such a device ``GPU.0`` would make every model fail at its first kernel, far from the
cause; leaving it out, with the reason, lets the next driver (a newer PoCL, a real GPU) take
its place and says what to install.

``python -m opforge_gpu.compiler_probe`` prints each device's verdict and exits 1 when no device
can build (``scripts/_env.sh`` then installs Debian's PoCL where it can).
"""

from __future__ import annotations

import sys
from typing import Any

#: the smallest program that exercises the whole path: parse, built-in library, code generation
PROBE_SOURCE = "__kernel void opforge_probe(__global float* a) { a[get_global_id(0)] *= 2.0f; }\n"

#: what a clang older than the CPU says (PoCL's LLVM does not know the host CPU's name)
_UNKNOWN_CPU = "unknown target CPU"


def compiler_problem(cl: Any, device: Any) -> str | None:
    """None when ``device`` builds :data:`PROBE_SOURCE`; otherwise why it cannot, with a remedy."""
    try:
        context = cl.Context([device])
    except Exception as err:  # noqa: BLE001 - any driver error means the device is unusable
        return f"cannot create an OpenCL context ({type(err).__name__}: {err})"
    program = cl.Program(context, PROBE_SOURCE)
    try:
        program.build(devices=[device])
    except Exception as err:  # noqa: BLE001 - pyopencl raises RuntimeError or cl.Error subclasses
        # opencl.py's reader of a failed build's log (imported here: opencl.py imports this module)
        from opforge_gpu.opencl import _build_log

        log = _build_log(cl, err, device, program)
        first = next((ln.strip() for ln in log.splitlines() if "error" in ln.lower()), log.strip()[:200])
        return f"its OpenCL compiler fails on a one-line kernel: {first}{_remedy(log)}"
    return None


def _remedy(log: str) -> str:
    if _UNKNOWN_CPU not in log:
        return ""
    return (". The driver's LLVM is older than this CPU and cannot name it (PoCL 3.0 in pyopencl's "
            "wheels has LLVM 14). A PoCL that picks its code target from the CPU's features works: "
            "on Debian or Ubuntu `apt-get install pocl-opencl-icd`; it is found through "
            "/etc/OpenCL/vendors")


def main() -> int:
    from opforge_gpu.opencl import OpenCLUnavailable, devices, skipped_devices

    try:
        found = devices()
    except OpenCLUnavailable as err:
        print(f"[opencl] no usable OpenCL device: {err}", file=sys.stderr)
        return 1
    for reason in skipped_devices():
        print(f"[opencl] {reason}", file=sys.stderr)
    for info in found:
        print(f"[opencl] GPU.{info.index}: {info.description}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
