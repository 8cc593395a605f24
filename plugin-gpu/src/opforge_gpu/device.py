"""The ``GPU`` device: OpenCL devices enumerated as ``GPU.0``, ``GPU.1``... (real GPUs first)."""

from __future__ import annotations

import os
import threading
import warnings
from pathlib import Path
from typing import Any

from opforge.errors import (
    DeviceNotFoundError,
    DeviceUnavailableError,
    KernelError,
    PropertyError,
    UnsupportedOpError,
)
from opforge.graph import Model, Node
from opforge.op import STRUCTURAL
from opforge.runtime.device import Availability, CompileContext, Device, Executable
from opforge.runtime.properties import COMMON_PROPERTIES, PropertySpec

from opforge_gpu.custom.config import CustomLayerSpec, load_config
from opforge_gpu.custom.kernel import CustomKernel
from opforge_gpu.library import BuiltinKernels
from opforge_gpu.lowering import KernelImpl
from opforge_gpu.opencl import (
    DeviceInfo,
    OpenCLUnavailable,
    context_for,
    default_cache_dir,
    devices,
    skipped_devices,
)

GPU_PROPERTIES: tuple[PropertySpec, ...] = (
    *COMMON_PROPERTIES,
    PropertySpec("CONFIG_FILE", str, "",
                 doc="OpenVINO custom-layer XML file(s), separated by ','; they take priority over built-in kernels"),
    PropertySpec("CACHE_DIR", str, "", doc="where built OpenCL programs are cached; '' = the user cache "
                 "(~/.cache/opforge/gpu-kernels)"),
    PropertySpec("GPU_KERNEL_CACHE", bool, True, doc="cache built OpenCL programs on disk"),
    PropertySpec("DEVICE_ID", str, "", doc="which enumerated device 'GPU' means ('1' = GPU.1)"),
    PropertySpec("OPENCL_PLATFORM", str, "", doc="use the first device whose platform name contains this"),
    PropertySpec("OPENCL_DEVICE_TYPE", str, "ANY", choices=("ANY", "GPU", "CPU", "ACCELERATOR"),
                 doc="use the first device of this OpenCL type"),
)

_BUILTIN = BuiltinKernels()


class CustomKernelWarning(UserWarning):
    """A CONFIG_FILE kernel is not used for a node it names, or reads an attribute that is not there."""


def _skipped(node: Node, custom: CustomKernel, used: Any) -> None:
    """A CONFIG_FILE layer matches the node's type but cannot run it: say why, and what runs
    instead (OpenVINO falls back silently, which hides a wrong binding or type)."""
    instead = "the built-in kernel" if used is _BUILTIN else f"the kernel registered by a plugin ({used!r})"
    warnings.warn(f"node '{node.name}' ({node.type_name}): {custom.supports(node)}; {instead} runs it instead",
                  CustomKernelWarning, stacklevel=3)


