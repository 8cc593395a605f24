"""What a conversion function sees of one framework node, and how it builds opforge nodes.

Every frontend hands its translators a :class:`NodeContext`: the node's inputs (already converted
to opforge output ports), its decoded attributes, its type, domain and name, and a
:class:`GraphBuilder` that creates nodes through the session's op registry. Built-in translators
and third-party :class:`~opforge.frontend.extensions.ConversionExtension` functions get the same
object, so anything a frontend can do, an extension can do.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from opforge.element_type import Type
from opforge.errors import ConversionError, OpforgeError
from opforge.graph import Node, Output, as_output
from opforge.op import Op
from opforge.shape import PartialShape

if TYPE_CHECKING:
    from opforge.plugins.registry import OpRegistry

#: Results of creating nodes from constants are folded right away up to this size, so that
#: translators see shape arithmetic (Shape -> Gather -> Concat) as constants while converting.
FOLD_ON_CREATE_BYTES = 16 * 1024 * 1024

#: ops that must never be folded while building: boundaries and placeholders
_NO_FOLD = {"Parameter", "Result", "Constant", "FrameworkNode"}

InputValue = Output | Node


class GraphBuilder:
    """Creates nodes for one conversion: unique names, the session's op registry, and folding of
    nodes whose inputs are all constants (as OpenVINO's frontends do while converting)."""

    def __init__(self, registry: OpRegistry, *, fold_constants: bool = True) -> None:
        self.registry = registry
        self.fold_constants = fold_constants
        self._names: set[str] = set()
        self._counter = itertools.count(1)

    def unique_name(self, base: str) -> str:
        name = base or "node"
        if name not in self._names:
            self._names.add(name)
            return name
        while True:
            candidate = f"{name}_{next(self._counter)}"
            if candidate not in self._names:
                self._names.add(candidate)
                return candidate

    def reserve(self, name: str) -> None:
        """Mark a name as taken (nodes created outside the builder, e.g. parameters)."""
        self._names.add(name)

    def resolve(self, op: str | type[Op], version: str | None = None) -> type[Op]:
        if isinstance(op, type):
            return op
        return self.registry.get(op, version)

    def op(self, op: str | type[Op], inputs: Sequence[InputValue | None], attrs: Mapping[str, Any],
           name: str, *, version: str | None = None) -> Node:
        op_cls = self.resolve(op, version)
        ins = [as_output(i) for i in inputs if i is not None]
        node_name = self.unique_name(name)
        a = op_cls.make_attrs(node_name, dict(attrs))
        node = Node(op_cls, ins, a, node_name)
        if self.fold_constants:
            return self._maybe_fold(node)
        return node

    def const(self, value: Any, dtype: Type | str | np.dtype[Any] | type | None, name: str) -> Node:
        arr = np.asarray(value)
        if dtype is not None:
            t = Type.parse(dtype) if not isinstance(dtype, Type) else dtype
            arr = arr.astype(t.np)
        elif arr.dtype == np.float64 and not isinstance(value, (np.ndarray, np.generic)):
            # A bare Python float (or list of them) means "a float value", which in inference
            # graphs is f32; NumPy arrays keep their dtype.
            arr = arr.astype(np.float32)
        return Node.create("Constant", [], {"value": np.asarray(arr, order="C")},
                           name=self.unique_name(name), registry=self.registry)

    def _maybe_fold(self, node: Node) -> Node:
        if node.type_name in _NO_FOLD or not node.inputs or len(node.output_specs) != 1:
            return node
        if not all(i.node.type_name == "Constant" for i in node.inputs):
            return node
        from opforge.reference import evaluate_node

        try:
            out = evaluate_node(node, [i.node.constant_value() for i in node.inputs])  # type: ignore[misc]
        except OpforgeError:
            return node  # left for run time, where the error names the inputs
        if out[0].nbytes > FOLD_ON_CREATE_BYTES:
            return node
        folded = Node.create("Constant", [], {"value": np.asarray(out[0], order="C")}, name=node.name,
                             registry=self.registry)
        folded.rt_info["folded_from"] = node.type_name
        return folded


class NodeContext:
    """One framework node during conversion.

    ``get_input(i)`` and ``get_attribute(name, default, dtype)`` are what most conversion
    functions need; ``op(type, *inputs, **attrs)`` creates opforge nodes and ``const(value)``
    constants.

    Frameworks with named ports (PaddlePaddle: ``X``, ``Y`` -> ``Out``, ``XShape``) give
    ``named_inputs`` and ``named_outputs``: each port bound to a list of framework values
    (Paddle ``concat``'s ``X`` and ``split``'s ``Out`` hold several). Conversion functions then
    read ``get_input(name)`` / ``get_input(name, i)`` / ``get_input_size(name)``, size named
    outputs with ``get_output_size(name)`` / ``has_output(name)``, and return
    ``{name: port or [ports]}``. Positional frameworks (ONNX) number inputs and outputs; their
    output names are the output values' names.
    """

    def __init__(
        self,
        *,
        framework: str,
        op_type: str,
        domain: str,
        name: str,
        inputs: Sequence[Output | None],
        attributes: Mapping[str, Any],
        builder: GraphBuilder,
        named_inputs: Mapping[str, Sequence[Output | None]] | None = None,
        output_names: Sequence[str] = (),
        named_outputs: Mapping[str, Sequence[str]] | None = None,
        opset_version: int | None = None,
        type_decoder: Callable[[Any], Type] | None = None,
        source: str = "",
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        self.framework = framework
        self.op_type = op_type
        self.domain = domain
        self.name = name
        self._inputs = list(inputs)
        self._named = {k: list(v) for k, v in (named_inputs or {}).items()}
        self._attrs = dict(attributes)
        self.builder = builder
        #: output port -> the framework values bound to it ("" for an unbound slot); None for
        #: frameworks with positional outputs
        self._named_outputs = ({k: list(v) for k, v in named_outputs.items()}
                               if named_outputs is not None else None)
        #: the names outputs are returned under: the named output ports, else the output values'
        #: names in order (ONNX tensor names, "" for an omitted optional output)
        self.output_names = list(output_names) if output_names or named_outputs is None else list(named_outputs)
        self.opset_version = opset_version
        self._type_decoder = type_decoder
        #: the model file, for messages
        self.source = source
        #: frontend-specific data (e.g. the ONNX frontend's subgraph converter)
        self.extra: dict[str, Any] = dict(extra or {})

    # --- identity ------------------------------------------------------------------------------
    def get_op_type(self) -> str:
        return self.op_type

    def get_domain(self) -> str:
        return self.domain

    def get_name(self) -> str:
        return self.name

    def get_opset_version(self) -> int | None:
        """The opset version of this node's domain that the model imports (ONNX), else None."""
        return self.opset_version

    @property
    def label(self) -> str:
        """How messages name this node: ``node 'conv1' (onnx Conv, domain 'ai.onnx', opset 13)``;
        frameworks without op domains (PaddlePaddle) leave the domain out: ``(paddle conv2d)``."""
        dom = self.domain or ("ai.onnx" if self.framework == "onnx" else "")
        details = f", domain '{dom}'" if dom else ""
        if self.opset_version is not None:
            details += f", opset {self.opset_version}"
        where = f" in {self.source}" if self.source else ""
        return f"node '{self.name}' ({self.framework} {self.op_type}{details}){where}"

    def error(self, message: str) -> ConversionError:
        """A :class:`ConversionError` naming this node, to ``raise``."""
        return ConversionError(f"{self.label}: {message}")

    # --- inputs --------------------------------------------------------------------------------
    def get_input_size(self, name: str | None = None) -> int:
        """Number of inputs (including empty optional ones), or of the named input's values."""
        if name is None:
            return len(self._inputs)
        return len(self._named.get(name, []))

    def has_input(self, index_or_name: int | str, i: int = 0) -> bool:
        """Whether the input exists and is not an empty optional input."""
        if isinstance(index_or_name, str):
            vals = self._named.get(index_or_name, [])
            return 0 <= i < len(vals) and vals[i] is not None
        return 0 <= index_or_name < len(self._inputs) and self._inputs[index_or_name] is not None

    def get_input(self, index_or_name: int | str, i: int = 0) -> Output:
        """Input ``index``; or the ``i``-th value of the named input (PaddlePaddle)."""
        if isinstance(index_or_name, str):
            vals = self._named.get(index_or_name)
            if vals is None:
                raise self.error(
                    f"has no input named '{index_or_name}'; inputs: {', '.join(self._named) or 'none'}"
                )
            if not 0 <= i < len(vals) or vals[i] is None:
                raise self.error(f"input '{index_or_name}' has {len(vals)} value(s); no value {i}")
            return vals[i]  # type: ignore[return-value]
        idx = index_or_name
        if not 0 <= idx < len(self._inputs):
            raise self.error(f"has {len(self._inputs)} input(s); no input {idx}")
        v = self._inputs[idx]
        if v is None:
            raise self.error(f"input {idx} is empty (an omitted optional input) but is required here")
        return v

    def get_inputs(self) -> list[Output | None]:
        """All inputs in order; omitted optional inputs are None."""
        return list(self._inputs)

    def get_input_names(self) -> list[str]:
        return list(self._named)

    def is_constant_input(self, index: int) -> bool:
        return self.has_input(index) and self.get_input(index).node.type_name == "Constant"

    def get_values_from_const_input(self, index: int, default: Any = None) -> Any:
        """The NumPy value of input ``index`` when it is a constant (folded while converting).

        Returns ``default`` for an omitted optional input when one is given; raises when the
        input is computed at run time, because the caller needs a value while converting."""
        if not self.has_input(index):
            if default is not None:
                return default
            raise self.error(f"input {index} is required as a constant but is missing")
        out = self.get_input(index)
        value = out.node.constant_value()
        if value is None:
            raise self.error(
                f"input {index} must be a constant while converting, but it is computed at run time "
                f"by node '{out.node.name}' ({out.node.type_name}); opforge needs its value to build the graph"
            )
        return value

    # --- outputs -------------------------------------------------------------------------------
    @property
    def has_named_outputs(self) -> bool:
        """Whether outputs are named ports that may hold several values (PaddlePaddle)."""
        return self._named_outputs is not None

    def get_output_names(self) -> list[str]:
        """The names a conversion function may return outputs under, in order: the named output
        ports (Paddle ``["Out", "XShape"]``), else the output values' names (ONNX)."""
        return list(self.output_names)

    def get_output_size(self, name: str | None = None) -> int:
        """Number of outputs (named ports, for frameworks with named outputs); or the number of
        values the model binds to output ``name`` (Paddle ``split``'s ``Out``: one per part; 0 for
        a port the model leaves unbound)."""
        if name is None:
            return len(self.output_names)
        if self._named_outputs is not None:
            return len(self._named_outputs.get(name, []))
        return 1 if name and name in self.output_names else 0

    def has_output(self, index_or_name: int | str) -> bool:
        """Whether the model uses the output: a named port bound to at least one value, or an
        output index that is not an omitted optional output."""
        if isinstance(index_or_name, str):
            if self._named_outputs is not None:
                return any(self._named_outputs.get(index_or_name, []))
            return bool(index_or_name) and index_or_name in self.output_names
        if not 0 <= index_or_name < len(self.output_names):
            return False
        if self._named_outputs is not None:
            return self.has_output(self.output_names[index_or_name])
        return bool(self.output_names[index_or_name])

    def get_output_value_names(self, name: str) -> list[str]:
        """The framework values (Paddle variable names) bound to named output ``name``."""
        if self._named_outputs is not None:
            return list(self._named_outputs.get(name, []))
        return [name] if name in self.output_names else []

    # --- attributes ----------------------------------------------------------------------------
    def has_attribute(self, name: str) -> bool:
        return name in self._attrs

    def get_attribute_names(self) -> list[str]:
        return list(self._attrs)

    _MISSING: Any = object()

    def get_attribute(self, name: str, default: Any = _MISSING, dtype: Any = None) -> Any:
        """The attribute's value, converted to ``dtype`` (``int``, ``float``, ``bool``, ``str``,
        ``list``, :class:`~opforge.Type`, :class:`~opforge.PartialShape`, ``np.ndarray``) if given.

        A missing attribute returns ``default``, or raises when no default is given."""
        if name not in self._attrs:
            if default is not NodeContext._MISSING:
                return default
            raise self.error(
                f"has no attribute '{name}'; it has: {', '.join(sorted(self._attrs)) or 'none'}"
            )
        value = self._attrs[name]
        if dtype is None:
            return value
        try:
            return self._convert(value, dtype)
        except (TypeError, ValueError, OpforgeError) as err:
            raise self.error(
                f"attribute '{name}' = {value!r} cannot be read as {getattr(dtype, '__name__', dtype)}: {err}"
            ) from None

    def _convert(self, value: Any, dtype: Any) -> Any:
        if dtype is Type:
            if isinstance(value, Type):
                return value
            if self._type_decoder is not None and not isinstance(value, str):
                return self._type_decoder(value)
            return Type.parse(value)
        if dtype is PartialShape:
            return value if isinstance(value, PartialShape) else PartialShape(value)
        if dtype is np.ndarray:
            return np.asarray(value)
        if dtype is bool:
            return bool(int(value)) if not isinstance(value, str) else value.lower() in ("1", "true")
        if dtype in (int, float):
            if isinstance(value, np.ndarray):
                value = value.reshape(-1)[0] if value.size == 1 else value
            return dtype(value)
        if dtype is str:
            return value.decode() if isinstance(value, bytes) else str(value)
        if dtype is list:
            return list(value) if isinstance(value, (list, tuple, np.ndarray)) else [value]
        return dtype(value)

    def get_attributes(self) -> dict[str, Any]:
        return dict(self._attrs)

    # --- building ------------------------------------------------------------------------------
    def op(self, op: str | type[Op], /, *inputs: InputValue | None, name: str | None = None,
           version: str | None = None, **attrs: Any) -> Node:
        """Create a node of a registered op (``"Add"``) or an op class; None inputs are skipped.

        Nodes whose inputs are all constants are folded into a constant right away."""
        type_name = op if isinstance(op, str) else op.type_name
        return self.builder.op(op, inputs, attrs, name or f"{self.name}/{type_name}", version=version)

    def const(self, value: Any, dtype: Type | str | type | np.dtype[Any] | None = None,
              name: str | None = None) -> Output:
        """A constant; a bare Python float becomes f32, ``dtype`` converts explicitly."""
        return self.builder.const(value, dtype, name or f"{self.name}/Constant").output(0)

    def __repr__(self) -> str:
        return f"<NodeContext {self.label}>"
