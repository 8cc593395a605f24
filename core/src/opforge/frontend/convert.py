"""``opforge.convert_model``: read any supported model format into a core :class:`Model`.

The frontend is picked through the plugin system (every installed frontend is asked whether it
reads the file or bytes); ``extension=`` accepts extension objects, mapping files, module paths
and plugin names, and applies them to this one conversion only.
"""

from __future__ import annotations

import importlib
import importlib.metadata as md
import os
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from opforge.errors import ExtensionError, ModelFormatError, PluginLoadError
from opforge.frontend.base import ConversionOptions, Frontend, ModelSource
from opforge.frontend.extensions import FrontendExtension, FrontExtractorOp, MappingFile
from opforge.graph import Model
from opforge.plugins.manager import ENTRY_POINT_GROUP, PluginSystem, default_plugins
from opforge.plugins.registry import PluginInfo
from opforge.shape import PartialShape

ModelInput = str | os.PathLike[str] | bytes | bytearray | memoryview


def _flatten(extension: Any) -> list[Any]:
    if extension is None:
        return []
    if isinstance(extension, (list, tuple)):
        out: list[Any] = []
        for e in extension:
            out.extend(_flatten(e))
        return out
    return [extension]


def _module_extensions(module: types.ModuleType) -> list[FrontendExtension]:
    """Extension objects a module exposes at top level (directly or in an ``EXTENSIONS`` list)."""
    found: list[FrontendExtension] = []
    for v in vars(module).values():
        if isinstance(v, FrontendExtension):
            found.append(v)
        elif isinstance(v, (list, tuple)) and v and all(isinstance(x, FrontendExtension) for x in v):
            found.extend(v)
    return found


def resolve_extensions(extension: Any, plugins: PluginSystem) -> tuple[PluginSystem, list[Any]]:
    """Turn ``extension=`` into (the plugin system to convert with, user extension objects).

    Modules and plugin names become plugins of a private copy of ``plugins``, so they affect this
    conversion only; extension objects and mapping files are returned in the order given."""
    user: list[Any] = []
    session = plugins
    copied = False

    def own() -> PluginSystem:
        nonlocal session, copied
        if not copied:
            session = plugins.copy()
            copied = True
        return session

    for item in _flatten(extension):
        if isinstance(item, (FrontendExtension, MappingFile)) or (
                isinstance(item, type) and issubclass(item, FrontExtractorOp)):
            user.append(item)
        elif isinstance(item, types.ModuleType):
            own().add_plugin_object(item, item.__name__)
            user.extend(_module_extensions(item))
        elif isinstance(item, (str, os.PathLike)):
            text = os.fspath(item)
            if text.lower().endswith((".json", ".xml")) or Path(text).is_file():
                user.append(MappingFile.load(text))
                continue
            eps = [ep for ep in md.entry_points(group=ENTRY_POINT_GROUP)
                   if ep.name == text or (ep.dist is not None and ep.dist.name == text)]
            if eps:
                for ep in eps:
                    rec = plugins.records.get(ep.name)
                    if rec is not None and rec.status == "loaded":
                        continue
                    try:
                        module = ep.load()
                    except Exception as err:
                        raise PluginLoadError(f"plugin '{text}' ({ep.value}) could not be imported: "
                                              f"{type(err).__name__}: {err}") from err
                    dist = ep.dist.name if ep.dist is not None else None
                    ver = ep.dist.version if ep.dist is not None else None
                    own().register_module(module, PluginInfo(ep.name, dist, ver), entry_point=ep.value)
                continue
            try:
                module = importlib.import_module(text)
            except ImportError as err:
                raise ExtensionError(
                    f"extension '{text}' is neither a mapping file, an installed plugin (entry point of "
                    f"group '{ENTRY_POINT_GROUP}') nor an importable module: {err}"
                ) from None
            own().add_plugin_object(module, text)
            user.extend(_module_extensions(module))
        else:
            raise ExtensionError(
                f"unsupported extension {item!r} ({type(item).__name__}); pass OpExtension/"
                "ConversionExtension objects, FrontExtractorOp subclasses, a mapping file path (.json or "
                "CustomLayersMapping .xml), "
                "a module path or a plugin name"
            )
    return session, user


