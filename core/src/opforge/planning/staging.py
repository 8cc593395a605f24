"""Data-dependent shapes: one strategy for every device, running a model in stages.

A plan needs every shape, and every value a node reads like an attribute, before it runs. Three
kinds of node break that; the first of them in a specialized model is the *split point* ``D``:

- an op whose output shape only its data decides (``Op.data_dependent_shape``: NonZero, Unique,
  NonMaxSuppression) and whose outputs are not static;
- an op that runs on the host (``Op.host_stage``: Loop iterates there, ImageDecoder decodes);
- a node with a value port (``Op.value_inputs``) fed by a value computed from data (a Reshape to
  a shape read out of a tensor), which no plan can know in advance.

The model then runs as three stages:

1. the *prefix*: every node ``D`` does not depend on, as one static model, producing ``D``'s inputs
   and every other value the rest reads;
2. ``D`` itself: a one-node model the device runs natively (its kernel writes at most an upper
   bound and reports the size; the device returns the outputs at their actual size), or the
   host (``Op.run_host_stage``; a Loop body is compiled on the device, per body input shapes);
   for a value port fed by data there is no such stage, ``D`` starts the suffix;
3. the *suffix*: a model fed with the values cut between prefix and suffix, compiled like any
   model of dynamic inputs: planned per input shape (which now include the observed sizes) and per
   value of its value inputs (the computed shape ``D`` reads). A later split point stages again.

Every stage is a compiled model of the same device (``compile``), so every op still runs in its
kernels; only arrays pass between stages. The cost is that values crossing a stage boundary come
back to the host.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from opforge.errors import UnsupportedOpError
from opforge.graph import Model, Node, Output
from opforge.op import STRUCTURAL
from opforge.opset.parameter import Parameter
from opforge.planning.values import MAX_VALUE_INPUT_ELEMENTS, known_at_plan
from opforge.runtime.device import Executable
from opforge.shape import PartialShape

#: sub-graph executables (a Loop body per body input shapes) a staged model keeps per host node
SUBGRAPH_CACHE_SIZE = 32

Compile = Callable[[Model], Executable]


def _static(outs: Sequence[Output]) -> bool:
    return all(o.partial_shape.is_static for o in outs)


def _computed_value_port(node: Node) -> bool:
    """Whether a value port of ``node`` reads a value only the data decides."""
    return any(i < len(node.inputs) and not known_at_plan(node.inputs[i]) for i in node.op.value_inputs)


def split_point(model: Model) -> Node | None:
    """The first node of a specialized model a plan cannot cover (see the module docstring),
    among those whose inputs are static; None when one plan runs the whole model. A model that
    is only that node (a data-dependent one) is the device's to run (:func:`lone_data_dependent_node`)."""
    if lone_data_dependent_node(model) is not None:
        return None
    for n in model.get_ordered_ops():
        if n.type_name in STRUCTURAL or not _static(n.inputs):
            continue
        if n.op.host_stage:
            return n
        if n.op.data_dependent_shape and not _static(n.outputs()):
            return n
        if _computed_value_port(n):
            return n
    return None


def lone_data_dependent_node(model: Model) -> Node | None:
    """The node of a model made of one data-dependent node (a stage built by
    :class:`StagedExecutable`): the device runs it natively and returns its outputs at their
    actual size. None for any other model."""
    ops = [n for n in model.get_ordered_ops() if n.type_name not in STRUCTURAL]
    if len(ops) != 1:
        return None
    n = ops[0]
    if n.op.data_dependent_shape and not n.op.host_stage and _static(n.inputs) and not _static(n.outputs()):
        return n
    return None


def dependents(model: Model, node: Node) -> set[int]:
    """Ids of ``node`` and every node reading its results, directly or not."""
    after = {node.id}
    for n in model.get_ordered_ops():
        if any(i.node.id in after for i in n.inputs):
            after.add(n.id)
    return after


class _StagedState:
    def __init__(self, staged: StagedExecutable) -> None:
        self.prefix = staged.prefix.create_state() if staged.prefix is not None else None
        self.middle = staged.middle.create_state() if staged.middle is not None else None
        self.suffix = staged.suffix.create_state()
        #: host stage: a state per sub-graph executable (per body input shapes)
        self.subgraphs: dict[Any, tuple[Executable, Any]] = {}


