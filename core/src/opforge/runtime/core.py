"""``Core``: the entry point of the runtime API, named as OpenVINO's so its users feel at home."""

from __future__ import annotations

import difflib
import hashlib
import importlib
import importlib.metadata as md
import importlib.util
import os
import sys
import threading
import types
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from opforge.errors import (
    DeviceNotFoundError,
    DeviceUnavailableError,
    ExtensionError,
    ModelFormatError,
    OpforgeError,
    PluginLoadError,
    PropertyError,
)
from opforge.frontend.base import ConversionOptions, ModelSource
from opforge.graph import Model
from opforge.limits import LIMITS, Limits
from opforge.limits import using as using_limits
from opforge.op import Op
from opforge.plugins.manager import ENTRY_POINT_GROUP, PluginSystem, default_plugins, is_user_interrupt
from opforge.plugins.registry import USER, PluginInfo
from opforge.runtime.blob import Blob, check_versions, read_source
from opforge.runtime.cache import CacheStats, CacheWarning, CompileCache, cache_key, file_identity, file_stamp
from opforge.runtime.compiled_model import CompiledModel
from opforge.runtime.device import Availability, CompileContext, Device
from opforge.runtime.device_name import DeviceName, parse_device_name
from opforge.runtime.fingerprint import model_hash, relevant_versions
from opforge.runtime.properties import CORE_PROPERTIES, PropertyTable
from opforge.versions import loaded_versions

#: the priority of things added with Core.add_extension: deliberate, so they override plugins
USER_PRIORITY = 1


