"""The graph IR: nodes, their output ports, and models.

A :class:`Node` is one operation instance: an op class, validated attributes, the output ports it
reads, and per-node runtime info (``rt_info``, e.g. ``{"affinity": "CPU"}``). Each node's output
types and shapes are inferred when it is created. A :class:`Model` is the set of nodes reachable
from its ``Result`` nodes, with ordered ``Parameter`` inputs.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Union

import numpy as np

from opforge.element_type import Type
from opforge.errors import ModelValidationError, OpforgeError, ShapeInferenceError
from opforge.op import InferContext, Op, OpAttrs, TensorSpec
from opforge.shape import PartialShape

if TYPE_CHECKING:
    from opforge.plugins.registry import OpRegistry

_ids = itertools.count(1)

#: ``rt_info`` key a device sets on a Constant whose values it released after packing its own copy
#: (to save memory); the value says who. Such a constant has no usable values any more: the
#: reference, constant folding and the IR writer refuse it instead of computing with zeros.
WEIGHTS_RELEASED = "weights_released"


class Output:
    """An output port of a node: what other nodes take as input."""

    __slots__ = ("index", "node")

    def __init__(self, node: Node, index: int) -> None:
        self.node = node
        self.index = index

    @property
    def spec(self) -> TensorSpec:
        return self.node.output_specs[self.index]

    @property
    def element_type(self) -> Type:
        return self.spec.type

    @property
    def partial_shape(self) -> PartialShape:
        return self.spec.shape

    @property
    def shape(self) -> tuple[int, ...]:
        """The static shape; raises when it is dynamic."""
        return self.spec.shape.to_tuple()

    @property
    def names(self) -> list[str]:
        """Tensor names of this port (the names users address inputs/outputs by)."""
        return self.node.output_names[self.index]

    @property
    def any_name(self) -> str:
        names = self.names
        if names:
            return names[0]
        return self.node.name if len(self.node.output_specs) == 1 else f"{self.node.name}:{self.index}"

    def set_names(self, names: Iterable[str]) -> None:
        self.node.output_names[self.index] = list(dict.fromkeys(names))

    def add_names(self, names: Iterable[str]) -> None:
        self.set_names([*self.names, *names])

    # OpenVINO-style accessors, for users who come from there.
    def get_element_type(self) -> Type:
        return self.element_type

    def get_partial_shape(self) -> PartialShape:
        return self.partial_shape

    def get_shape(self) -> tuple[int, ...]:
        return self.shape

    def get_any_name(self) -> str:
        return self.any_name

    def get_names(self) -> set[str]:
        return set(self.names)

    def get_node(self) -> Node:
        return self.node

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Output) and other.node is self.node and other.index == self.index

    def __hash__(self) -> int:
        return hash((id(self.node), self.index))

    def __repr__(self) -> str:
        return f"<Output {self.node.name}:{self.index} {self.element_type.ir}{self.partial_shape}>"


Value = Union[Output, "Node"]


def as_output(v: Value) -> Output:
    """Accept a node (meaning its only output) or an output port."""
    if isinstance(v, Output):
        return v
    if isinstance(v, Node):
        if len(v.output_specs) != 1:
            raise ModelValidationError(
                f"node '{v.name}' ({v.type_name}) has {len(v.output_specs)} outputs; "
                "pass node.output(i) to choose one"
            )
        return v.output(0)
    raise ModelValidationError(f"expected a node or an output port, got {type(v).__name__}")


class Node:
    """One operation in a graph. Create nodes with :meth:`Node.create` (or :func:`opforge.op`)."""

    def __init__(
        self,
        op: type[Op],
        inputs: Sequence[Value],
        attrs: OpAttrs,
        name: str | None = None,
        *,
        output_specs: Sequence[TensorSpec] | None = None,
    ) -> None:
        self.id = next(_ids)
        self.op = op
        self.attrs = attrs
        self.name = name or f"{op.type_name}_{self.id}"
        self.inputs: list[Output] = [as_output(v) for v in inputs]
        self.rt_info: dict[str, Any] = {}
        self.output_specs: list[TensorSpec] = []
        self.output_names: list[list[str]] = []
        n = len(self.inputs)
        if n < op.min_inputs or (op.max_inputs is not None and n > op.max_inputs):
            want = (
                f"{op.min_inputs}" if op.max_inputs == op.min_inputs
                else f"{op.min_inputs} or more" if op.max_inputs is None
                else f"{op.min_inputs} to {op.max_inputs}"
            )
            raise ModelValidationError(
                f"node '{self.name}' ({op.type_name}-{op.version}): got {n} inputs, expected {want}"
            )
        if output_specs is not None:
            self._set_specs(list(output_specs))
        else:
            self.validate_and_infer()

    @classmethod
    def create(
        cls,
        op: str | type[Op],
        inputs: Sequence[Value] = (),
        attrs: dict[str, Any] | OpAttrs | None = None,
        name: str | None = None,
        *,
        version: str | None = None,
        registry: OpRegistry | None = None,
    ) -> Node:
        """Create a node of a registered op type (``"Relu"``) or an op class, inferring its outputs."""
        op_cls = op if isinstance(op, type) else _resolve(op, version, registry)
        if isinstance(attrs, OpAttrs):
            a = attrs
        else:
            a = op_cls.make_attrs(name or op_cls.type_name, dict(attrs or {}))
        return cls(op_cls, inputs, a, name)

    @property
    def type_name(self) -> str:
        return self.op.type_name

    @property
    def version(self) -> str:
        return self.op.version

    def output(self, i: int) -> Output:
        if not 0 <= i < len(self.output_specs):
            raise ModelValidationError(
                f"node '{self.name}' ({self.type_name}) has {len(self.output_specs)} outputs; no output {i}"
            )
        return Output(self, i)

    def outputs(self) -> list[Output]:
        return [Output(self, i) for i in range(len(self.output_specs))]

    def input_value(self, i: int) -> Output:
        return self.inputs[i]

    def constant_value(self) -> np.ndarray | None:
        """The value of a ``Constant`` node, else None (also when a device released it)."""
        if self.type_name == "Constant" and not self.rt_info.get(WEIGHTS_RELEASED):
            return self.attrs.value  # type: ignore[attr-defined, no-any-return]
        return None

    def validate_and_infer(self) -> None:
        """(Re)run shape/type inference from the current inputs."""
        specs = [i.spec for i in self.inputs]
        values = [i.node.constant_value() for i in self.inputs]
        ctx = InferContext(self.name, self.op, self.attrs, specs, values)
        try:
            out = self.op.infer(ctx)
        except OpforgeError:
            raise
        except Exception as err:  # a bug or bad input inside an op's inference
            raise ShapeInferenceError(
                f"node '{self.name}' ({self.type_name}-{self.version}): shape inference failed: "
                f"{type(err).__name__}: {err}"
            ) from err
        self._set_specs(out)

    def _set_specs(self, specs: list[TensorSpec]) -> None:
        old = self.output_names
        self.output_specs = specs
        self.output_names = [old[i] if i < len(old) else [] for i in range(len(specs))]

    def get_friendly_name(self) -> str:
        return self.name

    def get_type_name(self) -> str:
        return self.type_name

    def get_rt_info(self) -> dict[str, Any]:
        return self.rt_info

    def __repr__(self) -> str:
        outs = ", ".join(f"{s.type.ir}{s.shape}" for s in self.output_specs)
        return f"<Node {self.name} {self.type_name}-{self.version} -> {outs}>"


def _resolve(type_name: str, version: str | None, registry: OpRegistry | None) -> type[Op]:
    if registry is None:
        from opforge.plugins import default_plugins

        registry = default_plugins().ops
    return registry.get(type_name, version)


def op(type_name: str, *inputs: Value, name: str | None = None, version: str | None = None,
       **attrs: Any) -> Node:
    """Shortcut: ``opforge.op("Convolution", x, w, strides=[1, 1], ...)``."""
    return Node.create(type_name, inputs, attrs, name, version=version)


def topological_sort(results: Sequence[Node], extra_roots: Sequence[Node] = ()) -> list[Node]:
    """Every node that ``results`` depend on, producers first; raises on a cycle."""
    order: list[Node] = []
    state: dict[int, int] = {}  # 1 = on the stack, 2 = done
    for root in [*extra_roots, *results]:
        if state.get(root.id) == 2:
            continue
        # Iterative DFS: deep graphs (10^5-node chains) must not hit Python's recursion limit.
        stack: list[tuple[Node, int]] = [(root, 0)]
        state[root.id] = 1
        while stack:
            node, i = stack[-1]
            if i < len(node.inputs):
                stack[-1] = (node, i + 1)
                child = node.inputs[i].node
                st = state.get(child.id)
                if st == 1:
                    raise ModelValidationError(
                        f"graph has a cycle through node '{child.name}' ({child.type_name})"
                    )
                if st is None:
                    state[child.id] = 1
                    stack.append((child, 0))
            else:
                stack.pop()
                state[node.id] = 2
                order.append(node)
    return order


class Model:
    """A graph with named inputs (``Parameter`` nodes) and outputs (``Result`` nodes)."""

    def __init__(
        self,
        results: Sequence[Value],
        parameters: Sequence[Node] | None = None,
        name: str = "model",
    ) -> None:
        self.name = name
        self.rt_info: dict[str, Any] = {}
        self.results: list[Node] = []
        for r in results:
            if isinstance(r, Node) and r.type_name == "Result":
                self.results.append(r)
            else:
                out = as_output(r)
                # one Result per port: a node's second output needs a name of its own
                suffix = "" if out.index == 0 else f".{out.index}"
                self.results.append(Node.create("Result", [out], name=f"{out.node.name}/result{suffix}"))
        if parameters is None:
            parameters = [n for n in topological_sort(self.results) if n.type_name == "Parameter"]
        self.parameters: list[Node] = list(parameters)
        for p in self.parameters:
            if p.type_name != "Parameter":
                raise ModelValidationError(f"model input '{p.name}' is a {p.type_name}, not a Parameter")

    # --- ports ---------------------------------------------------------------------------------
    @property
    def inputs(self) -> list[Output]:
        return [p.output(0) for p in self.parameters]

    @property
    def outputs(self) -> list[Output]:
        return [r.inputs[0] for r in self.results]

    def input(self, key: int | str = 0) -> Output:
        return _find_port(self.inputs, key, "input", self.name)

    def output(self, key: int | str = 0) -> Output:
        return _find_port(self.outputs, key, "output", self.name)

    # --- traversal -----------------------------------------------------------------------------
    def get_ordered_ops(self) -> list[Node]:
        """All nodes, producers before consumers (parameters first, in input order)."""
        return topological_sort(self.results, self.parameters)

    def nodes(self) -> Iterator[Node]:
        return iter(self.get_ordered_ops())

    def get_ops(self) -> list[Node]:
        return self.get_ordered_ops()

    def node(self, name: str) -> Node:
        for n in self.get_ordered_ops():
            if n.name == name:
                return n
        raise KeyError(f"model '{self.name}' has no node named '{name}'")

    def consumers(self) -> dict[Output, list[tuple[Node, int]]]:
        """For every output port, the (node, input index) pairs that read it."""
        uses: dict[Output, list[tuple[Node, int]]] = {}
        for n in self.get_ordered_ops():
            for i, src in enumerate(n.inputs):
                uses.setdefault(src, []).append((n, i))
        return uses

    def replace_output(self, old: Output, new: Output) -> int:
        """Make every reader of ``old`` read ``new`` instead; keeps tensor names. Returns uses changed."""
        count = 0
        for n in self.get_ordered_ops():
            for i, src in enumerate(n.inputs):
                if src == old:
                    n.inputs[i] = new
                    count += 1
        if old.names and not new.names:
            new.set_names(old.names)
        return count

    def validate(self) -> None:
        """Check the structure and re-run shape inference on every node, in order."""
        if not self.results:
            raise ModelValidationError(f"model '{self.name}' has no outputs")
        order = self.get_ordered_ops()
        seen_names: dict[str, Node] = {}
        params = {p.id for p in self.parameters}
        for n in order:
            if n.type_name == "Parameter" and n.id not in params:
                raise ModelValidationError(
                    f"model '{self.name}': node '{n.name}' is a Parameter that is not a model input"
                )
            if n.name in seen_names and seen_names[n.name] is not n:
                raise ModelValidationError(
                    f"model '{self.name}': two nodes are named '{n.name}' "
                    f"({seen_names[n.name].type_name} and {n.type_name})"
                )
            seen_names[n.name] = n
            n.validate_and_infer()
        tensor_names: dict[str, Output] = {}
        for n in order:
            for out in n.outputs():
                for t in out.names:
                    if t in tensor_names and tensor_names[t] != out:
                        raise ModelValidationError(
                            f"model '{self.name}': tensor name '{t}' is used by two ports "
                            f"('{tensor_names[t].node.name}' and '{n.name}')"
                        )
                    tensor_names[t] = out

    def clone(self) -> Model:
        """A deep copy of the graph (constant arrays are shared: they are never mutated)."""
        mapping: dict[int, Node] = {}
        for n in self.get_ordered_ops():
            new = Node(
                n.op, [Output(mapping[i.node.id], i.index) for i in n.inputs], n.attrs, n.name,
                output_specs=n.output_specs,
            )
            new.output_names = [list(x) for x in n.output_names]
            new.rt_info = dict(n.rt_info)
            mapping[n.id] = new
        m = Model([mapping[r.id] for r in self.results], [mapping[p.id] for p in self.parameters], self.name)
        m.rt_info = dict(self.rt_info)
        return m

    def reshape(self, shapes: dict[str | int, Any]) -> None:
        """Set new input shapes (by input name or index) and re-infer every node."""
        from opforge.opset.parameter import ParameterAttrs

        for key, shape in shapes.items():
            port = self.input(key)
            p = port.node
            attrs = ParameterAttrs(element_type=p.attrs.element_type, shape=PartialShape(shape))  # type: ignore[attr-defined]
            p.attrs = attrs
        self.validate()

    def get_parameters(self) -> list[Node]:
        return self.parameters

    def get_results(self) -> list[Node]:
        return self.results

    def get_friendly_name(self) -> str:
        return self.name

    def __repr__(self) -> str:
        ins = ", ".join(f"{o.any_name}: {o.element_type.ir}{o.partial_shape}" for o in self.inputs)
        outs = ", ".join(f"{o.any_name}: {o.element_type.ir}{o.partial_shape}" for o in self.outputs)
        return f"<Model '{self.name}' ({ins}) -> ({outs})>"


def _find_port(ports: list[Output], key: int | str, what: str, model: str) -> Output:
    if isinstance(key, int):
        if 0 <= key < len(ports):
            return ports[key]
        raise KeyError(f"model '{model}' has {len(ports)} {what}s; no {what} {key}")
    for p in ports:
        if key in p.names or (not p.names and p.any_name == key):
            return p
    for p in ports:  # fall back to the friendly name of the producing node
        if p.node.name == key:
            return p
    raise KeyError(
        f"model '{model}' has no {what} named '{key}'; {what}s: "
        + ", ".join(repr(p.any_name) for p in ports)
    )
