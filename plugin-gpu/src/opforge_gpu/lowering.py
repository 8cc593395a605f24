"""Lowering a model into a :class:`~opforge_gpu.plan.Plan`: the context kernels use to declare
tensors and launches, graph preparation (static shapes, constant folding) and epilogue fusion.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np
from opforge.element_type import Type
from opforge.errors import KernelError, OpforgeError, UnsupportedOpError
from opforge.graph import Model, Node, Output
from opforge.op import STRUCTURAL
from opforge.opset.constant import Constant

from opforge_gpu.opencl import DeviceContext
from opforge_gpu.plan import (
    BufferArg,
    ErrorArg,
    IndexCheck,
    Launch,
    Plan,
    ScalarArg,
    Tensor,
    TensorArg,
    kernel_path,
    kernel_source,
    render_defines,
)
from opforge_gpu.storage import Storage, storage_for

#: folding anything larger would trade a cheap op for a big upload
MAX_FOLDED_BYTES = 64 * 1024 * 1024


class KernelImpl(Protocol):
    """What the plugin can run a node with: a built-in kernel or a custom (XML) kernel."""

    #: shown in errors and performance counters ("builtin", "custom:file.xml")
    origin: str

    def supports(self, node: Node) -> str | None:
        """None when ``node`` can run; otherwise why not (for UnsupportedOpError)."""

    def lower(self, node: Node, lw: Lowering, epilogue: Epilogue | None = None) -> None:
        """Declare the node's output tensors and the launches computing them."""


@dataclasses.dataclass
class Epilogue:
    """What a Convolution/MatMul applies to its result before storing it, folded from the nodes
    after it: ``y = act(acc * scale + bias + residual)`` per output channel."""

    scale: np.ndarray | None = None
    bias: np.ndarray | None = None
    residual: Output | None = None
    act: int = 0  # 0 none, 1 relu, 2 clamp
    act_min: float = 0.0
    act_max: float = 0.0
    members: list[Node] = dataclasses.field(default_factory=list)

    @property
    def last(self) -> Node | None:
        return self.members[-1] if self.members else None


def is_standard(node: Node) -> bool:
    return node.op.is_standard


def const_of(out: Output) -> np.ndarray | None:
    return out.node.constant_value()