class StagedExecutable(Executable):
    """``model`` run in stages around its split point ``point`` (see the module docstring), each
    stage compiled by ``compile`` (the device's executable for a model, same settings)."""

    def __init__(self, model: Model, point: Node, compile: Compile, device: str) -> None:
        self.point = point
        self.device = device
        self._compile = compile
        after = dependents(model, point)
        #: the point only reads a computed value: it runs in the suffix, planned for that value
        carried = not point.op.host_stage and not (point.op.data_dependent_shape and not _static(point.outputs()))
        params = {p.id: i for i, p in enumerate(model.parameters)}
        # The values computed before the point that the point or a later node (or a Result) reads.
        cut: list[Output] = []
        for n in model.get_ordered_ops():
            if n.id not in after and n.type_name != "Result":
                continue
            for src in n.inputs:
                if src.node.id in after or src.node.type_name == "Constant" or src in cut:
                    continue
                cut.append(src)
        self.cut = cut
        self.params = params
        self.computed = [o for o in cut if o.node.id not in params]
        if carried and not self.computed:
            # Nothing runs before the point, so the suffix would be this very model, staged again
            # without end: the value the point needs is a model input too large to read as one.
            ports = [i for i in point.op.value_inputs if i < len(point.inputs) and not known_at_plan(point.inputs[i])]
            raise UnsupportedOpError(
                f"device {device}: node '{point.name}' ({point.type_name}) reads input(s) {ports} as values (they "
                f"set shapes, axes or counts), but they come from model input(s) "
                f"{sorted({point.inputs[i].node.name for i in ports})} with more than {MAX_VALUE_INPUT_ELEMENTS} "
                "elements, too many to read that way")
        self.prefix: Executable | None = None
        if self.computed:
            prefix_model = Model(list(self.computed), parameters=model.parameters, name=f"{model.name}/prefix").clone()
            self.prefix = compile(prefix_model)
        #: how the point's own stage runs: a one-node model (middle), the host, or in the suffix
        self.middle: Executable | None = None
        self.point_feed: list[Output] = [i for i in point.inputs if i.node.constant_value() is None]
        self.on_host = point.op.host_stage
        self.in_suffix = carried
        if not self.on_host and not self.in_suffix:
            self.middle = compile(self._one_node_model(point))
        self._subgraphs: OrderedDict[Any, Executable] = OrderedDict()
        self._subgraphs_lock = threading.Lock()
        self.suffix = compile(self._suffix_model(model, cut, point))

    @staticmethod
    def _one_node_model(point: Node) -> Model:
        params: list[Node] = []
        inputs: list[Output] = []
        for i in point.inputs:
            v = i.node.constant_value()
            if v is not None:
                inputs.append(i)
                continue
            p = Node.create(Parameter, [], {"element_type": i.element_type.ir, "shape": i.partial_shape},
                            name=f"{i.node.name}/{i.index}/staged")
            params.append(p)
            inputs.append(p.output(0))
        node = Node(point.op, inputs, point.attrs, point.name)
        return Model(node.outputs(), parameters=params, name=f"{point.name}/stage")

    def _suffix_model(self, model: Model, cut: list[Output], point: Node) -> Model:
        clone = model.clone()
        by_name = {n.name: n for n in clone.get_ordered_ops()}
        new_params: list[Node] = []
        fed = list(cut) if self.in_suffix else [*cut, *point.outputs()]
        for o in fed:
            co = by_name[o.node.name].output(o.index)
            shape = (o.partial_shape if o.node.id != point.id
                     else PartialShape.dynamic(o.partial_shape.rank))
            p = Node.create(Parameter, [], {"element_type": o.element_type.ir, "shape": shape},
                            name=f"{o.node.name}/{o.index}/staged")
            clone.replace_output(co, p.output(0))
            new_params.append(p)
        return Model(clone.results, parameters=new_params, name=f"{model.name}/suffix")

    # --- Executable ------------------------------------------------------------------------
    def create_state(self) -> _StagedState:
        return _StagedState(self)

    def infer(self, inputs: Sequence[np.ndarray], state: Any) -> list[np.ndarray]:
        st: _StagedState = state if isinstance(state, _StagedState) else self.create_state()
        pre = self.prefix.infer(inputs, st.prefix) if self.prefix is not None else []
        values: dict[Output, np.ndarray] = dict(zip(self.computed, pre))
        for o in self.cut:
            if o.node.id in self.params:
                values[o] = inputs[self.params[o.node.id]]
        feed = [values[o] for o in self.cut]
        if self.in_suffix:
            return self.suffix.infer(feed, st.suffix)
        if self.middle is None:  # neither in the suffix nor a one-node stage: a host op
            point_outs = self._run_host(values, st)
        else:
            point_outs = self.middle.infer([values[i] for i in self.point_feed], st.middle)
        return self.suffix.infer(feed + list(point_outs), st.suffix)

    def _run_host(self, values: dict[Output, np.ndarray], st: _StagedState) -> list[np.ndarray]:
        point = self.point
        args = [values[i] if i in values else np.asarray(i.node.constant_value()) for i in point.inputs]

        def run_subgraph(model: Model, feed: list[np.ndarray]) -> list[np.ndarray]:
            key = (id(model), tuple(np.shape(a) for a in feed))
            exe = self._subgraph(model, key)
            got = st.subgraphs.get(key)
            if got is None or got[0] is not exe:
                got = st.subgraphs[key] = (exe, exe.create_state())
                while len(st.subgraphs) > SUBGRAPH_CACHE_SIZE:
                    st.subgraphs.pop(next(iter(st.subgraphs)))
            return list(exe.infer(feed, got[1]))

        where = f"device {self.device}: node '{point.name}' ({point.type_name})"
        return list(point.op.run_host_stage(point.attrs, args, run_subgraph, where))

    def _subgraph(self, model: Model, key: Any) -> Executable:
        """``model`` (a Loop body) compiled for these input shapes; least recently used dropped.
        Static shapes let the device plan on the values of small inputs (the iteration number
        that Slice bounds read)."""
        with self._subgraphs_lock:
            exe = self._subgraphs.get(key)
            if exe is not None:
                self._subgraphs.move_to_end(key)
                return exe
            body = model.clone()
            body.reshape({i: list(s) for i, s in enumerate(key[1])})
            exe = self._subgraphs[key] = self._compile(body)
            while len(self._subgraphs) > SUBGRAPH_CACHE_SIZE:
                self._subgraphs.popitem(last=False)
            return exe

    def performance_counters(self, state: Any) -> list[Any]:
        st: _StagedState = state
        rows: list[Any] = []
        for exe, sub in ((self.prefix, st.prefix), (self.middle, st.middle), (self.suffix, st.suffix)):
            if exe is not None:
                rows.extend(exe.performance_counters(sub))
        return rows
