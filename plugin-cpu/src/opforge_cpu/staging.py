"""Models with data-dependent output shapes (NonZero, Unique, NonMaxSuppression).

The C++ program needs every shape at compile time, so a model is run in stages around the first
such node ``D``:

1. the *prefix* (every node that does not depend on ``D``) as one static program, producing
   ``D``'s inputs and every other value the rest of the model reads;
2. ``D`` alone, in a one-step program whose outputs are allocated at an upper bound (the
   dynamic dimension at its largest: ``numel`` for NonZero/Unique, batch * classes * boxes for
   NonMaxSuppression); its C++ kernel writes the actual size into an extra output, and the
   outputs are trimmed to it;
3. the *suffix* (everything that depends on ``D``) as a model whose inputs are those values,
   compiled per input shape like any dynamic model (a later data-dependent node stages again).

Every op still runs in C++ (Python only passes arrays between the stages), except the *host
ops* (``HOST_OPS``): ImageDecoder's stage decodes on the host with Pillow
(:func:`opforge.opset.image_decoder.decode_image`), because image codecs are not kernels; Loop's
stage iterates on the host (:func:`opforge.opset.loop.run_loop`) over its body compiled once as a
CPU executable of its own (which plans one C++ program per body input shape), so the body runs in
C++ and only the iteration bookkeeping is Python.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np
from opforge.element_type import Type
from opforge.errors import KernelError
from opforge.graph import Model, Node, Output
from opforge.opset.parameter import Parameter
from opforge.shape import PartialShape

#: Loop bodies compiled per input shapes kept per Loop (a state that grows each iteration
#: compiles the body per length; beyond this many shapes the oldest is dropped)
BODY_CACHE_SIZE = 32

#: data-dependent ops (``Op.data_dependent_shape``) whose stage runs on the host instead of a one-node C++ program
HOST_OPS = {"ImageDecoder", "Loop"}


def dynamic_node(model: Model) -> Node | None:
    """The first node of a data-dependent output shape (or a host op) whose inputs are all static."""
    for n in model.get_ordered_ops():
        if (n.op.is_standard and n.op.data_dependent_shape
                # a host op is never C++ code, even where its output shapes happen to be known
                and (n.type_name in HOST_OPS or not all(o.partial_shape.is_static for o in n.outputs()))
                and all(i.partial_shape.is_static for i in n.inputs)):
            return n
    return None


def _bound(node: Node) -> int:
    """Upper bound of the dynamic dimension of ``node``'s outputs."""
    x = node.inputs[0].shape
    if node.type_name == "NonZero":
        return max(1, int(np.prod(x, dtype=np.int64)))
    if node.type_name == "Unique":
        if len(node.inputs) > 1:
            axis = int(np.asarray(node.inputs[1].node.constant_value()).reshape(-1)[0])
            return int(x[axis % len(x)])
        return int(np.prod(x, dtype=np.int64))
    b, c, n = node.inputs[1].shape
    bound = b * c * n
    if len(node.inputs) > 2:
        v = node.inputs[2].node.constant_value()
        if v is not None and np.asarray(v).size:
            bound = b * c * min(n, max(0, int(np.asarray(v).reshape(-1)[0])))
    return int(bound)


class _StagedState:
    def __init__(self, staged: StagedProgram) -> None:
        self.prefix = staged.prefix.create_state() if staged.prefix is not None else None
        self.dyn = staged.dyn_program.create_state() if staged.dyn_program is not None else None
        self.suffix = staged.suffix.create_state()
        #: Loop: a state per body executable (per body input shapes)
        self.body: dict[tuple[tuple[int, ...], ...], Any] = {}