def _input_shapes(input: Any) -> dict[str, PartialShape]:
    if input is None:
        return {}
    if not isinstance(input, Mapping):
        raise ExtensionError(
            f"input= expects a dict {{input name: shape}}, got {type(input).__name__}"
        )
    out: dict[str, PartialShape] = {}
    for k, v in input.items():
        if isinstance(v, str):
            out[str(k)] = PartialShape.parse(v)
        elif isinstance(v, PartialShape):
            out[str(k)] = v
        else:
            out[str(k)] = PartialShape(v)
    return out


def find_frontend(source: ModelSource, plugins: PluginSystem, framework: str | None = None) -> Frontend:
    """The frontend that reads ``source``: by ``framework`` name, else the first (by priority,
    then name) whose ``supports`` says yes."""
    entries = []
    names = plugins.frontends.keys()  # a Registry is not iterable: keys() is its sorted key list
    for key in names:
        reg = plugins.frontends.registration(key)
        if reg is not None:
            entries.append((-reg.priority, str(key), reg.value))
    entries.sort(key=lambda e: (e[0], e[1]))
    if framework is not None:
        for _, name, fe in entries:
            if name == framework:
                return fe  # type: ignore[no-any-return]
        raise ModelFormatError(
            f"no frontend named '{framework}' is installed; installed: "
            + (", ".join(n for _, n, _ in entries) or "none")
            + ". Install the frontend package (e.g. pip install opforge-onnx)."
        )
    for _, _, fe in entries:
        try:
            ok = fe.supports(source)
        except Exception:  # noqa: BLE001 - supports() must not raise; a broken one just says no
            ok = False
        if ok:
            return fe  # type: ignore[no-any-return]
    reads = "; ".join(f"{n} ({', '.join(fe.suffixes) or 'by content'})" for _, n, fe in entries)
    raise ModelFormatError(
        f"{source.label}: no installed frontend reads this model; installed frontends: {reads or 'none'}. "
        "Install the frontend for its format (e.g. pip install opforge-onnx)."
    )


def convert_model(
    model: ModelInput,
    *,
    extension: Any = None,
    allow_unsupported: bool = False,
    input: Mapping[str, Any] | None = None,
    framework: str | None = None,
    plugins: PluginSystem | None = None,
    weights: str | os.PathLike[str] | bytes | None = None,
) -> Model:
    """Convert a model file or bytes into an opforge :class:`Model`.

    :param extension: OpExtension/ConversionExtension objects, FrontExtractorOp subclasses, mapping
        file paths (.json, or a CustomLayersMapping .xml for framework fallback), module paths or
        plugin names (one or a list), applied in that order before plugin-registered extensions.
    :param allow_unsupported: keep ops nobody converts as ``FrameworkNode`` placeholders.
    :param input: input shapes that override the model's, ``{"x": [1, 3, 224, 224]}``.
    :param framework: force a frontend by name (``"onnx"``) instead of detecting it.
    """
    base = plugins if plugins is not None else default_plugins()
    session, user = resolve_extensions(extension, base)
    source = ModelSource.of(model, weights)
    fe = find_frontend(source, session, framework)
    options = ConversionOptions(extensions=user, allow_unsupported=allow_unsupported,
                                input_shapes=_input_shapes(input))
    return fe.read(source, session, options)


def supported_frameworks(plugins: PluginSystem | None = None) -> list[str]:
    p = plugins if plugins is not None else default_plugins()
    names = p.frontends.keys()
    return [str(k) for k in names]


__all__ = ["convert_model", "find_frontend", "resolve_extensions", "supported_frameworks"]
