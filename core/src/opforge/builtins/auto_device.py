"""The AUTO meta device: ``AUTO:GPU,CPU`` compiles the model on the first listed device that
can, falling back to the next when one fails; plain ``AUTO`` tries every available device, GPUs
first and the CPU last (OpenVINO's order). The device it chose is reported by the compiled
model's ``EXECUTION_DEVICES``, and why the ones before it were passed over by
``AUTO_SKIPPED_DEVICES``.

It is built in, registered like any device plugin, because it needs nothing but the Core: every
installation has it, even one whose only device is a third-party plugin. HETERO is a plugin of
its own because partitioning a model is a large job; choosing a device is not.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from opforge.errors import DeviceNotFoundError, PropertyError, UnsupportedOpError
from opforge.graph import Model
from opforge.hookspecs import Register, hookimpl
from opforge.runtime.compiled_model import CompiledModel
from opforge.runtime.device import CompileContext, Device, Executable
from opforge.runtime.device_name import parse_device_name
from opforge.runtime.profiling import ProfilingInfo
from opforge.runtime.properties import COMMON_PROPERTIES, PropertySpec

AUTO_PROPERTIES: tuple[PropertySpec, ...] = (
    *COMMON_PROPERTIES,
    PropertySpec("MULTI_DEVICE_PRIORITIES", str, "",
                 doc="devices in priority order ('GPU,CPU'); the list in 'AUTO:GPU,CPU' wins over it"),
    PropertySpec("DEVICE_PROPERTIES", dict, {},
                 doc="properties per device, e.g. {'GPU': {'CONFIG_FILE': 'k.xml'}, 'CPU': {...}}"),
)


class AutoFallbackWarning(UserWarning):
    """AUTO could not compile the model on a device it preferred and used a later one."""


class AutoExecutable(Executable):
    """The chosen device's executable, called directly: AUTO adds nothing to an inference."""

    def __init__(self, compiled: CompiledModel, skipped: dict[str, str]) -> None:
        self.compiled = compiled
        self.inner = compiled._executable
        self.skipped = skipped

    def create_state(self) -> Any:
        return self.inner.create_state()

    def infer(self, inputs: Sequence[np.ndarray], state: Any) -> list[np.ndarray]:
        return self.inner.infer(inputs, state)

    def performance_counters(self, state: Any) -> list[ProfilingInfo]:
        return list(self.inner.performance_counters(state))

    def properties(self) -> dict[str, Any]:
        inner = dict(self.inner.properties())
        return {**inner, "EXECUTION_DEVICES": inner.get("EXECUTION_DEVICES", [self.compiled.device]),
                "AUTO_SKIPPED_DEVICES": dict(self.skipped)}


class AutoDevice(Device):
    property_specs = AUTO_PROPERTIES
    is_meta = True

    def full_name(self, device_name: str) -> str:
        targets = parse_device_name(device_name).targets
        return ("Automatic device selection among " + ", ".join(targets)) if targets else \
            "Automatic device selection (every available device, GPUs first)"

    def query_model(self, model: Model, ctx: CompileContext) -> dict[str, str]:
        """What the first candidate that supports every node supports; else the first one's."""
        first: dict[str, str] | None = None
        for dev in candidates(ctx):
            try:
                supported = ctx.core.query_model(model, dev, device_config(ctx, dev))
            except Exception:  # noqa: BLE001 - a broken candidate is passed over, as in compile
                continue
            if first is None:
                first = supported
            if all(n.name in supported for n in model.get_ordered_ops()):
                return supported
        return first or {}

    def compile_model(self, model: Model, ctx: CompileContext) -> Executable:
        skipped: dict[str, str] = {}
        devices = candidates(ctx)
        unknown = sorted(str(k) for k in (ctx.config.get("DEVICE_PROPERTIES") or {})
                         if str(k).strip().upper() not in {*devices, *(parse_device_name(d).base for d in devices)})
        if unknown:
            raise PropertyError(f"DEVICE_PROPERTIES has settings for {', '.join(unknown)}, which "
                                f"{'is' if len(unknown) == 1 else 'are'} not among the devices of "
                                f"{ctx.device_name} ({', '.join(devices)})")
        for dev in devices:
            try:
                compiled = ctx.core.compile_model(model, dev, device_config(ctx, dev))
            except Exception as err:  # noqa: BLE001 - any failure of one device means: try the next
                skipped[dev] = f"{type(err).__name__}: {err}"
                continue
            if skipped:
                warnings.warn(
                    f"{ctx.device_name}: model '{model.name}' runs on {dev}; passed over: "
                    + "; ".join(f"{d} ({why})" for d, why in skipped.items()),
                    AutoFallbackWarning, stacklevel=3)
            return AutoExecutable(compiled, skipped)
        raise UnsupportedOpError(
            f"{ctx.device_name}: no device could compile model '{model.name}': "
            + "; ".join(f"{d}: {why}" for d, why in skipped.items()))


