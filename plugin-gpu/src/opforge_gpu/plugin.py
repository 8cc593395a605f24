"""Hook implementations: the GPU device. Importing this module never touches OpenCL: the device
factory runs only when a user asks for the GPU device."""

from __future__ import annotations

from opforge.hookspecs import Register, hookimpl


def _make_device() -> object:
    from opforge_gpu.device import GpuDevice

    return GpuDevice("GPU")


@hookimpl
def opforge_register_devices(register: Register) -> None:
    register("GPU", _make_device)