class GpuDevice(Device):
    property_specs = GPU_PROPERTIES

    def __init__(self, name: str = "GPU") -> None:
        super().__init__(name)
        self._config_cache: dict[tuple[str, float], list[CustomLayerSpec]] = {}
        self._lock = threading.Lock()

    # --- enumeration -----------------------------------------------------------------------
    def availability(self) -> Availability:
        try:
            self.opencl_devices()
        except OpenCLUnavailable as err:
            return Availability(False, str(err))
        except Exception as err:  # noqa: BLE001 - availability must answer, never raise
            return Availability(False, f"OpenCL enumeration failed: {type(err).__name__}: {err}")
        # devices whose compiler failed the probe (compiler_probe.py) are not numbered; say why
        return Availability(True, left_out=tuple(skipped_devices()))

    def opencl_devices(self) -> list[DeviceInfo]:
        """The OpenCL devices this device numbers ``NAME.0``, ``NAME.1``... (real GPUs first; the
        VPU device orders accelerators first)."""
        return devices()

    def sub_devices(self) -> list[str]:
        try:
            return [f"{self.name}.{d.index}" for d in self.opencl_devices()]
        except OpenCLUnavailable:
            return []

    def full_name(self, device_name: str) -> str:
        try:
            return self.resolve(device_name, {}).description
        except (DeviceNotFoundError, DeviceUnavailableError, OpenCLUnavailable) as err:
            return f"{device_name} (unavailable: {err})"

    def resolve(self, device_name: str, config: dict[str, Any]) -> DeviceInfo:
        """The OpenCL device ``GPU``/``GPU.N`` means under ``config``."""
        try:
            found = self.opencl_devices()
        except OpenCLUnavailable as err:
            raise DeviceUnavailableError(f"device {self.name}: {err}") from err
        base = device_name.split(":")[-1].split(",")[0]
        index: int | None = None
        if "." in base:
            try:
                index = int(base.split(".", 1)[1])
            except ValueError:
                raise DeviceNotFoundError(f"device '{device_name}': expected {self.name}.<number>") from None
        elif str(config.get("DEVICE_ID", "") or "").strip():
            try:
                index = int(str(config["DEVICE_ID"]).strip().split(".")[-1])
            except ValueError:
                raise PropertyError(f"property DEVICE_ID of {self.name} must be a device number, got "
                                    f"{config['DEVICE_ID']!r}") from None
        if index is not None:
            if not 0 <= index < len(found):
                raise DeviceNotFoundError(
                    f"device '{self.name}.{index}' does not exist; OpenCL devices here: "
                    + "; ".join(f"{self.name}.{d.index} = {d.description}" for d in found)
                )
            return found[index]
        plat = str(config.get("OPENCL_PLATFORM", "") or "").lower()
        dtype = str(config.get("OPENCL_DEVICE_TYPE", "ANY") or "ANY").upper()
        for d in found:
            if plat and plat not in d.platform_name.lower():
                continue
            if dtype != "ANY" and d.type != dtype:
                continue
            return d
        raise DeviceNotFoundError(
            f"no OpenCL device matches OPENCL_PLATFORM={plat!r}, OPENCL_DEVICE_TYPE={dtype}; devices here: "
            + "; ".join(f"{self.name}.{d.index} = {d.description}" for d in found)
        )

    # --- kernels -----------------------------------------------------------------------------
    def _config_files(self, config: dict[str, Any], cache: dict[Any, Any], lock: Any,
                      load: Any) -> list[Any]:
        """What ``load`` made of each file of the comma-separated ``CONFIG_FILE``, cached by path
        and modification time (a device compiles many models with one config)."""
        loaded: list[Any] = []
        for part in str(config.get("CONFIG_FILE", "") or "").split(","):
            path = part.strip()
            if not path:
                continue
            p = Path(path)
            if not p.is_file():
                raise KernelError(f"device {self.name}: CONFIG_FILE '{path}' does not exist")
            key = (str(p.resolve()), p.stat().st_mtime)
            with lock:
                got = cache.get(key)
                if got is None:
                    got = cache[key] = load(p)
            loaded.append(got)
        return loaded

    def _config_layers(self, config: dict[str, Any]) -> dict[str, CustomKernel]:
        out: dict[str, CustomKernel] = {}
        for layers in self._config_files(config, self._config_cache, self._lock, load_config):
            for layer in layers:
                out.setdefault(layer.name, CustomKernel(layer, f"custom:{layer.where}"))
        return out

    def _registered(self, ctx: CompileContext) -> dict[tuple[str, str | None], CustomKernel]:
        out: dict[tuple[str, str | None], CustomKernel] = {}
        for (type_name, version), obj in ctx.kernels(self.name).items():
            out[(type_name, version)] = registered_kernel(type_name, version, obj)
        return out

    def chooser(self, ctx: CompileContext) -> Any:
        """node -> the kernel that runs it: CONFIG_FILE layers, then plugin-registered kernels, then
        the built-in library (custom kernels take priority, as in OpenVINO)."""
        configured = self._config_layers(ctx.config)
        registered = self._registered(ctx)

        def pick(node: Node, warn: bool) -> KernelImpl | None:
            custom = configured.get(node.type_name)
            if custom is not None and warn:
                for problem in custom.unknown_params(node):
                    warnings.warn(f"node '{node.name}': {problem}", CustomKernelWarning, stacklevel=3)
            for impl in (custom, registered.get((node.type_name, node.version)),
                         registered.get((node.type_name, None))):
                if impl is not None and impl.supports(node) is None:
                    if warn and custom is not None and impl is not custom:
                        _skipped(node, custom, impl)
                    return impl
            if _BUILTIN.supports(node) is None:
                if warn and custom is not None:
                    _skipped(node, custom, _BUILTIN)
                return _BUILTIN
            return None

        def choose(node: Node) -> KernelImpl | None:
            return pick(node, True)

        def why(node: Node) -> str:
            for impl in (configured.get(node.type_name), registered.get((node.type_name, node.version)),
                         registered.get((node.type_name, None))):
                if impl is not None:
                    reason = impl.supports(node)
                    if reason:
                        return reason
            return _BUILTIN.supports(node) or "unsupported"

        choose.why = why  # type: ignore[attr-defined]
        # whether a node runs on a built-in kernel, asked by planning (epilogue fusion) without
        # repeating the warnings ``choose`` gives
        choose.builtin = lambda node: pick(node, False) is _BUILTIN  # type: ignore[attr-defined]
        return choose

    def _unsupported(self, model: Model, choose: Any) -> list[tuple[Node, str]]:
        bad = []
        for node in model.get_ordered_ops():
            if node.type_name in STRUCTURAL or choose(node) is not None:
                continue
            if node.op.is_standard and (node.type_name == "ShapeOf" or (
                    node.inputs and all(i.node.type_name == "Constant" for i in node.inputs))):
                continue  # folded into a constant when the plan is built
            bad.append((node, choose.why(node)))
        return bad

    def query_model(self, model: Model, ctx: CompileContext) -> dict[str, str]:
        choose = self.chooser(ctx)
        info = self.resolve(ctx.device_name, ctx.config)
        name = f"{self.name}.{info.index}" if "." in ctx.device_name.split(":")[-1] else self.name
        bad = {n.name for n, _ in self._unsupported(model, choose)}
        return {n.name: name for n in model.get_ordered_ops() if n.name not in bad}

    def compile_model(self, model: Model, ctx: CompileContext) -> Executable:
        from opforge_gpu.executable import GpuExecutable

        choose = self.chooser(ctx)
        bad = self._unsupported(model, choose)
        if bad:
            lines = "; ".join(f"'{n.name}' ({n.type_name}-{n.version}): {why}" for n, why in bad)
            raise UnsupportedOpError(
                f"device {ctx.device_name} cannot run {len(bad)} node(s) of model '{model.name}': {lines}. "
                f"Use HETERO:{self.name},CPU to run them elsewhere, or add a custom kernel (CONFIG_FILE)"
            )
        info = self.resolve(ctx.device_name, ctx.config)
        dev = context_for(info)
        cache_dir: str | None = None
        if ctx.config.get("GPU_KERNEL_CACHE", True):
            cache_dir = str(ctx.config.get("CACHE_DIR") or "") or os.environ.get("OPFORGE_GPU_CACHE_DIR") \
                or default_cache_dir()
        label = f"{self.name}.{info.index}"
        return GpuExecutable(model, dev, label, dict(ctx.config), choose, cache_dir)


def registered_kernel(type_name: str, version: str | None, obj: Any) -> CustomKernel:
    """A kernel registered through ``opforge_register_kernels`` for device GPU: a CustomKernel, an
    XML path, or ``(package, "path/in/package.xml")`` naming package resources."""
    if isinstance(obj, CustomKernel):
        return obj
    if isinstance(obj, CustomLayerSpec):
        return CustomKernel(obj, f"custom:{obj.where}")
    if isinstance(obj, (str, os.PathLike, tuple)) or hasattr(obj, "read_text"):
        layers = load_config(obj)
        match = [layer for layer in layers if layer.name == type_name]
        if not match:
            names = ", ".join(layer.name for layer in layers) or "none"
            raise KernelError(
                f"GPU kernel registered for {type_name}/{version}: its configuration has no CustomLayer "
                f"name=\"{type_name}\" (it has: {names})"
            )
        return CustomKernel(match[0], f"plugin:{match[0].where}")
    raise KernelError(
        f"GPU kernel registered for {type_name}/{version} is a {type(obj).__name__}; expected an XML path, "
        "(package, 'resource.xml') or an opforge_gpu CustomKernel"
    )
