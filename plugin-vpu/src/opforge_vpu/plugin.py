"""Hook implementations: the VPU device (and its old name MYRIAD) and the ``opforge vpu`` command.
Importing this module never touches OpenCL."""

from __future__ import annotations

from opforge.hookspecs import Register, hookimpl


def _vpu() -> object:
    from opforge_vpu.device import VpuDevice

    return VpuDevice("VPU")


def _myriad() -> object:
    from opforge_vpu.device import VpuDevice

    dev = VpuDevice("MYRIAD")
    dev.alias_of = "VPU"  # usable as MYRIAD, MYRIAD.0; listed once, as VPU
    return dev


@hookimpl
def opforge_register_devices(register: Register) -> None:
    register("VPU", _vpu)
    # OpenVINO's name for the device: programs written for it keep working
    register("MYRIAD", _myriad)


@hookimpl
def opforge_register_commands(register: Register) -> None:
    from opforge_vpu.cli import add_arguments, run

    register("vpu", run, help="VPU tools: compile MYRIAD OpenCL kernels offline (vpu compile k.cl -o k.bin)",
             add_arguments=add_arguments)