class StagedProgram:
    """Looks like a ``_core.Program`` to the executable: ``create_state`` and ``run``."""

    python_calls = 0

    def __init__(self, make_executable: Any, core: Any, model: Model, dyn: Node, num_threads: int) -> None:
        after = self._dependents(model, dyn)
        params = {p.id: i for i, p in enumerate(model.parameters)}
        # Values computed before D that D or a later node (or a Result) reads.
        cut: list[Output] = []
        for n in [*model.get_ordered_ops()]:
            if n.id not in after and n.type_name != "Result":
                continue
            for src in n.inputs:
                if src.node.id in after or src.node.type_name == "Constant" or src in cut:
                    continue
                cut.append(src)
        self.cut = cut
        self.params = params
        computed = [o for o in cut if o.node.id not in params]
        self.computed = computed
        self.prefix = None
        if computed:
            prefix_model = Model(list(computed), parameters=model.parameters, name=f"{model.name}/prefix").clone()
            self.prefix = make_executable(prefix_model)
        self.dyn = dyn
        self.dyn_feed = [i for i in dyn.inputs if i.node.constant_value() is None]
        self.dyn_program: Any = None
        #: Loop: its body compiled per body input shapes (static, so the CPU executable can also
        #: plan on the values of small inputs such as the iteration number, as Slice bounds need)
        self._make_executable = make_executable
        self._bodies: OrderedDict[tuple[tuple[int, ...], ...], Any] = OrderedDict()
        self._bodies_lock = threading.Lock()
        if dyn.type_name not in HOST_OPS:
            self._one_node_program(core, dyn, num_threads)
        # The rest: a model fed with the cut values and D's outputs.
        self._finish(model, make_executable, cut, dyn)

    def _one_node_program(self, core: Any, dyn: Node, num_threads: int) -> None:
        """D alone, outputs at their upper bound plus the actual size."""
        prog = core.Program()
        bound = _bound(dyn)
        ins, feed = [], []
        for i in dyn.inputs:
            v = i.node.constant_value()
            t = prog.add_tensor(i.element_type.ir, list(i.shape), None if v is None else np.asarray(v))
            ins.append(t)
            if v is None:
                feed.append((i, t))
        self.dyn_axes: list[int | None] = []
        outs = []
        for o in dyn.outputs():
            dims = o.partial_shape.dims
            axis = next((k for k, d in enumerate(dims) if d is None), None)
            self.dyn_axes.append(axis)
            outs.append(prog.add_tensor(o.element_type.ir, [bound if d is None else int(d) for d in dims], None))
        outs.append(prog.add_tensor(Type.i64.ir, [1], None))
        from opforge_cpu.emit import attrs_dict

        prog.add_node(dyn.name, dyn.type_name, dyn.version, attrs_dict(dyn), ins, outs, [dyn.name])
        prog.set_io([t for _, t in feed], outs)
        prog.finalize(num_threads, False)
        self.dyn_program = prog
        self.dyn_feed = [i for i, _ in feed]

    def _finish(self, model: Model, make_executable: Any, cut: list[Output], dyn: Node) -> None:
        clone = model.clone()
        by_name = {n.name: n for n in clone.get_ordered_ops()}
        new_params: list[Node] = []
        for o in [*cut, *dyn.outputs()]:
            co = by_name[o.node.name].output(o.index)
            shape = o.partial_shape if o.node.id != dyn.id else PartialShape.dynamic(o.partial_shape.rank)
            p = Node.create(Parameter, [], {"element_type": o.element_type.ir, "shape": shape},
                            name=f"{o.node.name}/{o.index}/staged")
            clone.replace_output(co, p.output(0))
            new_params.append(p)
        suffix_model = Model(clone.results, parameters=new_params, name=f"{model.name}/suffix")
        self.suffix = make_executable(suffix_model)

    @staticmethod
    def _dependents(model: Model, dyn: Node) -> set[int]:
        after = {dyn.id}
        for n in model.get_ordered_ops():
            if any(i.node.id in after for i in n.inputs):
                after.add(n.id)
        return after

    def create_state(self) -> _StagedState:
        return _StagedState(self)

    def run(self, st: _StagedState, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        pre = self.prefix.infer(inputs, st.prefix) if self.prefix is not None else []
        values: dict[Output, np.ndarray] = {o: a for o, a in zip(self.computed, pre)}
        for o in self.cut:
            if o.node.id in self.params:
                values[o] = inputs[self.params[o.node.id]]
        if self.dyn_program is None:  # a host op
            return self.suffix.infer([values[o] for o in self.cut] + self._run_host(values, st), st.suffix)
        outs = self.dyn_program.run(st.dyn, [np.ascontiguousarray(values[i]) if values[i].ndim else values[i]
                                             for i in self.dyn_feed])
        size = int(outs[-1][0])
        dyn_outs = []
        for a, axis in zip(outs[:-1], self.dyn_axes):
            if axis is not None:
                index = [slice(None)] * a.ndim
                index[axis] = slice(0, size)
                a = np.ascontiguousarray(a[tuple(index)])
            dyn_outs.append(a)
        return self.suffix.infer([values[o] for o in self.cut] + dyn_outs, st.suffix)

    def _run_host(self, values: dict[Output, np.ndarray], st: _StagedState) -> list[np.ndarray]:
        dyn = self.dyn
        args = [values[i] if i in values else np.asarray(i.node.constant_value()) for i in dyn.inputs]
        if dyn.type_name == "ImageDecoder":
            from opforge.opset.image_decoder import decode_image

            return [decode_image(args[0], str(dyn.attrs.pixel_format),  # type: ignore[attr-defined]
                                 f"device CPU: node '{dyn.name}' (ImageDecoder)")]
        if dyn.type_name == "Loop":
            from opforge.opset.loop import run_loop

            def run_body(feed: list[np.ndarray]) -> list[np.ndarray]:
                key = tuple(a.shape for a in feed)  # arrays: their shapes are tuples of ints
                exe = self._body(dyn, key)
                state = st.body.get(key)
                if state is None or state[0] is not exe:
                    state = st.body[key] = (exe, exe.create_state())
                return list(exe.infer(feed, state[1]))

            return run_loop(dyn.attrs, args, run_body, f"device CPU: node '{dyn.name}' (Loop)")  # type: ignore[arg-type]
        raise KernelError(f"device CPU: node '{dyn.name}' ({dyn.type_name}) has no host implementation")

    def _body(self, dyn: Node, key: tuple[tuple[int, ...], ...]) -> Any:
        """The Loop body compiled for these input shapes (cached, least recently used dropped)."""
        with self._bodies_lock:
            exe = self._bodies.get(key)
            if exe is not None:
                self._bodies.move_to_end(key)
                return exe
            body: Model = dyn.attrs.body.clone()  # type: ignore[attr-defined]
            body.reshape(dict(enumerate(key)))
            exe = self._bodies[key] = self._make_executable(body)
            while len(self._bodies) > BODY_CACHE_SIZE:
                self._bodies.popitem(last=False)
            return exe

    def profile(self, state: Any) -> list[Any]:
        return []
