"""The ``VPU`` device (alias ``MYRIAD``): the GPU plugin's OpenCL runtime and kernel library in FP16,
on the OpenCL devices numbered ``VPU.0``, ``VPU.1``... (accelerators first, then GPUs, then CPUs),
with MVCL custom layers (``CONFIG_FILE``) taking priority over the built-in kernels."""

from __future__ import annotations

import dataclasses
import os
import threading
from typing import Any

from opforge.errors import KernelError
from opforge.runtime.device import CompileContext
from opforge.runtime.properties import PropertySpec
from opforge_gpu.runtime import GPU_PROPERTIES, DeviceInfo, GpuDevice, devices

from opforge_vpu.mvcl.config import Stage, load_config
from opforge_vpu.mvcl.kernel import MvclKernel

#: names under which plugins register VPU kernels (``opforge_register_kernels``)
KERNEL_DEVICES = ("VPU", "MYRIAD")

_RANK = {"ACCELERATOR": 0, "GPU": 1, "CUSTOM": 2, "CPU": 3}


def _vpu_properties() -> tuple[PropertySpec, ...]:
    out = []
    for spec in GPU_PROPERTIES:
        if spec.name == "INFERENCE_PRECISION_HINT":
            # FP16 like the real VPU; f32 is a debugging mode (the VPU had none)
            spec = dataclasses.replace(spec, default="f16", choices=("f16", "f32"),
                                       doc="f16 (the VPU's precision: half storage) or f32 (debugging)")
        elif spec.name == "CONFIG_FILE":
            spec = dataclasses.replace(spec, doc="OpenVINO MVCL custom-layer XML file(s), separated by ','; they "
                                       "take priority over built-in kernels")
        out.append(spec)
    return tuple(out)


VPU_PROPERTIES = _vpu_properties()


class VpuDevice(GpuDevice):
    property_specs = VPU_PROPERTIES

    def __init__(self, name: str = "VPU") -> None:
        super().__init__(name)
        self._mvcl_cache: dict[tuple[str, float], list[Stage]] = {}
        self._mvcl_lock = threading.Lock()

    def opencl_devices(self) -> list[DeviceInfo]:
        ranked = sorted(devices(), key=lambda d: (_RANK.get(d.type, 2), d.index))
        return [dataclasses.replace(d, index=i) for i, d in enumerate(ranked)]

    # --- kernels -----------------------------------------------------------------------------
    def _config_layers(self, config: dict[str, Any]) -> dict[str, MvclKernel]:  # type: ignore[override]
        stages: list[Stage] = []
        for got in self._config_files(config, self._mvcl_cache, self._mvcl_lock, load_config):
            stages.extend(got)
        return group(stages, "custom")

    def _registered(self, ctx: CompileContext) -> dict[tuple[str, str | None], MvclKernel]:  # type: ignore[override]
        out: dict[tuple[str, str | None], MvclKernel] = {}
        for dev in KERNEL_DEVICES:
            for (type_name, version), obj in ctx.kernels(dev).items():
                out.setdefault((type_name, version), registered_kernel(type_name, version, obj))
        return out


def group(stages: list[Stage], origin: str) -> dict[str, MvclKernel]:
    """One kernel per layer name: its stages and Where alternatives together."""
    names: dict[str, list[Stage]] = {}
    for s in stages:
        names.setdefault(s.name, []).append(s)
    return {n: MvclKernel(n, ss, f"{origin}:{ss[0].at}") for n, ss in names.items()}


def registered_kernel(type_name: str, version: str | None, obj: Any) -> MvclKernel:
    """A kernel a plugin registered for ``VPU``: an MvclKernel, an XML path, or
    ``(package, "path/in/package.xml")``."""
    if isinstance(obj, MvclKernel):
        return obj
    if isinstance(obj, (str, os.PathLike, tuple)):
        kernels = group(load_config(obj), "plugin")
        got = kernels.get(type_name)
        if got is None:
            raise KernelError(f"VPU kernel registered for {type_name}/{version}: its configuration has no CustomLayer "
                              f"name=\"{type_name}\" (it has: {', '.join(kernels) or 'none'})")
        return got
    raise KernelError(f"VPU kernel registered for {type_name}/{version} is a {type(obj).__name__}; expected an MVCL "
                      "XML path or (package, 'resource.xml')")