class Lowering:
    """The context kernels lower nodes with. One per plan."""

    def __init__(self, plan: Plan, dev: DeviceContext, config: dict[str, Any], half: bool,
                 const_cache: dict[Any, Any], cache_dir: str | None) -> None:
        self.plan = plan
        self.dev = dev
        self.cl = dev.cl
        self.config = config
        self.half = half
        self.cache_dir = cache_dir
        self._const_cache = const_cache
        self._values: dict[tuple[int, int], Tensor] = {}
        self._params: dict[bytes, BufferArg] = {}
        self._dummy: BufferArg | None = None
        self.node: Node | None = None
        #: output ports something reads: kernels may skip computing the others
        self.used: set[tuple[int, int]] = set()
        #: data-dependent nodes (library/dynamic.py): the observed output size (None: count only,
        #: and set ``probe`` to the one-element i32 tensor holding the count)
        self.count: int | None = None
        self.probe: Tensor | None = None

    # --- tensors ---------------------------------------------------------------------------
    def storage(self, t: Type, what: str = "") -> Storage:
        s = storage_for(t, self.half)
        if s is None:
            node = self.node
            raise UnsupportedOpError(
                f"node '{node.name if node else '?'}' ({node.type_name if node else '?'}): element type "
                f"{t} {what}is not supported on GPU"
            )
        return s

    def input(self, node: Node, i: int) -> Tensor:
        return self.input_of(node.inputs[i], node)

    def input_of(self, src: Output, reader: Node | None = None) -> Tensor:
        """The tensor of output port ``src`` (a constant is uploaded on first use)."""
        key = (src.node.id, src.index)
        t = self._values.get(key)
        if t is None:
            value = src.node.constant_value()
            if value is None:
                who = f"node '{reader.name}' ({reader.type_name})" if reader is not None else "a node"
                raise KernelError(
                    f"{who}: input from '{src.node.name}' has not been computed (internal ordering error)"
                )
            # Keyed by the array: clones of a model share constant arrays, so every plan of a
            # compiled model shares one device copy.
            t = self.const_tensor(value, src.element_type, key=("const", id(value)))
            self._values[key] = t
        return t

    def set_output(self, node: Node, i: int, t: Tensor) -> None:
        self._values[(node.id, i)] = t

    def new_output(self, node: Node, i: int = 0) -> Tensor:
        spec = node.output_specs[i]
        t = self.plan.new_tensor(static_shape(node, i), self.storage(spec.type, f"of output {i} "), "temp",
                                 what=f"node '{node.name}' ({node.type_name}): output {i}")
        self.set_output(node, i, t)
        return t

    def temp(self, shape: Sequence[int], storage: Storage) -> Tensor:
        node = self.node
        who = f"node '{node.name}' ({node.type_name})" if node is not None else "a kernel"
        return self.plan.new_tensor(shape, storage, "temp", what=f"{who}: a temporary buffer")

    def const_tensor(self, value: np.ndarray, t: Type | None = None, key: Any = None,
                     exact: bool = False) -> Tensor:
        """A constant uploaded once (and shared by every request and plan of the model). With
        ``exact`` it keeps its element type even in f16 mode (a kernel declared its type)."""
        et = t or Type.from_numpy(value.dtype)
        st = storage_for(et) if exact else self.storage(et, "of a constant ")
        if st is None:
            raise UnsupportedOpError(f"element type {et} of a constant is not supported on GPU")
        host = np.asarray(value).astype(st.np, copy=False)
        if not host.flags.c_contiguous:
            host = np.array(host, order="C")  # (ascontiguousarray would make scalars 1-D)
        tensor = self.plan.new_tensor(host.shape, st, "const", host, what="a constant")
        ck = (key, st.ctype) if key is not None else None
        buf = self._const_cache.get(ck) if ck is not None else None
        if buf is None:
            mf = self.cl.mem_flags
            data = host if host.nbytes else np.zeros(1, st.np)
            buf = self.cl.Buffer(self.dev.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=data)
            if ck is not None:
                self._const_cache[ck] = buf
        self.plan.const_buffers[tensor.root] = buf
        return tensor

    def view(self, base: Tensor, shape: Sequence[int]) -> Tensor:
        return self.plan.view(base, shape)

    # --- launches --------------------------------------------------------------------------
    def params(self, ints: Sequence[int]) -> BufferArg:
        """An int32 parameter block (deduplicated: equal blocks share one buffer)."""
        arr = np.asarray([int(v) for v in ints] or [0], dtype=np.int64)
        if arr.size and (arr.max() > 2**31 - 1 or arr.min() < -(2**31)):
            raise KernelError(
                f"node '{self.node.name if self.node else '?'}': a size or offset exceeds 32 bits; "
                "tensors over 2**31 elements are not supported on GPU"
            )
        data = arr.astype(np.int32)
        key = data.tobytes()
        got = self._params.get(key)
        if got is None:
            mf = self.cl.mem_flags
            got = BufferArg(self.cl.Buffer(self.dev.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=data))
            self._params[key] = got
        return got

    def dummy(self) -> BufferArg:
        """A tiny buffer for optional kernel arguments that are compiled out."""
        if self._dummy is None:
            self._dummy = BufferArg(self.cl.Buffer(self.dev.context, self.cl.mem_flags.READ_WRITE, 16))
        return self._dummy

    def index_check(self, message: str, *, negative: bool = True, inclusive: bool = False,
                    which_base: int = 0, node: Node | None = None) -> list[Any]:
        """The two trailing kernel arguments (``__global int* err, int check``) of a launch whose
        indices come at run time; ``message`` is the error text (see :class:`IndexCheck`).
        The kernel's file is compiled with ``index_error.cl`` (define ``INDEX_ERRORS``)."""
        n = node or self.node
        self.plan.checks.append(IndexCheck(n.name if n else "?", n.type_name if n else "?", message,
                                           negative, inclusive, which_base))
        return [ErrorArg(), ScalarArg(np.int32(len(self.plan.checks)))]

    def program(self, filename: str, defines: dict[str, Any], options: str = "") -> Any:
        head = render_defines(defines)
        if "double" in head:
            head = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" + head
        files = {filename: kernel_path(filename)}
        if defines.get("INDEX_ERRORS"):
            head += '#line 1 "index_error.cl"\n' + kernel_source("index_error.cl")
            files["index_error.cl"] = kernel_path("index_error.cl")
        source = head + f'#line 1 "{filename}"\n' + kernel_source(filename)
        return self.dev.program(source, options, self.cache_dir, what=f"built-in kernel file {filename}",
                                files=files)

    def launch(self, filename: str, kernel: str, defines: dict[str, Any], args: Sequence[Any],
               gsize: Sequence[int], lsize: Sequence[int] | None = None, *, node: Node | None = None,
               program: Any = None) -> None:
        n = node or self.node
        if any(g == 0 for g in gsize):
            return  # an empty tensor: nothing to compute
        prg = program if program is not None else self.program(filename, defines)
        g = tuple(int(x) for x in gsize)
        loc = tuple(int(x) for x in lsize) if lsize is not None else None
        if loc is not None:
            g = tuple(-(-gi // li) * li for gi, li in zip(g, loc))
        plain = [TensorArg(a.id) if isinstance(a, Tensor) else a for a in args]
        self.plan.launches.append(Launch(
            node=n.name if n else "?", node_type=n.type_name if n else "?", program=prg, kernel=kernel,
            args=plain, gsize=g, lsize=loc, source_file=filename,
        ))


def static_shape(node: Node, i: int = 0) -> tuple[int, ...]:
    shape = node.output_specs[i].shape
    if not shape.is_static:
        raise UnsupportedOpError(
            f"node '{node.name}' ({node.type_name}): output {i} has dynamic shape {shape} even with "
            "static inputs (data-dependent shapes are not supported on GPU)"
        )
    return shape.to_tuple()


# --- graph preparation ----------------------------------------------------------------------
# Which input ports decide shapes or how a node is planned is a fact of the op
# (``Op.value_inputs``): when one is fed by a model input, its value is read on the host and the
# plan is built for it (one plan per value, like one plan per input shape). ``Op.scalar_inputs``
# take a scalar: a one-element model input is given to them as one (a non-constant [1] input is
# accepted where a known [1] value is rejected by shape inference).


def value_port(node: Node, i: int) -> bool:
    """Whether input ``i`` of ``node`` is one whose value the GPU needs on the host."""
    return node.op.is_standard and i in node.op.value_inputs


def scalar_port(node: Node, i: int) -> bool:
    return node.op.is_standard and i in node.op.scalar_inputs

#: a model input read on the host for planning must be at most this many elements
MAX_VALUE_INPUT = 4096


def known_at_plan(out: Output, _memo: dict[int, bool] | None = None) -> bool:
    """Whether the value of ``out`` is known when a plan is built: a constant, a shape, a model
    input (read on the host), or computed from those by standard operations."""
    memo = {} if _memo is None else _memo
    node = out.node
    got = memo.get(node.id)
    if got is not None:
        return got
    if node.type_name in ("Constant", "Parameter", "ShapeOf"):
        ok = True
    elif not is_standard(node) or not node.inputs or len(memo) > 256:
        ok = False
    else:
        memo[node.id] = False  # cycles cannot happen; this only bounds the walk
        ok = all(known_at_plan(i, memo) for i in node.inputs)
    memo[node.id] = ok
    return ok


def plan_value(node: Node, i: int) -> str | None:
    """None when input ``i`` of ``node`` is a constant or known when the plan is built, else why not."""
    if i >= len(node.inputs) or known_at_plan(node.inputs[i]):
        return None
    return f"input {i} is computed on the device, but the GPU needs its value to plan the node"


def shape_nodes(model: Model) -> set[int]:
    """Ids of the nodes whose values some value port needs (shape computations), directly or
    through other such nodes. Their results may also be used as data (ONNX OneHot's depth)."""
    consumers = model.consumers()
    found: set[int] = set()
    for node in reversed(model.get_ordered_ops()):
        if node.type_name in STRUCTURAL or not is_standard(node):
            continue
        if any(value_port(user, idx) or (user.id in found and user.type_name != "ShapeOf")
               for out in node.outputs() for user, idx in consumers.get(out, [])):
            found.add(node.id)
    return found


def _value_uses(model: Model, shape: set[int]) -> dict[int, list[tuple[Node, int]]]:
    """Per model input (index), the (node, port) uses that need its value on the host."""
    consumers = model.consumers()
    out: dict[int, list[tuple[Node, int]]] = {}
    for k, p in enumerate(model.parameters):
        uses = [(n, i) for n, i in consumers.get(p.output(0), [])
                if value_port(n, i) or (n.id in shape and n.type_name != "ShapeOf")]
        if uses:
            out[k] = uses
    return out


def value_inputs(model: Model) -> list[int]:
    """Indices of the model inputs whose values the plans depend on."""
    return sorted(_value_uses(model, shape_nodes(model)))


def specialize(model: Model, shapes: Sequence[tuple[int, ...]],
               values: dict[int, np.ndarray] | None = None) -> Model:
    """A clone of ``model`` with these input shapes, shapes of ShapeOf folded and every
    standard node with constant inputs folded into a Constant (by the reference). ``values``
    (model input index -> host array) replace the inputs where their value decides a shape: only
    shape computations are folded from them, data stays on the device."""
    m = model.clone()
    if any(p.output(0).partial_shape != shp for p, shp in zip(m.parameters, shapes)):
        m.reshape({i: list(s) for i, s in enumerate(shapes)})
    runtime: set[int] = set()
    if values:
        shape = shape_nodes(m)
        for k, uses in _value_uses(m, shape).items():
            if k not in values:
                continue
            et = m.parameters[k].output_specs[0].type
            arr = np.array(values[k], dtype=et.np, order="C")
            name = f"{m.parameters[k].name}:value"
            const = Node.create(Constant, [], {"value": arr}, name=name)
            scalar = Node.create(Constant, [], {"value": arr.reshape(())}, name=name + ":scalar") \
                if arr.size == 1 else const
            runtime.update((const.id, scalar.id))
            for n, i in uses:
                n.inputs[i] = (scalar if scalar_port(n, i) else const).output(0)
        fold_constants(m, runtime=runtime, shape=shape, reinfer=True)
        return m
    fold_constants(m)
    return m


def _scalar_inputs(node: Node, runtime: set[int]) -> None:
    """One-element values of model inputs reaching a scalar port become scalars."""
    for i in (node.op.scalar_inputs if node.op.is_standard else ()):
        if i >= len(node.inputs):
            continue
        src = node.inputs[i].node
        v = src.constant_value()
        if v is not None and src.id in runtime and v.size == 1 and v.ndim:
            const = Node.create(Constant, [], {"value": np.array(v.reshape(()), order="C")},
                                name=src.name + ":scalar")
            runtime.add(const.id)
            node.inputs[i] = const.output(0)


def fold_constants(model: Model, keep: Callable[[Node], bool] | None = None, runtime: set[int] | None = None,
                   shape: set[int] | None = None, reinfer: bool = False) -> None:
    """Fold standard nodes with constant inputs. Constants in ``runtime`` hold values of model
    inputs: nodes reading them are folded only when they are shape computations (``shape``)."""
    from opforge.reference import evaluate_node

    runtime = runtime if runtime is not None else set()
    shape = shape if shape is not None else set()
    changed = reinfer
    for node in model.get_ordered_ops():
        if node.type_name in STRUCTURAL:
            continue
        if not is_standard(node) or (keep is not None and keep(node)):
            if changed:
                node.validate_and_infer()
            continue
        if changed:
            # Readers of folded values may now infer static shapes (Reshape of a folded ShapeOf).
            _scalar_inputs(node, runtime)
            node.validate_and_infer()
        outs: list[np.ndarray] | None = None
        from_runtime = any(i.node.id in runtime for i in node.inputs)
        if from_runtime and (node.id not in shape or any(
                int(np.prod(s.shape.to_tuple())) > MAX_VALUE_INPUT for s in node.output_specs if s.shape.is_static)):
            continue  # data computed from model inputs runs on the device
        if node.type_name == "ShapeOf" and node.inputs[0].partial_shape.is_static:
            et = node.output_specs[0].type
            outs = [np.asarray(node.inputs[0].shape, dtype=et.np)]
        elif node.inputs and all(i.node.type_name == "Constant" for i in node.inputs):
            try:
                outs = evaluate_node(node, [i.node.constant_value() for i in node.inputs])  # type: ignore[misc]
            except OpforgeError:
                outs = None  # let the kernel run it and report the error with the inputs
        if outs is None or sum(o.nbytes for o in outs) > MAX_FOLDED_BYTES:
            continue
        for i, arr in enumerate(outs):
            name = node.name if len(outs) == 1 else f"{node.name}:{i}"
            const = Node.create(Constant, [], {"value": np.array(arr, order="C")}, name=name)
            const.output(0).set_names(node.output(i).names)
            if from_runtime:
                runtime.add(const.id)
            model.replace_output(node.output(i), const.output(0))
        changed = True
    if changed:
        for node in model.get_ordered_ops():
            if node.type_name not in STRUCTURAL:
                node.validate_and_infer()


# --- epilogue fusion ------------------------------------------------------------------------
_ANCHORS = {"Convolution", "GroupConvolution", "MatMul"}


def _channel_vector(value: np.ndarray, out_shape: tuple[int, ...], axis: int) -> np.ndarray | None:
    """``value`` as one number per channel of ``axis`` when it broadcasts that way, else None."""
    v = np.asarray(value)
    if v.ndim > len(out_shape):
        return None
    full = (1,) * (len(out_shape) - v.ndim) + v.shape
    ax = axis % len(out_shape)
    channels = out_shape[ax]
    for d, n in enumerate(full):
        if d != ax and n != 1:
            return None
    if full[ax] not in (1, channels):
        return None
    return np.broadcast_to(v.reshape(-1).astype(np.float64), (channels,)).copy()


def plan_epilogues(model: Model, builtin: Callable[[Node], bool]) -> dict[int, Epilogue]:
    """Per anchor node id, the chain of nodes folded into its epilogue (possibly empty)."""
    consumers = model.consumers()
    outputs = {r.inputs[0] for r in model.results}
    groups: dict[int, Epilogue] = {}
    claimed: set[int] = set()  # a node joins one epilogue at most (two convs may meet at an Add)
    for node in model.get_ordered_ops():
        if node.type_name not in _ANCHORS or not is_standard(node) or not builtin(node):
            continue
        if not node.output_specs[0].type.is_float or not node.output_specs[0].shape.is_static:
            continue
        shape = node.output_specs[0].shape.to_tuple()
        if len(shape) < 2:
            continue
        axis = 1 if node.type_name != "MatMul" else -1
        ep = Epilogue()
        scale = np.ones(shape[axis])
        bias = np.zeros(shape[axis])
        affine = False
        cur = node.output(0)
        while True:
            users = consumers.get(cur, [])
            if len(users) != 1 or cur in outputs:
                break
            user, idx = users[0]
            if not is_standard(user) or not builtin(user) or user.type_name in STRUCTURAL or user.id in claimed:
                break
            if user.output_specs[0].shape != user.inputs[idx].partial_shape:
                break  # the follower broadcasts the result to a larger shape
            t = user.type_name
            other = user.inputs[1 - idx] if len(user.inputs) == 2 else None
            cval = const_of(other) if other is not None else None
            scales = t in ("Multiply", "Divide", "BatchNormInference")
            if scales and (node.type_name == "MatMul" or node.inputs[1].node.constant_value() is None):
                break  # a MatMul's B may be a variable: there are no weights to fold a scale into
            if t in ("Add", "Subtract", "Multiply", "Divide") and cval is not None and ep.residual is None \
                    and ep.act == 0 and getattr(user.attrs, "auto_broadcast", "numpy") == "numpy":
                vec = _channel_vector(cval, shape, axis)
                if vec is None or (t in ("Subtract", "Divide") and idx != 0):
                    break
                if t == "Add":
                    bias = bias + vec
                elif t == "Subtract":
                    bias = bias - vec
                elif t == "Multiply":
                    scale, bias = scale * vec, bias * vec
                else:
                    scale, bias = scale / vec, bias / vec
                affine = True
            elif t == "BatchNormInference" and ep.residual is None and ep.act == 0:
                folded = batch_norm_affine(user)
                if folded is None or folded[2] != idx:
                    break
                s, b, _ = folded
                scale, bias = scale * s, bias * s + b
                affine = True
            elif t == "Add" and other is not None and cval is None and ep.residual is None and ep.act == 0:
                if other.partial_shape != cur.partial_shape or other.element_type != cur.element_type:
                    break
                ep.residual = other
            elif t == "Relu" and ep.act == 0:
                ep.act = 1
            elif t == "Clamp" and ep.act == 0:
                ep.act, ep.act_min, ep.act_max = 2, float(user.attrs.min), float(user.attrs.max)  # type: ignore[attr-defined]
            else:
                break
            ep.members.append(user)
            cur = user.output(0)
            if ep.act:
                break
        if affine:
            ep.scale, ep.bias = scale, bias
        claimed.update(m.id for m in ep.members)
        groups[node.id] = ep
    return groups


def batch_norm_affine(node: Node) -> tuple[np.ndarray, np.ndarray, int] | None:
    """(scale, shift, data input index) of a BatchNormInference with constant parameters."""
    if node.version == "opset1":
        data_i, gi, bi, mi, vi = 2, 0, 1, 3, 4
    else:
        data_i, gi, bi, mi, vi = 0, 1, 2, 3, 4
    vals = [const_of(node.inputs[i]) for i in (gi, bi, mi, vi)]
    if any(v is None for v in vals):
        return None
    g, b, m, v = (np.asarray(x, dtype=np.float64).reshape(-1) for x in vals)  # type: ignore[arg-type]
    eps = float(node.attrs.epsilon)  # type: ignore[attr-defined]
    s = g / np.sqrt(v + eps)
    return s, b - m * s, data_i
