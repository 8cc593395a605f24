"""Hook implementations of opforge-cpu: the CPU device, created only when first used."""

from __future__ import annotations

from opforge.hookspecs import Register, hookimpl
from opforge.runtime.device import Device


def _make_device() -> Device:
    # Imported here so that listing plugins never loads the C++ module or oneDNN.
    from opforge_cpu.device import CpuDevice

    return CpuDevice("CPU")


@hookimpl
def opforge_register_devices(register: Register) -> None:
    register("CPU", _make_device)


@hookimpl
def opforge_register_kernels(register: Register) -> None:
    # Framework-fallback nodes (CustomLayersMapping.xml) run on the CPU through their framework
    # (ONNX Runtime, Paddle), as a Python kernel; placeholders are refused in query_model.
    from opforge.frontend.framework_node import FrameworkNode, FrameworkNodeKernel

    register("CPU", FrameworkNode, FrameworkNodeKernel())