class Core:
    """Reads models, compiles them for devices, and holds per-device properties.

    Each ``Core`` starts from the process-wide plugins and keeps its own additions
    (``add_extension``) to itself.
    """

    def __init__(self, plugins: PluginSystem | None = None) -> None:
        self.plugins = (plugins or default_plugins()).copy()
        self._devices: dict[str, Device] = {}
        self._properties: dict[str, PropertyTable] = {}
        self._user_extensions: list[Any] = []
        self._lock = threading.RLock()
        #: Core-wide CACHE_DIR (a device's own CACHE_DIR wins)
        self._core_properties = PropertyTable("Core", list(CORE_PROPERTIES))
        #: what the compile cache did (CACHE_DIR): hits, misses, stores, errors
        self.cache_stats = CacheStats()
        #: Core-wide properties: the resource limits of the models it reads (opforge.limits)
        self._limits = Limits()

    # --- devices -----------------------------------------------------------------------------
    def _device(self, base: str) -> Device:
        with self._lock:
            if base in self._devices:
                return self._devices[base]
            reg = self.plugins.devices.registration(base)
            if reg is None:
                raise DeviceNotFoundError(self._not_found_message(base))
            try:
                dev = reg.value()
            except BaseException as err:
                if is_user_interrupt(err):  # sys.exit() in a plugin must not end the program
                    raise
                raise DeviceUnavailableError(
                    f"device {base}: the factory of plugin {reg.plugin} raised "
                    f"{type(err).__name__}: {err}"
                ) from err
            if not isinstance(dev, Device):
                raise DeviceUnavailableError(
                    f"device {base}: plugin {reg.plugin} returned {type(dev).__name__}, not an "
                    "opforge.runtime.device.Device"
                )
            self._devices[base] = dev
            return dev

    def _device_names(self) -> list[str]:
        return [str(k) for k in self.plugins.devices.keys()]  # noqa: SIM118 - sorted keys, not a dict

    def _availability(self, base: str) -> tuple[bool, str]:
        av = self._availability_of(base)
        return av.ok, av.reason

    def _availability_of(self, base: str) -> Availability:
        try:
            av = self._device(base).availability()
        except BaseException as err:  # a broken plugin (even one calling sys.exit) must not break listing
            if is_user_interrupt(err):
                raise
            return Availability(False, f"{type(err).__name__}: {err}")
        if not isinstance(av, Availability):
            return Availability(False, f"availability() returned {type(av).__name__}, expected Availability")
        return av

    def _not_found_message(self, name: str) -> str:
        installed = self._device_names()
        avail: list[str] = []
        unavail: list[str] = []
        meta = set(self.meta_devices())
        for d in installed:
            if d in meta:
                continue
            ok, why = self._availability(d)
            (avail if ok else unavail).append(d if ok else f"{d} ({why})")
        msg = f"device '{name}' is not installed. Available devices: {', '.join(avail) or 'none'}"
        if meta:
            msg += f"; meta devices: {', '.join(sorted(meta))} (e.g. {sorted(meta)[0]}:{','.join(avail[:2]) or 'CPU'})"
        if unavail:
            msg += f"; installed but unavailable: {'; '.join(unavail)}"
        close = difflib.get_close_matches(name.upper(), installed, n=1)
        if close:
            msg += f". Did you mean '{close[0]}'?"
        elif not installed:
            msg += ". Install a device plugin, e.g. `pip install opforge-cpu`."
        return msg

    @property
    def available_devices(self) -> list[str]:
        """Devices that can run here, enumerated (``GPU.0``, ``GPU.1``...)."""
        out: list[str] = []
        for base in self._device_names():
            ok, _ = self._availability(base)
            if not ok:
                continue
            try:
                dev = self._device(base)
                if dev.is_meta or dev.alias_of:
                    continue
                subs = dev.sub_devices()
            except Exception:  # noqa: BLE001 - listing must survive a broken plugin
                continue
            out.extend(subs or [base])
        return out

    def get_available_devices(self) -> list[str]:
        return self.available_devices

    def left_out_hardware(self) -> dict[str, list[str]]:
        """Per available device, the hardware it found but does not use, with why (see
        :attr:`Availability.left_out`); devices that use everything they found are absent."""
        out: dict[str, list[str]] = {}
        for base in self._device_names():
            av = self._availability_of(base)
            if not (av.ok and av.left_out):
                continue
            try:
                dev = self._device(base)
                if dev.is_meta or dev.alias_of:
                    continue  # MYRIAD says what VPU says
            except Exception:  # noqa: BLE001 - listing must survive a broken plugin
                continue
            out[base] = [str(line) for line in av.left_out]
        return out

    def unavailable_devices(self) -> dict[str, str]:
        """Installed devices that cannot run here, with the reason."""
        out = {}
        for base in self._device_names():
            ok, why = self._availability(base)
            if not ok:
                out[base] = why
        return out

    def _resolve(self, device_name: str) -> tuple[DeviceName, Device]:
        parsed = parse_device_name(device_name)
        dev = self._device(parsed.base)
        ok, why = self._availability(parsed.base)
        if not ok:
            others = [d for d in self.available_devices if not d.startswith(parsed.base)]
            raise DeviceUnavailableError(
                f"device {parsed.base} is installed but unavailable here: {why}. "
                f"Available devices: {', '.join(others) or 'none'}"
            )
        if parsed.index is not None:
            subs = dev.sub_devices()
            if parsed.full.split(":")[0] not in subs:
                raise DeviceNotFoundError(
                    f"device '{device_name}' does not exist; {parsed.base} devices here: "
                    f"{', '.join(subs) or parsed.base}"
                )
        return parsed, dev

    # --- properties --------------------------------------------------------------------------
    def _table(self, base: str) -> PropertyTable:
        with self._lock:
            if base not in self._properties:
                dev = self._device(base)
                self._properties[base] = PropertyTable(base, list(dev.property_specs))
            return self._properties[base]

    def set_property(self, device_name: str | Mapping[str, Any],
                     properties: Mapping[str, Any] | None = None) -> None:
        """``set_property("CPU", {"INFERENCE_NUM_THREADS": 2})``. Unknown keys are errors.

        Without a device, ``set_property({"MAX_TENSOR_BYTES": 2**34})`` sets Core-wide properties:
        the resource limits (:mod:`opforge.limits`) of the models this Core reads."""
        if isinstance(device_name, Mapping):
            if properties is not None:
                raise PropertyError("set_property takes either a device name and properties, or one mapping "
                                    "of Core-wide properties")
            own = {k: v for k, v in device_name.items() if str(k).upper() in self._core_properties.specs}
            rest = {k: v for k, v in device_name.items() if k not in own}
            unknown = [k for k in rest if str(k).upper() not in LIMITS]
            if unknown:
                raise PropertyError(f"unknown Core-wide property '{unknown[0]}'; Core-wide properties: "
                                    f"{', '.join([*self._core_properties.specs, *LIMITS])}")
            with self._lock:
                self._core_properties.merged(own)  # validates; the limits validate themselves
                self._limits.set(rest)
                self._core_properties.set(own)
            return
        base = parse_device_name(device_name).base
        self._table(base).set(dict(properties or {}))

    def get_property(self, device_name: str, name: str | None = None) -> Any:
        """A device's property, or with one argument a Core-wide one (``get_property("MAX_NODES")``)."""
        if name is None:
            if device_name.upper() in self._core_properties.specs:
                return self._core_properties.get(device_name.upper())
            if device_name.upper() in LIMITS:
                return self._limits.get(device_name)
            raise PropertyError(
                f"'{device_name}' is not a Core-wide property ({', '.join(LIMITS)}); for a device's "
                "property pass the device too: get_property('CPU', name)"
            )
        parsed = parse_device_name(device_name)
        key = name.upper()
        if key == "AVAILABLE_DEVICES":
            dev = self._device(parsed.base)
            return dev.sub_devices() or ([parsed.base] if self._availability(parsed.base)[0] else [])
        if key == "FULL_DEVICE_NAME":
            return self._device(parsed.base).full_name(parsed.full)
        if key == "SUPPORTED_PROPERTIES":
            return sorted([*self._table(parsed.base).specs, "AVAILABLE_DEVICES", "FULL_DEVICE_NAME",
                           "SUPPORTED_PROPERTIES"])
        return self._table(parsed.base).get(name)

    # --- extensions --------------------------------------------------------------------------
    def add_extension(self, extension: Any) -> None:
        """Add an op class, a frontend extension, a list of them, a plugin module (object, dotted
        path or ``.py`` file), an installed plugin by name (even if autoload is disabled), or a
        mapping file (``.json`` OpExtensions, ``CustomLayersMapping.xml`` framework fallback)."""
        from opforge.frontend.extensions import FrontendExtension, MappingFile

        if isinstance(extension, (str, os.PathLike)) and str(extension).lower().endswith((".json", ".xml")):
            # A mapping file (JSON OpExtensions or a CustomLayersMapping.xml): like extension= of
            # convert_model, its entries win over every other extension for models read later.
            extension = MappingFile.load(os.fspath(extension))
        if isinstance(extension, MappingFile):
            self._user_extensions.insert(0, extension)
            return
        if isinstance(extension, (list, tuple)):
            for e in extension:
                self.add_extension(e)
            return
        if isinstance(extension, type) and issubclass(extension, Op):
            if not getattr(extension, "type_name", None):
                raise ExtensionError(f"{extension.__name__} has no type_name; set type_name = 'MyOp'")
            self.plugins.ops.add(extension.key(), extension, USER, USER_PRIORITY)
            return
        if isinstance(extension, FrontendExtension):
            self.plugins.conversion_extensions.add(extension.key, extension, USER, USER_PRIORITY)
            self._user_extensions.append(extension)
            return
        if isinstance(extension, types.ModuleType):
            self._register_plugin_module(extension, extension.__name__)
            return
        if isinstance(extension, (str, os.PathLike)):
            self._add_extension_by_name(str(extension))
            return
        raise ExtensionError(
            f"add_extension cannot use {type(extension).__name__}: expected an Op subclass, an "
            "OpExtension/ConversionExtension, a module, a module path, a .py file or an installed "
            "plugin name"
        )

    def _register_plugin_module(self, module: Any, name: str) -> None:
        if not self.plugins.add_plugin_object(module, name):
            rec = self.plugins.records.get(name)
            raise PluginLoadError(f"plugin '{name}' could not be registered: {rec.error if rec else '?'}")

    def _add_extension_by_name(self, text: str) -> None:
        # 1. an installed plugin, by entry-point or distribution name
        for ep in md.entry_points(group=ENTRY_POINT_GROUP):
            dist = ep.dist.name if ep.dist is not None else None
            if text in (ep.name, dist):
                try:
                    module = ep.load()
                except BaseException as err:
                    if is_user_interrupt(err):
                        raise
                    raise PluginLoadError(f"plugin '{text}' failed to import: {type(err).__name__}: {err}") from err
                info = PluginInfo(ep.name, dist, ep.dist.version if ep.dist is not None else None)
                already = ep.name in self.plugins.records and self.plugins.records[ep.name].status == "loaded"
                if not already and not self.plugins.register_module(module, info, entry_point=ep.value):
                    raise PluginLoadError(f"plugin {info} could not be registered: "
                                              f"{self.plugins.records[ep.name].error}")
                return
        # 2. a Python file
        path = Path(text)
        if path.suffix == ".py":
            if not path.is_file():
                raise ExtensionError(f"extension file '{text}' does not exist")
            mod_name = f"opforge_user_extension_{path.stem}"
            spec = importlib.util.spec_from_file_location(mod_name, path)
            if spec is None or spec.loader is None:
                raise ExtensionError(f"cannot import extension file '{text}'")
            module = importlib.util.module_from_spec(spec)
            try:
                spec.loader.exec_module(module)
            except BaseException as err:
                if is_user_interrupt(err):
                    raise
                raise ExtensionError(f"extension file '{text}' raised on import: {type(err).__name__}: {err}") from err
            sys.modules[mod_name] = module
            self._register_plugin_module(module, str(path))
            return
        # 3. an importable module path
        try:
            module = importlib.import_module(text)
        except ImportError as err:
            installed = sorted({ep.name for ep in md.entry_points(group=ENTRY_POINT_GROUP)})
            raise ExtensionError(
                f"'{text}' is neither an installed plugin ({', '.join(installed) or 'none installed'}), "
                f"a .py file, nor an importable module ({err})"
            ) from err
        self._register_plugin_module(module, text)

    # --- models ------------------------------------------------------------------------------
    def read_model(self, model: str | os.PathLike[str] | bytes, weights: str | os.PathLike[str] | bytes | None = None,
                   *, allow_unsupported: bool = False) -> Model:
        """Read a model file or bytes with whichever installed frontend recognises it."""
        source = ModelSource.of(model, weights)
        options = ConversionOptions(extensions=list(self._user_extensions), allow_unsupported=allow_unsupported)
        frontends = sorted(
            (self.plugins.frontends.registration(k) for k in self.plugins.frontends.keys()),  # noqa: SIM118
            key=lambda r: (-r.priority, r.key) if r is not None else (0, ""),  # type: ignore[arg-type, return-value]
        )
        for reg in frontends:
            if reg is None:
                continue
            try:
                ok = reg.value.supports(source)
            except Exception:  # noqa: BLE001 - a broken detector must not hide the other frontends
                ok = False
            if ok:
                # The readers check declared sizes against this Core's limits (opforge.limits.current).
                with using_limits(self._limits.copy()):
                    return reg.value.read(source, self.plugins, options)  # type: ignore[no-any-return]
        readers = ", ".join(
            f"{r.value.name} ({' '.join(r.value.suffixes) or 'any'})" for r in frontends if r is not None
        )
        raise ModelFormatError(
            f"no installed frontend can read {source.label}; installed frontends: {readers or 'none'}. "
            "Install one, e.g. `pip install opforge-onnx` for .onnx or `opforge-paddle` for Paddle models."
        )

    def compile_model(self, model: Model | str | os.PathLike[str] | bytes, device_name: str = "CPU",
                      config: Mapping[str, Any] | None = None) -> CompiledModel:
        """Compile ``model`` (or the model file at that path) for ``device_name``. With
        ``CACHE_DIR`` set (for the device, or Core-wide) a model compiled before with the same
        device, config and plugin versions is loaded from the cache instead."""
        parsed, dev = self._resolve(device_name)
        ctx = self._context(parsed, config)
        cache_dir = ctx.config.get("CACHE_DIR") or self._core_properties.get("CACHE_DIR")
        if cache_dir:
            return self._compile_cached(model, parsed, dev, ctx, str(cache_dir))
        source = None if isinstance(model, Model) else self._rereader(model)
        model = model if isinstance(model, Model) else self.read_model(model)
        clone = model.clone()
        # Called from here, not from a helper: devices warn with a stacklevel that points at the
        # caller of compile_model (HETERO's fallback warning, AUTO's).
        executable = dev.compile_model(clone, ctx)
        return CompiledModel(self, clone, executable, parsed.full, ctx.config,
                             source=source if source is not None else model.clone(), explicit=ctx.explicit)

    def _rereader(self, model: str | os.PathLike[str] | bytes) -> Callable[[], Model]:
        """How export_model gets the source of a model compiled from a file or bytes: reading it
        again (only if the file is unchanged) instead of keeping its weights alive."""
        if not isinstance(model, (str, os.PathLike)):
            data = model
            return lambda: self.read_model(data)
        path = Path(model)
        stamp = file_stamp(path)

        def reread() -> Model:
            if file_stamp(path) != stamp:
                raise ModelFormatError(f"'{path}' (or a file beside it) changed since the model was compiled; "
                                       "export_model needs the model as compiled: compile it again")
            return self.read_model(path)
        return reread

    def _compile(self, model: Model, parsed: DeviceName, dev: Device, ctx: CompileContext, *,
                 payload: bytes | None = None, loaded_from_cache: bool = False,
                 source: Callable[[], Model] | None = None) -> CompiledModel:
        # The device gets a clone it may transform freely; export_model gets another (structure
        # only, constant arrays shared) unless the model can be read again.
        clone = model.clone()
        executable = dev.import_compiled(clone, payload, ctx) if payload is not None else None
        if executable is None:
            executable = dev.compile_model(clone, ctx)
        return CompiledModel(self, clone, executable, parsed.full, ctx.config,
                             source=source if source is not None else model.clone(),
                             loaded_from_cache=loaded_from_cache, explicit=ctx.explicit)

    def _compile_cached(self, model: Model | str | os.PathLike[str] | bytes, parsed: DeviceName, dev: Device,
                        ctx: CompileContext, cache_dir: str) -> CompiledModel:
        cache = CompileCache(cache_dir)
        if isinstance(model, Model):
            identity = "model:" + model_hash(model)
            versions = relevant_versions(self.plugins, model, parsed.full)
        else:
            # A file or bytes: keyed without reading it, so a hit skips the frontend. Any plugin
            # may take part in reading it, so all their versions are in the key.
            identity = (file_identity(Path(model)) if isinstance(model, (str, os.PathLike))
                        else "bytes:" + hashlib.sha256(model).hexdigest())
            versions = loaded_versions(self.plugins)
        key = cache_key(identity, parsed.full, ctx.config, versions)
        self.cache_stats.last_key = key
        data = cache.load(key)
        if data is not None:
            try:
                blob = Blob.from_bytes(data, f"cache entry '{cache.path(key)}'")
                compiled = self._from_blob(blob, parsed, dev, ctx, loaded_from_cache=True)
            except OpforgeError as err:
                self.cache_stats.errors += 1
                warnings.warn(f"compile cache entry '{cache.path(key)}' is unusable ({err}); compiling again",
                              CacheWarning, stacklevel=3)
            else:
                self.cache_stats.hits += 1
                return compiled
        self.cache_stats.misses += 1
        source = None if isinstance(model, Model) else self._rereader(model)
        model = model if isinstance(model, Model) else self.read_model(model)
        compiled = self._compile(model, parsed, dev, ctx, source=source)
        try:
            cache.store(key, compiled.export_bytes(model))
        except (OSError, OpforgeError) as err:
            # e.g. a custom op without an installed plugin cannot be written as IR: no cache entry
            self.cache_stats.errors += 1
            warnings.warn(f"compile cache: could not store '{cache.path(key)}' ({type(err).__name__}: {err})",
                          CacheWarning, stacklevel=3)
        else:
            self.cache_stats.stores += 1
        return compiled

    def import_model(self, model_stream: bytes | str | os.PathLike[str] | IO[bytes], device_name: str | None = None,
                     config: Mapping[str, Any] | None = None) -> CompiledModel:
        """A compiled model from what :meth:`CompiledModel.export_model` wrote (bytes, a path or
        a binary stream). The blob's versions of opforge and of the plugins it depends on must be
        the installed ones; ``device_name`` (default: the blob's) must be the blob's device;
        ``config`` overrides the blob's compile config.

        The properties the exporting compile set keep their values; those it left at the device's
        defaults take this host's defaults (a CPU model compiled without a precision runs in this
        host's default precision, bf16 or f32, not in the exporting host's)."""
        data, label = read_source(model_stream)
        blob = Blob.from_bytes(data, label)
        check_versions(label, blob.versions, loaded_versions(self.plugins))
        if device_name is not None and parse_device_name(device_name).full != parse_device_name(blob.device).full:
            raise DeviceNotFoundError(
                f"{label} was compiled for {blob.device}, not {device_name}: import it with device "
                f"'{blob.device}', or compile the model again for {device_name}")
        parsed, dev = self._resolve(blob.device)
        chosen = blob.chosen_config()
        overrides = dict(config or {})
        ctx = self._context(parsed, {**chosen, **overrides})
        try:
            return self._from_blob(blob, parsed, dev, ctx)
        except PropertyError as err:
            # e.g. INFERENCE_PRECISION_HINT=bf16 chosen on a bf16 host, imported on one without
            kept = {k: v for k, v in chosen.items() if k not in {str(o).upper() for o in overrides}}
            settings = ", ".join(f"{k}={v}" for k, v in sorted(kept.items())) or "none"
            raise PropertyError(
                f"{label} cannot be imported on this host: {str(err).rstrip('.')}. Its compile set {settings}; "
                "import it with "
                f"config={{...}} overriding the setting this host refuses (e.g. "
                f"config={{'INFERENCE_PRECISION_HINT': 'f32'}}), or compile the model again for {blob.device} "
                "without that setting (or with one this host supports) and export it again") from err

    def _from_blob(self, blob: Blob, parsed: DeviceName, dev: Device, ctx: CompileContext, *,
                   loaded_from_cache: bool = False) -> CompiledModel:
        from opforge.ir.reader import read_ir

        model = read_ir(blob.xml, blob.weights, self.plugins)
        payload = blob.payload
        if payload is not None and any(k in ctx.config and ctx.config[k] != blob.config.get(k) for k in blob.defaulted):
            # The payload was compiled for the exporting host's default of a property this host
            # defaults otherwise (CPU precision): compile the IR again for this host's.
            payload = None
        return self._compile(model, parsed, dev, ctx, payload=payload, loaded_from_cache=loaded_from_cache)

    def query_model(self, model: Model, device_name: str,
                    config: Mapping[str, Any] | None = None) -> dict[str, str]:
        """``{node name: device}`` for every node ``device_name`` can run."""
        parsed, dev = self._resolve(device_name)
        return dev.query_model(model, self._context(parsed, config))

    def _context(self, parsed: DeviceName, config: Mapping[str, Any] | None) -> CompileContext:
        merged, explicit = self._table(parsed.base).merged_with_explicit(config)
        return CompileContext(device_name=parsed.full, config=merged, plugins=self.plugins, core=self,
                              explicit=explicit)

    def get_versions(self, device_name: str) -> dict[str, str]:
        base = parse_device_name(device_name).base
        reg = self.plugins.devices.registration(base)
        if reg is None:
            raise DeviceNotFoundError(self._not_found_message(base))
        return {base: f"{reg.plugin}"}

    def extension_files(self, device_name: str) -> dict[str, str]:
        """The files a custom-op package needs to build kernels for ``device_name`` (see
        :meth:`~opforge.runtime.device.Device.extension_files`)."""
        return dict(self._device(parse_device_name(device_name).base).extension_files())

    def device_plugins(self) -> Sequence[str]:
        return self._device_names()

    def meta_devices(self) -> list[str]:
        """Installed meta devices (HETERO...), usable as ``HETERO:GPU,CPU``."""
        out = []
        for base in self._device_names():
            try:
                if self._device(base).is_meta:
                    out.append(base)
            except Exception:  # noqa: BLE001 - listing must survive a broken plugin
                continue
        return out
