"""The device-plugin interface: a device is a :class:`Device` that compiles a model into an
:class:`Executable`. That is all a new device has to write (plus its kernels)."""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from opforge.runtime.profiling import ProfilingInfo
from opforge.runtime.properties import COMMON_PROPERTIES, PropertySpec

if TYPE_CHECKING:
    from opforge.graph import Model
    from opforge.plugins.manager import PluginSystem
    from opforge.runtime.core import Core


@dataclasses.dataclass(frozen=True)
class Availability:
    """Whether a device can run here, and if not, why (shown to users listing devices)."""

    ok: bool
    reason: str = ""
    #: hardware an available device found but does not use, one line each saying which and why
    #: (an OpenCL device whose compiler cannot build); `opforge devices` prints them, so a user
    #: who expected ``GPU.1`` learns why there is only ``GPU.0``
    left_out: tuple[str, ...] = ()


@dataclasses.dataclass
class CompileContext:
    """What a device gets besides the model when compiling."""

    #: the full device name asked for ("GPU.1", "HETERO:GPU,CPU")
    device_name: str
    #: validated property values
    config: dict[str, Any]
    #: the plugin system of the Core: kernels, ops, other devices
    plugins: PluginSystem
    #: the Core itself, for meta-devices (HETERO) that compile parts on other devices
    core: Core
    #: the keys of ``config`` the caller chose (compile config, ``set_property``); the others are
    #: the device's defaults, which may depend on the host (CPU: bf16 where it has bf16)
    explicit: frozenset[str] = frozenset()

    def kernels(self, device: str | None = None) -> dict[tuple[str, str | None], Any]:
        """Kernels registered by plugins for ``device`` (default: this device's base name)."""
        base = (device or self.device_name).split(":")[0].split(".")[0]
        return self.plugins.kernels_for(base)


class Executable(abc.ABC):
    """A model compiled for one device. ``infer`` may be called from several threads at once,
    each with its own ``state`` (from :meth:`create_state`)."""

    @abc.abstractmethod
    def infer(self, inputs: Sequence[np.ndarray], state: Any) -> list[np.ndarray]:
        """Outputs for already validated inputs, in model output order."""

    def create_state(self) -> Any:
        """Per-request working memory (buffers); None when the device needs none."""
        return None

    def performance_counters(self, state: Any) -> list[ProfilingInfo]:
        """Per-node timings of the last inference with ``state`` (ENABLE_PROFILING), one
        :class:`~opforge.runtime.profiling.ProfilingInfo` per row."""
        return []

    def properties(self) -> dict[str, Any]:
        """Read-only facts about the compiled model (e.g. number of sub-graphs)."""
        return {}

    def export_payload(self) -> bytes | None:
        """The device's own compiled form, stored in exported blobs and cache entries and given
        back to :meth:`Device.import_compiled`. None (the default): import compiles the model
        again from the IR the blob carries. A device that returns bytes versions them itself."""
        return None


class Device(abc.ABC):
    """A device plugin. Registered by name through ``opforge_register_devices`` with a factory;
    the factory runs only when the device is first used."""

    #: properties this device accepts; most devices keep the common set and add their own. An
    #: instance may set its own when a default depends on the host (CPU: the default precision)
    property_specs: tuple[PropertySpec, ...] = COMMON_PROPERTIES
    #: a meta device (HETERO) runs models on other devices; like OpenVINO, `available_devices`
    #: lists only real ones, while a meta device stays usable by name
    is_meta: ClassVar[bool] = False
    #: another name of a device listed under its own (MYRIAD for VPU): usable by name, left out
    #: of `available_devices` so nothing enumerating devices runs the same device twice
    alias_of: str | None = None

    def __init__(self, name: str) -> None:
        self.name = name

    def availability(self) -> Availability:
        """Whether the device can run here. Must not raise: return the reason instead."""
        return Availability(True)

    def sub_devices(self) -> list[str]:
        """Enumerated instances ("GPU.0", "GPU.1"); empty for a single device."""
        return []

    def full_name(self, device_name: str) -> str:
        """Human-readable description (``FULL_DEVICE_NAME``)."""
        return device_name

    @abc.abstractmethod
    def query_model(self, model: Model, ctx: CompileContext) -> dict[str, str]:
        """Which nodes this device can run: ``{node name: device name}``. Nodes it cannot run are
        absent. HETERO partitions with this, so it must be exact."""

    @abc.abstractmethod
    def compile_model(self, model: Model, ctx: CompileContext) -> Executable:
        """Compile ``model`` (a private clone the device may transform freely)."""

    def extension_files(self) -> dict[str, str]:
        """Files a custom-op package needs to build its own kernels for this device (the headers
        of its kernel ABI), by path inside that package: ``opforge extgen`` writes them into the
        packages it generates. Empty (the default): kernels for this device need no header."""
        return {}

    def import_compiled(self, model: Model, payload: bytes, ctx: CompileContext) -> Executable | None:
        """An executable from what this device's :meth:`Executable.export_payload` returned, or
        None to have ``model`` compiled instead (the default; also right for a payload of a
        version the device no longer reads)."""
        return None
