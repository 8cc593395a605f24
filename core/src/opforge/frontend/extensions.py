"""Frontend extensions: how a framework op becomes opforge ops.

Two generations of OpenVINO's API, both available on every frontend:

* **Frontend extensions** -- :class:`OpExtension` (one framework op -> one op, attributes mapped
  by name, by a rename map or to constants) and :class:`ConversionExtension` (a function that
  builds any sub-graph from a :class:`~opforge.frontend.node_context.NodeContext`).
* **Model-Optimizer style** -- an *extractor* (:class:`FrontExtractorOp`: framework node ->
  op class + attributes) registered through ``opforge_register_extractors``, paired with an op
  class (an :class:`opforge.Op` with shape inference) registered through ``opforge_register_ops``.

Which one converts a node (the first match wins, as in the Model Optimizer):

1. a user **mapping file**: ``extension="ops.json"`` (see :func:`load_mapping_file`) or a
   ``CustomLayersMapping.xml`` (framework fallback, see :mod:`opforge.frontend.custom_layers`);
2. **extensions**: the user's ``extension=`` objects in the order given, then those plugins
   registered through ``opforge_register_conversion_extensions``;
3. **extractors** registered through ``opforge_register_extractors``;
4. the frontend's **standard translators**: ConversionExtensions a frontend registers at
   :data:`STANDARD_PRIORITY`, so that any other registration overrides them without a conflict.

Keys are ``(framework, domain, op_type)``. An extension whose ``framework`` is ``""`` applies to
every frontend. For ONNX the domain matters (``com.example::Swish`` is not ``Swish``);
``"ai.onnx"`` and ``""`` are the same default domain.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import os
import typing
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import pydantic
from pydantic import TypeAdapter

from opforge.element_type import Type
from opforge.errors import (
    AttributeValidationError,
    ConversionError,
    ExtensionError,
    ModelFormatError,
    ModelValidationError,
    UnsupportedOpError,
)
from opforge.graph import Node, Output
from opforge.op import Op
from opforge.shape import PartialShape

if TYPE_CHECKING:
    from opforge.frontend.node_context import NodeContext
    from opforge.plugins.manager import PluginSystem

#: The priority frontends register their own translators at: lower than anything a user or
#: another plugin registers by default, and below extractors in the lookup order.
STANDARD_PRIORITY = -1000

#: What a conversion function returns: outputs in framework order (None for an output that is
#: not produced), or outputs by name -- a list for a port bound to several values (PaddlePaddle).
ConversionResult = (Sequence[Output | Node | Sequence[Output | Node | None] | None]
                    | Mapping[str, Sequence[Output | Node | None] | Output | Node | None])


def normalize_domain(framework: str, domain: str | None) -> str:
    """ONNX spells its default domain both ``""`` and ``"ai.onnx"``; keys use ``""``."""
    d = (domain or "").strip()
    if framework in ("onnx", "") and d == "ai.onnx":
        return ""
    return d


def key_label(key: tuple[str, str, str]) -> str:
    fw, dom, op = key
    return f"{fw or 'any framework'} op '{dom + '::' if dom else ''}{op}'"


class FrontendExtension:
    """Base class of everything that converts one framework op type.

    ``key`` is ``(framework, domain, op_type)``; ``framework == ""`` matches every frontend."""

    framework: str
    domain: str
    op_type: str

    def __init__(self, op_type: str, *, framework: str | None = None, domain: str | None = "") -> None:
        if not isinstance(op_type, str) or not op_type:
            raise ExtensionError(
                f"{type(self).__name__}: the framework op type must be a non-empty string, got {op_type!r}"
            )
        self.framework = (framework or "").strip().lower()
        self.domain = normalize_domain(self.framework, domain)
        self.op_type = op_type

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.framework, self.domain, self.op_type)

    def convert(self, ctx: NodeContext) -> ConversionResult:
        """Build the opforge nodes for one framework node; outputs in framework order."""
        raise ExtensionError(f"{type(self).__name__} for {key_label(self.key)} defines no convert()")

    def describe(self) -> str:
        return f"{type(self).__name__}({key_label(self.key)})"

    def __repr__(self) -> str:
        return f"<{self.describe()}>"


class ConversionExtension(FrontendExtension):
    """One framework op -> a function that builds any sub-graph.

    ``converter(ctx: NodeContext)`` returns the outputs in the framework op's output order::

        def thresholded_relu(ctx):
            x = ctx.get_input(0)
            alpha = ctx.const(ctx.get_attribute("alpha", 1.0), x.element_type)
            mask = ctx.op("Convert", ctx.op("Greater", x, alpha), destination_type=x.element_type)
            return [ctx.op("Multiply", x, mask)]

        ConversionExtension("ThresholdedRelu", thresholded_relu, framework="onnx")
    """

    def __init__(self, op_type: str, converter: Callable[[NodeContext], ConversionResult], *,
                 framework: str | None = None, domain: str | None = "") -> None:
        super().__init__(op_type, framework=framework, domain=domain)
        if not callable(converter):
            raise ExtensionError(
                f"ConversionExtension for {key_label(self.key)}: converter must be callable "
                f"(ctx: NodeContext) -> list of outputs, got {type(converter).__name__}"
            )
        self.converter = converter

    def convert(self, ctx: NodeContext) -> ConversionResult:
        return self.converter(ctx)

    def describe(self) -> str:
        fn = getattr(self.converter, "__qualname__", type(self.converter).__name__)
        mod = getattr(self.converter, "__module__", "")
        return f"ConversionExtension({key_label(self.key)} -> {mod}.{fn})"


# ============================================================================ OpExtension
def _attr_fields(op_cls: type[Op]) -> dict[str, Any]:
    return dict(op_cls.Attrs.model_fields)


def _standard_op(type_name: str) -> type[Op] | None:
    """The standard op of that name from the opset package (newest version), without touching the
    plugin system: extensions are often built while plugins are still being loaded."""
    from opforge.opset import all_ops

    found = [o for o in all_ops() if o.type_name == type_name]
    if not found:
        return None
    return max(found, key=lambda o: int(o.version[5:]) if o.version[5:].isdigit() else -1)


def _annotation_dtype(annotation: Any) -> Any:
    """What ``NodeContext.get_attribute(dtype=...)`` should decode a framework value to."""
    origin = typing.get_origin(annotation)
    if origin is typing.Union or str(origin) == "<class 'types.UnionType'>":
        non_none = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _annotation_dtype(non_none[0]) if len(non_none) == 1 else None
    if annotation in (Type, PartialShape, bool, int, float, str):
        return annotation
    if origin in (list, tuple) or annotation in (list, tuple):
        return list
    return None


class OpExtension(FrontendExtension):
    """One framework op -> one opforge op, inputs and outputs mapped in order.

    ``OpExtension("Relu", "MyRelu")`` maps framework ``MyRelu`` to the standard ``Relu``;
    ``OpExtension(MyOp)`` maps the framework op of the same name to a custom op class. Every
    attribute of the target is initialised, in this order, from:

    * ``attr_values_map[attr]``, a constant;
    * the framework attribute ``attr_names_map[attr]`` (a rename: target name -> framework name);
    * the framework attribute of the same name;
    * the target's default value.

    Values are copied as they are (no expressions); a value whose type does not fit the target
    attribute is an :class:`~opforge.errors.ExtensionError`. A framework attribute that none of
    these reads (``low`` when the op's attribute is ``lo``) is an :class:`UnmappedAttributeWarning`
    naming it and the likely target; with ``strict=True`` (or ``OPFORGE_STRICT_EXTENSIONS=1``) an
    ``ExtensionError``. List attributes that are meant to be dropped in ``ignore_attributes``.
    For frameworks with named inputs
    and outputs (PaddlePaddle) give ``inputs=[...]`` and ``outputs=[...]``: the framework names
    in the target's port order. A named port bound to several values takes as many consecutive
    ports of the op: ``inputs=["X"]`` on Paddle ``concat`` feeds every ``X`` value to Concat,
    ``outputs=["Out"]`` on ``split`` with three parts takes Split's three outputs.
    """

    def __init__(
        self,
        target: str | type[Op],
        fw_type: str | None = None,
        attr_names_map: Mapping[str, str] | None = None,
        attr_values_map: Mapping[str, Any] | None = None,
        *,
        framework: str | None = None,
        domain: str | None = "",
        inputs: Sequence[str] | None = None,
        outputs: Sequence[str] | None = None,
        version: str | None = None,
        source: str = "",
        strict: bool | None = None,
        ignore_attributes: Sequence[str] = (),
    ) -> None:
        if isinstance(target, type) and issubclass(target, Op):
            target_name = target.type_name
        elif isinstance(target, str) and target:
            target_name = target
        else:
            raise ExtensionError(
                f"OpExtension: target must be an opforge.Op subclass or a registered op type name "
                f"such as 'Relu', got {target!r}"
            )
        super().__init__(fw_type or target_name, framework=framework, domain=domain)
        self.target = target
        self.target_name = target_name
        self.version = version
        self.attr_names_map = dict(attr_names_map or {})
        self.attr_values_map = dict(attr_values_map or {})
        self.inputs = list(inputs) if inputs is not None else None
        self.outputs = list(outputs) if outputs is not None else None
        self.source = source
        self.strict = strict
        self.ignore_attributes = frozenset(ignore_attributes)
        for k, v in self.attr_names_map.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise ExtensionError(
                    f"{self._where()}: attr_names_map maps target attribute names to framework attribute "
                    f"names (str -> str), got {k!r} -> {v!r}"
                )
        both = sorted(set(self.attr_names_map) & set(self.attr_values_map))
        if both:
            raise ExtensionError(
                f"{self._where()}: attribute(s) {', '.join(both)} are both renamed (attr_names_map) and "
                "set to a constant (attr_values_map); keep one"
            )
        self._resolved: type[Op] | None = None
        op_cls = target if isinstance(target, type) else _standard_op(target_name)
        if op_cls is not None:
            # Validate now, so a wrong mapping fails where it is written, not at conversion.
            self._check_target(op_cls)

    def _where(self) -> str:
        src = f" (from {self.source})" if self.source else ""
        return f"OpExtension {key_label(self.key)} -> '{self.target_name}'{src}"

    def _check_target(self, op_cls: type[Op]) -> None:
        fields = _attr_fields(op_cls)
        for name in [*self.attr_names_map, *self.attr_values_map]:
            if name not in fields:
                raise ExtensionError(
                    f"{self._where()}: '{op_cls.type_name}' has no attribute '{name}'; its attributes: "
                    f"{', '.join(fields) or 'none'}"
                )
        hints = typing.get_type_hints(op_cls.Attrs)
        for name, value in self.attr_values_map.items():
            try:
                TypeAdapter(hints.get(name, Any)).validate_python(value)
            except pydantic.ValidationError as err:
                msg = err.errors()[0]["msg"] if err.errors() else str(err)
                raise ExtensionError(
                    f"{self._where()}: attr_values_map['{name}'] = {value!r} ({type(value).__name__}) is "
                    f"incompatible with attribute '{name}' of '{op_cls.type_name}' "
                    f"({getattr(hints.get(name), '__name__', hints.get(name))}): {msg}"
                ) from None
        if self.inputs is not None:
            n = len(self.inputs)
            if n < op_cls.min_inputs or (op_cls.max_inputs is not None and n > op_cls.max_inputs):
                most = op_cls.max_inputs if op_cls.max_inputs is not None else "any number"
                raise ExtensionError(
                    f"{self._where()}: {n} named input(s) given but '{op_cls.type_name}' takes "
                    f"{op_cls.min_inputs} to {most}"
                )

    def resolve(self, registry: Any) -> type[Op]:
        """The target op class from the session's registry, validated once."""
        if isinstance(self.target, type):
            return self.target
        if self._resolved is None:
            try:
                op_cls = registry.get(self.target_name, self.version)
            except UnsupportedOpError as err:
                raise ExtensionError(f"{self._where()}: target op is not available: {err}") from None
            self._check_target(op_cls)
            self._resolved = op_cls
        return self._resolved

    def convert(self, ctx: NodeContext) -> ConversionResult:
        op_cls = self.resolve(ctx.builder.registry)
        hints = typing.get_type_hints(op_cls.Attrs)
        values: dict[str, Any] = {}
        for name, field in _attr_fields(op_cls).items():
            if name in self.attr_values_map:
                values[name] = self.attr_values_map[name]
                continue
            fw_name = self.attr_names_map.get(name, name)
            if ctx.has_attribute(fw_name):
                values[name] = ctx.get_attribute(fw_name, dtype=_annotation_dtype(hints.get(name)))
            elif name in self.attr_names_map or field.is_required():
                raise ExtensionError(
                    f"{self._where()}: cannot initialise attribute '{name}' of '{op_cls.type_name}' for "
                    f"{ctx.label}: the node has no attribute '{fw_name}' (it has: "
                    f"{', '.join(ctx.get_attribute_names()) or 'none'}). Map it with attr_names_map or set "
                    "it with attr_values_map."
                )
        self._check_unmapped(ctx, op_cls, values)
        if self.inputs is not None:
            ins: list[Output | None] = []
            missing: str | None = None
            in_ports = _positional_ports(self.inputs, ctx.get_input_names(), "in")
            for name in in_ports:
                # A named port may carry several values (Paddle concat's X): they become
                # consecutive inputs of the op, in order.
                port_values = [ctx.get_input(name, i) for i in range(ctx.get_input_size(name))
                               if ctx.has_input(name, i)]
                if not port_values:
                    missing = missing or name
                    continue
                if missing is not None:
                    # Dropping the empty port would shift every later input into the wrong slot.
                    raise ExtensionError(
                        f"{self._where()}: {ctx.label} has no value for named input '{missing}' but has "
                        f"'{name}' after it; the op's inputs would shift. Map it with a "
                        "ConversionExtension instead."
                    )
                ins.extend(port_values)
        else:
            ins = ctx.get_inputs()
        try:
            node = ctx.op(op_cls, *ins, **values)
        except AttributeValidationError as err:
            raise ExtensionError(
                f"{self._where()}: the attributes of {ctx.label} do not fit '{op_cls.type_name}': {err}"
            ) from None
        outs = node.outputs()
        if self.outputs is None:
            return outs
        # The op's outputs are dealt to the named outputs in order; a list-valued framework port
        # (Paddle split's Out, bound to one variable per part) takes as many as it is bound to.
        named: dict[str, list[Output]] = {}
        k = 0
        out_names = ctx.get_output_names() if ctx.has_named_outputs else []
        for name in _positional_ports(self.outputs, out_names, "out"):
            n = max(ctx.get_output_size(name), 1) if ctx.has_named_outputs else 1
            if k + n > len(outs):
                raise ExtensionError(
                    f"{self._where()}: {ctx.label} binds {n} value(s) to output '{name}' but "
                    f"'{op_cls.type_name}' has only {len(outs) - k} output(s) left for it "
                    f"({len(outs)} in all)"
                )
            named[name] = outs[k:k + n]
            k += n
        return named

    def describe(self) -> str:
        return self._where()

    def _check_unmapped(self, ctx: NodeContext, op_cls: type[Op], values: Mapping[str, Any]) -> None:
        """A framework attribute nothing reads would be dropped silently: say so, naming it and
        the op attribute it most likely is (one left at its default)."""
        fields = _attr_fields(op_cls)
        read = {self.attr_names_map.get(name, name) for name in fields if name not in self.attr_values_map}
        unmapped = sorted(a for a in ctx.get_attribute_names() if a not in read and a not in self.ignore_attributes)
        if not unmapped:
            return
        defaulted = [name for name in fields if name not in values]
        guess: dict[str, str] = {}  # framework attribute -> the defaulted op attribute it resembles
        for a in unmapped:
            close = difflib.get_close_matches(a, [d for d in defaulted if d not in guess.values()], n=1, cutoff=0.5)
            if close:
                guess[a] = close[0]
        listed = ", ".join(f"'{a}' (-> '{guess[a]}'?)" if a in guess else f"'{a}'" for a in unmapped)
        mapping = {t: a for a, t in guess.items()}
        msg = (f"{self._where()}: {ctx.label} has attribute(s) {listed} that no attribute of "
               f"'{op_cls.type_name}' reads ({', '.join(fields) or 'none'})"
               + (f"; {', '.join(repr(t) for t in mapping)} keep(s) the default. Map them with "
                  f"attr_names_map={mapping!r}" if mapping else ". Map them with attr_names_map")
               + f", or drop them on purpose with ignore_attributes={unmapped!r}")
        strict = self.strict if self.strict is not None else _env_strict()
        if strict:
            raise ExtensionError(msg)
        warnings.warn(msg, UnmappedAttributeWarning, stacklevel=2)


def _positional_ports(wanted: Sequence[str], present: Sequence[str], prefix: str) -> list[str]:
    """The node's port names for the extension's ``wanted`` ones. Paddle PIR keeps the port names
    of custom ops nowhere and names them by position (``in0``, ``in1``... ``out0``...): there
    the extension's k-th named port is the node's ``<prefix>k``, so one named-port OpExtension
    serves the legacy format and PIR alike."""
    positional = [f"{prefix}{k}" for k in range(len(present))]
    if present and list(present) == positional and not set(wanted) & set(present):
        return [f"{prefix}{k}" for k in range(len(wanted))]
    return list(wanted)


class UnmappedAttributeWarning(UserWarning):
    """A framework attribute an OpExtension does not map to any attribute of its op."""


def _env_strict() -> bool:
    return os.environ.get("OPFORGE_STRICT_EXTENSIONS", "").strip().lower() in ("1", "true", "yes", "on")


# ============================================================================ extractors
class FrontExtractorOp:
    """A Model-Optimizer-style extractor: reads a framework node's attributes for an op class.

    Subclass, set ``op`` (the framework op type), ``framework`` and ``domain``, and implement
    ``extract``. Register it from a plugin::

        @hookimpl
        def opforge_register_extractors(register):
            register("onnx", MyOpExtractor.op, MyOpExtractor, domain=MyOpExtractor.domain)

    The framework node's inputs are connected to the op class's inputs in order.
    """

    op: ClassVar[str] = ""
    framework: ClassVar[str] = "onnx"
    domain: ClassVar[str] = ""
    enabled: ClassVar[bool] = True

    @classmethod
    def extract(cls, node: NodeContext) -> tuple[type[Op] | str, dict[str, Any]]:
        """Return ``(op_class or registered type name, attributes)`` for ``node``."""
        raise ExtensionError(f"extractor {cls.__name__} for '{cls.op}' defines no extract()")


class ExtractorExtension(FrontendExtension):
    """Adapts an extractor (anything with ``extract(node) -> (op, attrs)``) to the conversion
    interface, so the lookup treats both alike."""

    def __init__(self, extractor: Any, op_type: str, *, framework: str, domain: str = "") -> None:
        super().__init__(op_type, framework=framework, domain=domain)
        if not callable(getattr(extractor, "extract", None)):
            raise ExtensionError(f"extractor {extractor!r} for {key_label(self.key)} has no extract(node)")
        self.extractor = extractor

    def convert(self, ctx: NodeContext) -> ConversionResult:
        result = self.extractor.extract(ctx)
        if not (isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], Mapping)):
            raise ExtensionError(
                f"extractor {self._name()} returned {result!r} for {ctx.label}; expected "
                "(op_class or type name, attributes dict)"
            )
        op, attrs = result
        node = ctx.op(op, *ctx.get_inputs(), **dict(attrs))
        return node.outputs()

    def _name(self) -> str:
        e = self.extractor
        return getattr(e, "__qualname__", None) or type(e).__qualname__

    def describe(self) -> str:
        return f"extractor {self._name()} ({key_label(self.key)})"


