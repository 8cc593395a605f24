"""Finding, loading and calling plugins.

Entry points of the ``opforge`` group are loaded one at a time: a plugin that fails to import or
register is reported (distribution, version, reason) while the rest load. Each hook
implementation is called on its own, so one plugin raising neither stops the others nor leaves
half of its registrations behind; the exception is wrapped once in a
:class:`~opforge.errors.PluginHookError` naming plugin, version and hook.

Environment:

``OPFORGE_DISABLE_PLUGIN_AUTOLOAD=1``
    load only the built-in plugins (installed packages are ignored).
``OPFORGE_LOAD_PLUGINS=a,b``
    load only these entry points (by entry-point or distribution name); empty loads none.
``OPFORGE_STRICT_PLUGINS=1``
    raise on the first broken or conflicting plugin instead of warning.
``OPFORGE_TRACE_PLUGINS=1``
    print every hook call to stderr.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata as md
import os
import re
import sys
import threading
import time
import warnings
from collections.abc import Callable
from typing import Any

import pluggy

from opforge import hookspecs
from opforge.errors import (
    PluginConflictError,
    PluginHookError,
    PluginLoadError,
    PluginValidationError,
)
from opforge.op import Op
from opforge.plugins.registry import OpRegistry, PluginInfo, Registry

ENTRY_POINT_GROUP = "opforge"

#: A plugin that defines hooks of its own, for other plugins to implement (HETERO's
#: ``opforge_select_partition_policy``), names the object holding their ``@hookspec`` functions
#: in this module attribute; they are added with pluggy's ``add_hookspecs`` before the plugin
#: registers, and such plugins register before the others.
HOOKSPECS_ATTRIBUTE = "OPFORGE_HOOKSPECS"


def plugin_hookspecs(module: Any) -> Any | None:
    """The hookspecs a plugin module declares (``OPFORGE_HOOKSPECS``), or None."""
    return getattr(module, HOOKSPECS_ATTRIBUTE, None)

#: Built-in features, registered exactly like third-party plugins.
BUILTIN_PLUGINS: tuple[str, ...] = (
    "opforge.builtins.standard_opset",
    "opforge.builtins.ir_frontend",
    "opforge.builtins.standard_transformations",
    "opforge.builtins.auto_device",
)


#: what ``opforge_register_commands`` accepts as a subcommand name
_COMMAND_NAME = re.compile(r"[a-z][a-z0-9-]*")


@dataclasses.dataclass(frozen=True)
class PluginCommand:
    """A subcommand of ``opforge`` contributed through ``opforge_register_commands``."""

    name: str
    run: Callable[[Any], int]
    help: str = ""
    add_arguments: Callable[[Any], None] | None = None


def _canon(name: str) -> str:
    """Distribution names compare like pip compares them: case and -_. do not matter."""
    return re.sub(r"[-_.]+", "-", name).lower()


def is_user_interrupt(err: BaseException) -> bool:
    """Whether an exception from plugin code must propagate: only the user's Ctrl-C. Everything
    else (``sys.exit()`` in an import, other ``BaseException`` subclasses) marks the plugin broken."""
    return isinstance(err, KeyboardInterrupt)


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


@dataclasses.dataclass
class PluginRecord:
    """One plugin as ``opforge plugins`` shows it."""

    info: PluginInfo
    status: str  # "loaded" | "failed" | "disabled"
    error: str | None = None
    module: Any = None
    entry_point: str | None = None


class PluginWarning(UserWarning):
    """A plugin could not be loaded or registered; opforge goes on without it."""


class PluginSystem:
    """The loaded plugins and the registries built from their hooks.

    One is built lazily per process (:func:`default_plugins`); a :class:`opforge.Core` works on
    a copy so that ``add_extension`` stays local to it.
    """

    def __init__(self, *, autoload: bool | None = None, strict: bool | None = None,
                 allow: list[str] | None = None, builtins: tuple[str, ...] = BUILTIN_PLUGINS) -> None:
        self.strict = _env_flag("OPFORGE_STRICT_PLUGINS") if strict is None else strict
        self.trace = _env_flag("OPFORGE_TRACE_PLUGINS")
        self.pm = pluggy.PluginManager("opforge")
        self.pm.add_hookspecs(hookspecs)
        self.records: dict[str, PluginRecord] = {}
        self.ops = OpRegistry()
        self.frontends: Registry[Any] = Registry("frontend")
        self.extractors: Registry[Any] = Registry("extractor")
        self.conversion_extensions: Registry[Any] = Registry("conversion extension")
        self.transformations: Registry[Any] = Registry("transformation")
        self.devices: Registry[Callable[[], Any]] = Registry("device")
        self.kernels: Registry[Any] = Registry("kernel")
        self.commands: Registry[PluginCommand] = Registry("command")
        self.failures: list[str] = []
        self._lock = threading.RLock()
        for mod in builtins:
            self.register_module(importlib.import_module(mod), PluginInfo(mod.rsplit(".", 1)[-1], builtin=True))
        if autoload is None:
            autoload = not _env_flag("OPFORGE_DISABLE_PLUGIN_AUTOLOAD")
        if autoload:
            self.load_entry_points(allow)

    # --- loading -----------------------------------------------------------------------------
    def load_entry_points(self, allow: list[str] | None = None) -> None:
        env = os.environ.get("OPFORGE_LOAD_PLUGINS")
        if allow is None and env is not None:
            allow = [a.strip() for a in env.split(",") if a.strip()]
        eps = sorted(md.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name)
        imported: list[tuple[Any, PluginInfo, str]] = []
        for ep in eps:
            dist = ep.dist.name if ep.dist is not None else None
            version = ep.dist.version if ep.dist is not None else None
            info = PluginInfo(ep.name, dist, version)
            if allow is not None and not ({_canon(ep.name), _canon(dist or "")} & {_canon(a) for a in allow}):
                self.records[ep.name] = PluginRecord(info, "disabled", "not in OPFORGE_LOAD_PLUGINS",
                                                     entry_point=ep.value)
                continue
            if ep.name in self.records and self.records[ep.name].status == "loaded":
                continue
            try:
                module = ep.load()
            except BaseException as err:
                # sys.exit() in a plugin's import (SystemExit) must not end every opforge program;
                # only the user's Ctrl-C goes through.
                if is_user_interrupt(err):
                    raise
                self._fail(info, f"import of '{ep.value}' failed: {type(err).__name__}: {err}", err,
                           entry_point=ep.value)
                continue
            imported.append((module, info, ep.value))
        # Plugins that declare hooks register first, so that the plugins implementing those hooks
        # find the specs whatever their entry-point names sort as (stable: name order otherwise).
        imported.sort(key=lambda t: plugin_hookspecs(t[0]) is None)
        for module, info, value in imported:
            self.register_module(module, info, entry_point=value)

    def register_module(self, module: Any, info: PluginInfo, *, entry_point: str | None = None) -> bool:
        """Register a plugin module/object and collect what it provides. False if it failed."""
        with self._lock:
            if self.pm.is_registered(module):
                # The same module under another name (a second entry point, or add_extension of an
                # installed plugin's module): registering it twice would make it conflict with itself.
                return True
            try:
                self._reject_wrappers(module, info)
                specs = plugin_hookspecs(module)
                if specs is not None:
                    self.pm.add_hookspecs(specs)
                self.pm.register(module, name=info.name)
                self.pm.check_pending()
            except (pluggy.PluginValidationError, PluginValidationError, ValueError) as err:
                # Only undo what this call did: never unregister a plugin registered earlier.
                if self.pm.get_name(module) == info.name:
                    self.pm.unregister(module)
                self._fail(info, f"invalid hook implementation: {err}", err, entry_point=entry_point)
                return False
            self.records[info.name] = PluginRecord(info, "loaded", module=module, entry_point=entry_point)
            errors = self._collect(module, info)
            if errors:
                # A plugin with a failing hook is disabled as a whole: half a plugin (its op but
                # not the kernel for it, say) would fail later in a more confusing place.
                for reg in self._registries():
                    reg.remove_plugin(info)
                self.pm.unregister(module)
                self.records[info.name] = PluginRecord(info, "failed", "; ".join(errors),
                                                       entry_point=entry_point)
                return False
            return True

    @staticmethod
    def _reject_wrappers(module: Any, info: PluginInfo) -> None:
        # Registration hooks are called one implementation at a time (so one plugin's failure
        # is contained); around-advice would silently never run, so refuse it loudly.
        for name in dir(module):
            if not name.startswith("opforge_"):
                continue
            opts = getattr(getattr(module, name, None), "opforge_impl", None)
            if isinstance(opts, dict) and (opts.get("wrapper") or opts.get("hookwrapper")):
                raise PluginValidationError(
                    f"plugin {info}: {name} is declared as a wrapper; opforge's registration hooks "
                    "do not support wrapper=True/hookwrapper=True"
                )

    def _registries(self) -> list[Registry[Any]]:
        return [self.ops, self.frontends, self.extractors, self.conversion_extensions,
                self.transformations, self.devices, self.kernels, self.commands]

    def _fail(self, info: PluginInfo, reason: str, err: BaseException | None,
              *, entry_point: str | None = None) -> None:
        msg = f"plugin {info} could not be loaded: {reason}"
        self.records[info.name] = PluginRecord(info, "failed", reason, entry_point=entry_point)
        self.failures.append(msg)
        if self.strict:
            raise PluginLoadError(msg) from err
        warnings.warn(msg + " (opforge goes on without it; set OPFORGE_STRICT_PLUGINS=1 to make "
                      "this an error)", PluginWarning, stacklevel=3)

    # --- collection --------------------------------------------------------------------------
    def _collect(self, module: Any, info: PluginInfo) -> list[str]:
        """Call the plugin's hooks; returns the errors (empty when everything registered)."""
        errors: list[str] = []
        for hook_name, registry_adder in self._adders().items():
            caller = getattr(self.pm.hook, hook_name)
            for impl in caller.get_hookimpls():
                if impl.plugin is not module:
                    continue
                pending: list[tuple[Registry[Any], Any, Any, int]] = []
                try:
                    self.call_impl(impl, hook_name, info, register=registry_adder(pending, info))
                except (PluginHookError, PluginValidationError) as err:
                    errors.append(str(err))
                    self.failures.append(str(err))
                    if self.strict:
                        raise
                    warnings.warn(str(err) + " (the plugin is disabled; opforge goes on without it)",
                                  PluginWarning, stacklevel=4)
                    continue
                for registry, key, value, priority in pending:
                    registry.add(key, value, info, priority)
        if self.strict:
            for c in self.conflicts():
                raise c
        return errors

    def call_impl(self, impl: Any, hook_name: str, info: PluginInfo, **kwargs: Any) -> Any:
        """Call one hook implementation, wrapping anything it raises once."""
        args = {k: v for k, v in kwargs.items() if k in impl.argnames}
        t0 = time.perf_counter()
        try:
            return impl.function(**args)
        except (PluginValidationError, PluginHookError):
            raise
        except BaseException as err:
            if is_user_interrupt(err):
                raise
            # Also SystemExit and other BaseExceptions: a plugin never ends the program.
            raise PluginHookError(
                f"plugin {info} raised in hook {hook_name}: {type(err).__name__}: {err}"
            ) from err
        finally:
            if self.trace:
                print(f"[opforge] {hook_name} -> {info} ({(time.perf_counter() - t0) * 1e3:.2f} ms)",
                      file=sys.stderr)

    def _adders(self) -> dict[str, Callable[[list[Any], PluginInfo], Callable[..., None]]]:
        return {
            "opforge_register_ops": self._op_adder,
            "opforge_register_frontends": self._frontend_adder,
            "opforge_register_extractors": self._extractor_adder,
            "opforge_register_conversion_extensions": self._conversion_adder,
            "opforge_register_transformations": self._transformation_adder,
            "opforge_register_devices": self._device_adder,
            "opforge_register_kernels": self._kernel_adder,
            "opforge_register_commands": self._command_adder,
        }

    def _op_adder(self, pending: list[Any], info: PluginInfo) -> Callable[..., None]:
        def register(op_class: type[Op], *, priority: int = 0) -> None:
            if not (isinstance(op_class, type) and issubclass(op_class, Op)) or not getattr(op_class, "type_name", None):
                raise PluginValidationError(
                    f"plugin {info}: opforge_register_ops registered {op_class!r}; expected a subclass "
                    "of opforge.Op with a type_name"
                )
            pending.append((self.ops, op_class.key(), op_class, priority))
        return register

    def _frontend_adder(self, pending: list[Any], info: PluginInfo) -> Callable[..., None]:
        def register(frontend: Any, *, priority: int = 0) -> None:
            from opforge.frontend.base import Frontend

            if not isinstance(frontend, Frontend):
                raise PluginValidationError(
                    f"plugin {info}: opforge_register_frontends registered {frontend!r}; expected an "
                    "instance of opforge.frontend.Frontend"
                )
            pending.append((self.frontends, frontend.name, frontend, priority))
        return register

    def _extractor_adder(self, pending: list[Any], info: PluginInfo) -> Callable[..., None]:
        def register(framework: str, op_type: str, extractor: Any, *, domain: str = "",
                     priority: int = 0) -> None:
            if not callable(getattr(extractor, "extract", None)):
                raise PluginValidationError(
                    f"plugin {info}: extractor for {framework} op '{op_type}' has no extract(node) method"
                )
            from opforge.frontend.extensions import normalize_domain

            fw = framework.lower()
            pending.append((self.extractors, (fw, normalize_domain(fw, domain), op_type), extractor, priority))
        return register

    def _conversion_adder(self, pending: list[Any], info: PluginInfo) -> Callable[..., None]:
        def register(extension: Any, *, priority: int = 0) -> None:
            from opforge.frontend.extensions import FrontendExtension

            if not isinstance(extension, FrontendExtension):
                raise PluginValidationError(
                    f"plugin {info}: opforge_register_conversion_extensions registered {extension!r}; "
                    "expected an OpExtension or ConversionExtension"
                )
            pending.append((self.conversion_extensions, extension.key, extension, priority))
        return register

    def _transformation_adder(self, pending: list[Any], info: PluginInfo) -> Callable[..., None]:
        def register(transformation: Any, *, priority: int = 0) -> None:
            from opforge.transformations.base import Transformation

            if not isinstance(transformation, Transformation):
                raise PluginValidationError(
                    f"plugin {info}: opforge_register_transformations registered {transformation!r}; "
                    "expected an instance of opforge.transformations.Transformation"
                )
            pending.append((self.transformations, transformation.name, transformation, priority))
        return register

    def _device_adder(self, pending: list[Any], info: PluginInfo) -> Callable[..., None]:
        def register(name: str, factory: Callable[[], Any], *, priority: int = 0) -> None:
            if not isinstance(name, str) or not name or not callable(factory):
                raise PluginValidationError(
                    f"plugin {info}: opforge_register_devices needs register(name: str, factory: callable)"
                )
            pending.append((self.devices, name.upper(), factory, priority))
        return register

    def _kernel_adder(self, pending: list[Any], info: PluginInfo) -> Callable[..., None]:
        def register(device: str, op: str | type[Op], kernel: Any, *, version: str | None = None,
                     priority: int = 0) -> None:
            ver: str | None
            if isinstance(op, type) and issubclass(op, Op):
                type_name, ver = op.type_name, version or op.version
            elif isinstance(op, str):
                type_name, ver = op, version
            else:
                raise PluginValidationError(
                    f"plugin {info}: opforge_register_kernels: op must be an op type name or Op class, "
                    f"got {op!r}"
                )
            pending.append((self.kernels, (device.upper(), type_name, ver), kernel, priority))
        return register

    def _command_adder(self, pending: list[Any], info: PluginInfo) -> Callable[..., None]:
        def register(name: str, run: Callable[[Any], int], *, help: str = "",
                     add_arguments: Callable[[Any], None] | None = None, priority: int = 0) -> None:
            if not isinstance(name, str) or not _COMMAND_NAME.fullmatch(name):
                raise PluginValidationError(
                    f"plugin {info}: opforge_register_commands: command name {name!r} must be lower-case "
                    "letters, digits and '-', starting with a letter"
                )
            if not callable(run) or (add_arguments is not None and not callable(add_arguments)):
                raise PluginValidationError(
                    f"plugin {info}: opforge_register_commands: command '{name}' needs a callable run(args) "
                    "and, if given, a callable add_arguments(parser)"
                )
            pending.append((self.commands, name, PluginCommand(name, run, str(help), add_arguments), priority))
        return register

    def first_result(self, hook_name: str, *, failures: list[PluginHookError] | None = None,
                     **kwargs: Any) -> tuple[Any, PluginInfo] | None:
        """Call a ``firstresult`` hook one implementation at a time (newest plugin first, as pluggy
        would), wrapping what each raises; returns the first non-None answer and who gave it.
        With ``failures``, an implementation that raises is appended there and skipped (the
        caller reports it) instead of ending the call. A hook nobody declared answers None."""
        caller = getattr(self.pm.hook, hook_name, None)
        if caller is None:
            return None
        for impl in reversed(caller.get_hookimpls()):
            name = self.pm.get_name(impl.plugin) or "?"
            rec = self.records.get(name)
            info = rec.info if rec is not None else PluginInfo(name)
            try:
                value = self.call_impl(impl, hook_name, info, **kwargs)
            except PluginHookError as err:
                if failures is None:
                    raise
                failures.append(err)
                continue
            if value is not None:
                return value, info
        return None

    # --- queries -----------------------------------------------------------------------------
    def conflicts(self) -> list[PluginConflictError]:
        out: list[PluginConflictError] = []
        for reg in self._registries():
            out.extend(reg.conflicts())
        return out

    def kernels_for(self, device: str) -> dict[tuple[str, str | None], Any]:
        """Kernels registered for ``device``: ``{(type_name, version): kernel}``."""
        dev = device.upper()
        return {(k[1], k[2]): v for k, v in self.kernels.items() if k[0] == dev}  # type: ignore[index]

    def provides(self, name: str) -> dict[str, list[str]]:
        """What the plugin called ``name`` registered, by kind (for ``opforge plugins``)."""
        rec = self.records[name]
        info = rec.info

        def fmt(keys: list[Any]) -> list[str]:
            return ["/".join(str(p) for p in k if p not in (None, "")) if isinstance(k, tuple) else str(k)
                    for k in keys]

        out = {
            "ops": fmt(self.ops.provided_by(info)),
            "frontends": fmt(self.frontends.provided_by(info)),
            "extractors": fmt(self.extractors.provided_by(info)),
            "conversion_extensions": fmt(self.conversion_extensions.provided_by(info)),
            "transformations": fmt(self.transformations.provided_by(info)),
            "devices": fmt(self.devices.provided_by(info)),
            "commands": fmt(self.commands.provided_by(info)),
        }
        kernels: dict[str, list[str]] = {}
        for key in self.kernels.provided_by(info):
            if isinstance(key, tuple):
                dev, t, v = key
                kernels.setdefault(str(dev), []).append(t if v is None else f"{t}/{v}")
        out["kernels"] = kernels  # type: ignore[assignment]
        return out

    def copy(self) -> PluginSystem:
        """A copy whose registries can grow (``Core.add_extension``) without touching this one."""
        new = object.__new__(PluginSystem)
        new.strict, new.trace = self.strict, self.trace
        # Its own pluggy manager: plugins added to the copy must not leak into this one.
        new.pm = pluggy.PluginManager("opforge")
        new.pm.add_hookspecs(hookspecs)
        loaded = [rec for rec in self.records.values() if rec.status == "loaded" and rec.module is not None]
        for rec in loaded:
            specs = plugin_hookspecs(rec.module)
            if specs is not None:
                new.pm.add_hookspecs(specs)
        for rec in loaded:
            new.pm.register(rec.module, name=rec.info.name)
        new.records = dict(self.records)
        new.failures = list(self.failures)
        new._lock = threading.RLock()
        for attr in ("ops", "frontends", "extractors", "conversion_extensions", "transformations",
                     "devices", "kernels", "commands"):
            setattr(new, attr, getattr(self, attr).copy())
        return new

    def add_plugin_object(self, obj: Any, name: str) -> bool:
        """Register a module or object given at run time (``Core.add_extension``)."""
        if name in self.records and self.records[name].status == "loaded":
            return True
        return self.register_module(obj, PluginInfo(name))


_default: PluginSystem | None = None
_default_lock = threading.Lock()


def default_plugins() -> PluginSystem:
    """The process-wide plugin system, loaded on first use."""
    global _default
    with _default_lock:
        if _default is None:
            _default = PluginSystem()
        return _default


def reset_default_plugins() -> None:
    """Forget the process-wide plugin system (tests; after installing a plugin at run time)."""
    global _default
    with _default_lock:
        _default = None