def candidates(ctx: CompileContext) -> list[str]:
    """The devices to try, in order: the name's list, MULTI_DEVICE_PRIORITIES, or every
    available device with GPUs first and the CPU last."""
    parsed = parse_device_name(ctx.device_name)
    targets: Sequence[str] = parsed.targets
    if not targets:
        text = str(ctx.config.get("MULTI_DEVICE_PRIORITIES") or "")
        targets = tuple(t.strip().upper() for t in text.split(",") if t.strip())
    if not targets:
        avail = ctx.core.available_devices
        targets = sorted(avail, key=lambda d: (0 if d.startswith("GPU") else 2 if d == "CPU" else 1, d))
        if not targets:
            raise DeviceNotFoundError("AUTO: no device is available here; install a device plugin "
                                      "(pip install opforge-cpu)")
    for t in targets:
        if parse_device_name(t).base == parsed.base:
            raise DeviceNotFoundError(f"{ctx.device_name}: AUTO cannot list itself")
    dup = sorted({t for t in targets if list(targets).count(t) > 1})
    if dup:
        raise DeviceNotFoundError(f"{ctx.device_name}: device {', '.join(dup)} is listed twice")
    return list(targets)


def device_config(ctx: CompileContext, dev: str) -> dict[str, Any]:
    """The common properties the caller set or changed from their defaults (where ``dev`` takes
    them), then ``DEVICE_PROPERTIES[dev]``. One left unset takes ``dev``'s own default (the CPU's
    precision: bf16 on a bf16 host), as OpenVINO's AUTO does; one set to AUTO's default
    (``INFERENCE_PRECISION_HINT=f32``) is passed on all the same."""
    per_device: Mapping[str, Any] = ctx.config.get("DEVICE_PROPERTIES") or {}
    wanted = {str(k).strip().upper(): v for k, v in per_device.items()}
    own = wanted.get(dev.upper(), wanted.get(parse_device_name(dev).base, {}))
    if not isinstance(own, Mapping):
        raise PropertyError(f"DEVICE_PROPERTIES['{dev}'] must be a dict of properties, got {own!r}")
    defaults = {s.name: s.default for s in COMMON_PROPERTIES}
    changed = {k: v for k, v in ctx.config.items() if k in defaults and (k in ctx.explicit or v != defaults[k])}
    cfg: dict[str, Any] = {}
    if changed:
        supported = set(ctx.core.get_property(dev, "SUPPORTED_PROPERTIES"))
        cfg.update({k: v for k, v in changed.items() if k in supported})
    # The chosen device's compile is not cached on its own: AUTO's own entry covers it.
    cfg.pop("CACHE_DIR", None)
    cfg.update(own)
    return cfg


@hookimpl
def opforge_register_devices(register: Register) -> None:
    register("AUTO", lambda: AutoDevice("AUTO"))