# ============================================================================ mapping files
def load_mapping_file(path: str | Path) -> list[OpExtension]:
    """Read a user mapping file: JSON, the declarative form of :class:`OpExtension`.

    ::

        {
          "mappings": [
            {"framework": "onnx", "domain": "com.example", "op_type": "MyRelu", "target": "Relu"},
            {"framework": "onnx", "op_type": "CustomElu", "target": "Elu",
             "attr_names_map": {"alpha": "a"}, "attr_values_map": {}},
            {"framework": "paddle", "op_type": "my_relu", "target": "Relu",
             "inputs": ["X"], "outputs": ["Out"]}
          ]
        }

    ``framework`` defaults to every framework and ``domain`` to the default domain; ``target`` is
    a registered op type name (``version`` optional). Entries win over every extension.
    """
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except OSError as err:
        raise ExtensionError(f"mapping file '{p}' cannot be read: {err}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ModelFormatError(f"mapping file '{p}' is not valid JSON: {err}") from None
    entries = data.get("mappings") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise ExtensionError(
            f"mapping file '{p}': expected an object with a 'mappings' list, got {type(data).__name__}"
        )
    known = {"framework", "domain", "op_type", "target", "version", "attr_names_map", "attr_values_map",
             "inputs", "outputs"}
    out: list[OpExtension] = []
    for i, e in enumerate(entries):
        where = f"mapping file '{p}', entry {i}"
        if not isinstance(e, dict) or not isinstance(e.get("op_type"), str) or not isinstance(e.get("target"), str):
            raise ExtensionError(f"{where}: each entry needs string 'op_type' and 'target', got {e!r}")
        unknown = sorted(set(e) - known)
        if unknown:
            raise ExtensionError(f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(known))}")
        out.append(OpExtension(
            e["target"], e["op_type"], e.get("attr_names_map"), e.get("attr_values_map"),
            framework=e.get("framework"), domain=e.get("domain", ""), inputs=e.get("inputs"),
            outputs=e.get("outputs"), version=e.get("version"), source=f"{p} entry {i}",
        ))
    return out


@dataclasses.dataclass
class MappingFile:
    """A mapping file given as an extension: its entries take precedence over all extensions.

    ``.xml`` is a ``CustomLayersMapping.xml`` (framework fallback, see
    :mod:`opforge.frontend.custom_layers`); anything else is the JSON form of OpExtensions."""

    path: Path
    entries: list[FrontendExtension]

    @classmethod
    def load(cls, path: str | Path) -> MappingFile:
        if Path(path).suffix.lower() == ".xml":
            from opforge.frontend.custom_layers import load_custom_layers_mapping

            return cls(Path(path), list(load_custom_layers_mapping(path)))
        return cls(Path(path), list(load_mapping_file(path)))


# ============================================================================ lookup
@dataclasses.dataclass(frozen=True)
class Handler:
    """The extension chosen for an op type, and who provided it (for summaries and errors)."""

    extension: FrontendExtension
    provider: str
    standard: bool = False


class ExtensionSet:
    """Finds the handler of a framework op with the documented priority; one per conversion."""

    def __init__(self, framework: str, plugins: PluginSystem | None, user: Sequence[Any] = ()) -> None:
        self.framework = framework
        self.plugins = plugins
        self.mappings: list[FrontendExtension] = []
        self.user: list[FrontendExtension] = []
        for item in user:
            self.add(item)
        self._cache: dict[tuple[str, str], Handler | None] = {}

    def add(self, item: Any) -> None:
        if isinstance(item, MappingFile):
            self.mappings.extend(item.entries)
        elif isinstance(item, FrontendExtension):
            self.user.append(item)
        elif isinstance(item, type) and issubclass(item, FrontExtractorOp):
            self.user.append(ExtractorExtension(item, item.op, framework=item.framework, domain=item.domain))
        elif isinstance(item, (list, tuple)):
            for x in item:
                self.add(x)
        else:
            raise ExtensionError(
                f"unsupported extension object {item!r} ({type(item).__name__}); pass OpExtension, "
                "ConversionExtension, a FrontExtractorOp subclass, a mapping file path, a module path or "
                "a plugin name"
            )

    def _matches(self, ext: FrontendExtension, domain: str, op_type: str) -> bool:
        return (ext.op_type == op_type and ext.domain == normalize_domain(self.framework, domain)
                and ext.framework in ("", self.framework))

    def find(self, domain: str, op_type: str) -> Handler | None:
        ck = (domain, op_type)
        if ck not in self._cache:
            self._cache[ck] = self._find(normalize_domain(self.framework, domain), op_type)
        return self._cache[ck]

    def _find(self, domain: str, op_type: str) -> Handler | None:
        for m in self.mappings:
            if self._matches(m, domain, op_type):
                return Handler(m, f"mapping file {getattr(m, 'source', '')}")
        for u in self.user:
            if self._matches(u, domain, op_type):
                return Handler(u, "user extension")
        if self.plugins is None:
            return None
        standard: Handler | None = None
        for fw in (self.framework, ""):
            reg = self.plugins.conversion_extensions.registration((fw, domain, op_type))
            if reg is None:
                continue
            h = Handler(reg.value, f"plugin {reg.plugin}", reg.priority <= STANDARD_PRIORITY)
            if not h.standard:
                return h
            standard = standard or h
        reg = self.plugins.extractors.registration((self.framework, domain, op_type))
        if reg is not None and getattr(reg.value, "enabled", True):
            ext = reg.value if isinstance(reg.value, FrontendExtension) else ExtractorExtension(
                reg.value, op_type, framework=self.framework, domain=domain)
            return Handler(ext, f"extractor from plugin {reg.plugin}")
        return standard

    def known_domains(self) -> list[str]:
        """Domains that have at least one extension (for 'did you mean' hints)."""
        doms = {e.domain for e in [*self.mappings, *self.user] if e.framework in ("", self.framework)}
        if self.plugins is not None:
            keys = self.plugins.conversion_extensions.keys()
            for key in keys:
                if isinstance(key, tuple) and key[0] in ("", self.framework):
                    doms.add(key[1])
        return sorted(doms)


def normalize_outputs(result: ConversionResult, ctx: NodeContext, handler: Handler) -> list[Output | None]:
    """A conversion function's return value as a list of ports in framework output order.

    * a list: one entry per output (for named outputs: per output port, in port order; an entry
      for a list-valued port may itself be a list). An op with a single named output port may
      return that port's values as a flat list (``split``: ``node.outputs()``). Extra entries
      are ignored, missing ones are outputs the function does not produce;
    * a mapping ``{name: port or [ports]}`` keyed by :meth:`NodeContext.get_output_names`;
    * a single node or port: the first output.

    For named outputs the list returned holds each port's values in turn
    (``ctx.get_output_size(name)`` of them), None where one is not produced.
    """
    if isinstance(result, Node):
        result = result.outputs()
    if isinstance(result, Output):
        result = [result]
    names = ctx.get_output_names()
    if isinstance(result, Mapping):
        unknown = [k for k in result if k not in names]
        if unknown:
            what = "output ports" if ctx.has_named_outputs else "outputs"
            raise ConversionError(
                f"{handler.extension.describe()} returned output '{unknown[0]}' for {ctx.label}, which has "
                f"{what} {', '.join(names) or 'none'}"
            )
        per_name = [result.get(name) for name in names]
    elif isinstance(result, (list, tuple)):
        if ctx.has_named_outputs and len(names) == 1 and not any(isinstance(v, (list, tuple)) for v in result):
            per_name = [list(result)]
        else:
            per_name = list(result[:len(names)]) if names else list(result)
    else:
        raise ConversionError(
            f"{handler.extension.describe()} returned {type(result).__name__} for {ctx.label}; a "
            "conversion function returns a list of outputs (or, by name, a mapping)"
        )
    if not ctx.has_named_outputs:
        outs: list[Output | None] = []
        for k, v in enumerate(per_name):
            if isinstance(v, (list, tuple)):
                if len(v) > 1:
                    raise ConversionError(
                        f"{handler.extension.describe()} returned {len(v)} values for output "
                        f"{names[k] if k < len(names) else k!r} of {ctx.label}, which takes one"
                    )
                v = v[0] if v else None
            outs.append(_as_port(v, ctx, handler))
        return outs
    flat: list[Output | None] = []
    for k, name in enumerate(names):
        n = ctx.get_output_size(name)
        v = per_name[k] if k < len(per_name) else None
        vals = list(v) if isinstance(v, (list, tuple)) else ([] if v is None else [v])
        if n and len(vals) > n:
            raise ConversionError(
                f"{handler.extension.describe()} returned {len(vals)} values for output '{name}' of "
                f"{ctx.label}, which the model binds to {n} value(s)"
            )
        ports = [_as_port(x, ctx, handler) for x in vals[:n]]
        flat.extend(ports + [None] * (n - len(ports)))
    return flat


def _as_port(v: Any, ctx: NodeContext, handler: Handler) -> Output | None:
    if v is None or isinstance(v, Output):
        return v
    if isinstance(v, Node):
        if len(v.output_specs) != 1:
            raise ConversionError(
                f"{handler.extension.describe()} returned node '{v.name}' with {len(v.output_specs)} "
                f"outputs for {ctx.label}; return node.output(i) for each"
            )
        return v.output(0)
    raise ModelValidationError(
        f"{handler.extension.describe()} returned {type(v).__name__} for {ctx.label}; expected node outputs"
    )
