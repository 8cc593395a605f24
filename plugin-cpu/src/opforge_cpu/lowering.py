"""From a graph to a C++ program: specialisation to static shapes, graph rewrites (BatchNorm
folding, GELU and LayerNorm patterns), fusion of element-wise tails into oneDNN post-ops, and
the emission of tensors and kernel steps.

Everything here runs once per compiled model (once per input shape for dynamic models); none of
it runs during inference.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import types
from collections.abc import Callable, Collection, Mapping
from typing import Any

import numpy as np
from opforge.element_type import Type
from opforge.errors import PluginValidationError, UnsupportedOpError
from opforge.graph import WEIGHTS_RELEASED, Model, Node, Output
from opforge.op import STRUCTURAL
from opforge.opset.add import Add
from opforge.opset.constant import Constant, ConstantAttrs
from opforge.opset.convert import Convert
from opforge.opset.gelu import Gelu
from opforge.opset.mvn import MVN
from opforge.shape import PartialShape
from opforge.transformations.constant_folding import ConstantFolding
from opforge.transformations.dead_code import DeadCodeElimination

from opforge_cpu.staging import HOST_OPS

#: element-wise ops that oneDNN applies as a post-op of the op before them: name -> encoding
_POST_OPS: dict[str, Callable[[Node], str | None]] = {
    "Relu": lambda n: "relu",
    "Clamp": lambda n: f"clip:{n.attrs.min!r}:{n.attrs.max!r}",  # type: ignore[attr-defined]
    "Sigmoid": lambda n: "sigmoid",
    "Tanh": lambda n: "tanh",
    "Gelu": lambda n: "gelu_tanh" if str(n.attrs.approximation_mode).upper() == "TANH" else "gelu_erf",  # type: ignore[attr-defined]
    "HSwish": lambda n: "hswish",
    "HSigmoid": lambda n: "hsigmoid",
    "Mish": lambda n: "mish",
    "Elu": lambda n: f"elu:{n.attrs.alpha!r}",  # type: ignore[attr-defined]
    "Abs": lambda n: "abs",
    "Exp": lambda n: "exp",
    "Sqrt": lambda n: "sqrt",
}

#: ops the C++ Reshape kernel runs (a view of the same buffer: never an index map)
_RESHAPES = {"Squeeze", "Unsqueeze", "Reshape"}


def index_mapped(node: Node, builtin: Collection[str]) -> bool:
    """Whether standard ``node`` is lowered to one IndexMap kernel (when its parameters are
    constants): an op that only rearranges its input 0 (``Op.rearranges_input``) and has no C++
    kernel of its own, evaluated on element indices (``Emitter.emit_index_map``)."""
    return node.op.rearranges_input and node.type_name not in _RESHAPES and node.type_name not in builtin


def contiguous(value: Any) -> np.ndarray:
    """``value`` as a C-contiguous array of its own rank (``np.ascontiguousarray`` turns a 0-d
    array into a 1-d one, which made scalar value inputs [1]-shaped constants)."""
    a = np.asarray(value)
    return a if a.flags.c_contiguous else a.copy(order="C")


def is_standard(node: Node) -> bool:
    """Built-in kernels are for the standard opset only; a plugin's op of the same name
    (``Identity`` of ``template_extension``) is a different op."""
    return node.op.is_standard


def find_plugin_kernel(kernels: Mapping[tuple[str, str | None], Any], node: Node) -> Any:
    return kernels.get((node.type_name, node.version)) or kernels.get((node.type_name, None))


# ---------------------------------------------------------------------------------- rewrites
#: rt_info key set on a model (and on each Constant) whose constant payloads were released:
#: every kernel reading them packed its own copy, so the graph keeps only a zero-byte stand-in.
#: The core's key, so the reference, constant folding and the IR writer refuse those constants.
RELEASED_KEY = WEIGHTS_RELEASED


def specialize(model: Model, shapes: Mapping[int, tuple[int, ...]] | None,
               values: Mapping[int, np.ndarray] | None = None) -> Model:
    """Static-shape copy of ``model`` (inputs set to ``shapes`` by index), constant folded, with
    shape computations resolved and the graph rewrites applied.

    ``values`` (by input index) turns small inputs that act as parameters (axes, pads, a shape,
    ``k``, the bounds of a Range) into constants for this program: the model's readers of that
    input read the value instead, and everything computed from it folds."""
    if model.rt_info.get(RELEASED_KEY):
        raise UnsupportedOpError(
            f"model '{model.name}': its constant weights were released after the CPU device packed them; "
            "it cannot be planned again")
    m = model.clone() if (shapes or values) else model
    if shapes:
        m.reshape({i: list(s) for i, s in shapes.items()})
    if values:
        for i, v in values.items():
            p = m.parameters[i]
            c = Node.create(Constant, [], {"value": contiguous(v)}, name=f"{p.name}/value")
            c.output(0).set_names([f"{p.name}/value"])  # the input keeps its own tensor names
            m.replace_output(p.output(0), c.output(0))
        m.validate()
    _fold(m)
    _fold_shape_of(m)
    _fold_batch_norm(m)
    _rewrite_gelu(m)
    _rewrite_layer_norm(m)
    _fold(m)
    return m


def _fold(m: Model) -> None:
    ConstantFolding().apply(m)
    DeadCodeElimination().apply(m)


def _const(m: Model, node: Node, value: np.ndarray) -> Node:
    c = Node.create(Constant, [], {"value": contiguous(value)}, name=f"{node.name}/folded")
    return c


def _fold_shape_of(m: Model) -> None:
    """With static shapes ShapeOf is a constant; folding it lets Reshape/Slice chains on shapes
    fold away entirely (the flatten of a CNN, the head split of an attention)."""
    changed = True
    while changed:
        changed = False
        for n in m.get_ordered_ops():
            if n.type_name != "ShapeOf" or not n.inputs[0].partial_shape.is_static:
                continue
            dt = n.output(0).element_type.np
            c = _const(m, n, np.array(n.inputs[0].shape, dtype=dt))
            c.output(0).set_names(n.output(0).names)
            m.replace_output(n.output(0), c.output(0))
            changed = True
        if changed:
            _fold(m)


def _single_user(uses: dict[Output, list[tuple[Node, int]]], out: Output) -> Node | None:
    u = uses.get(out, [])
    return u[0][0] if len(u) == 1 else None


def _fold_batch_norm(m: Model) -> None:
    """Convolution -> BatchNormInference becomes Convolution (scaled weights) + Add (shift),
    which the fusion then turns into the convolution's bias: no run-time cost left."""
    uses = m.consumers()
    for bn in m.get_ordered_ops():
        if bn.type_name != "BatchNormInference" or bn.inputs[0].element_type is not Type.f32:
            continue
        conv = bn.inputs[0].node
        if conv.type_name not in ("Convolution", "GroupConvolution") or _single_user(uses, conv.output(0)) is not bn:
            continue
        w_node = conv.inputs[1].node
        params = [bn.inputs[i].node.constant_value() for i in range(1, 5)]
        w = w_node.constant_value()
        if w is None or any(p is None for p in params):
            continue
        gamma, beta, mean, var = (np.asarray(p, np.float64) for p in params)  # type: ignore[arg-type]
        scale = gamma / np.sqrt(var + float(bn.attrs.epsilon))  # type: ignore[attr-defined]
        shift = beta - mean * scale
        if conv.type_name == "Convolution":
            ws = scale.reshape((-1,) + (1,) * (w.ndim - 1))
        else:
            ws = scale.reshape(w.shape[0], w.shape[1], *((1,) * (w.ndim - 2)))
        new_w = Node.create(Constant, [], {"value": (w.astype(np.float64) * ws).astype(np.float32)},
                            name=f"{w_node.name}/bn_folded")
        new_conv = Node(conv.op, [conv.inputs[0], new_w.output(0)], conv.attrs, conv.name)
        rank = len(conv.output(0).shape)
        bias = Node.create(Constant, [], {"value": shift.astype(np.float32).reshape((1, -1) + (1,) * (rank - 2))},
                           name=f"{bn.name}/shift")
        add = Node.create(Add, [new_conv.output(0), bias.output(0)], name=bn.name)
        m.replace_output(bn.output(0), add.output(0))
        uses = m.consumers()


def _const_scalar(out: Output) -> float | None:
    v = out.node.constant_value()
    if v is None or v.size != 1:
        return None
    return float(np.asarray(v).reshape(-1)[0])


def _rewrite_gelu(m: Model) -> None:
    """x * 0.5 * (1 + erf(x / sqrt(2))) in any of the orders exporters write it -> Gelu(ERF)."""
    uses = m.consumers()
    for erf in m.get_ordered_ops():
        if erf.type_name != "Erf":
            continue
        pre = erf.inputs[0].node
        x: Output | None = None
        if pre.type_name in ("Divide", "Multiply"):
            for a, b in ((0, 1), (1, 0)):
                c = _const_scalar(pre.inputs[b])
                if c is None or (pre.type_name == "Divide" and b == 0):
                    continue
                want = math.sqrt(2.0) if pre.type_name == "Divide" else 1 / math.sqrt(2.0)
                if abs(c - want) < 1e-3:
                    x = pre.inputs[a]
        if x is None:
            continue
        add = _single_user(uses, erf.output(0))
        if add is None or add.type_name != "Add":
            continue
        other = add.inputs[1] if add.inputs[0].node is erf else add.inputs[0]
        if _const_scalar(other) != 1.0:
            continue
        mul1 = _single_user(uses, add.output(0))
        if mul1 is None or mul1.type_name != "Multiply":
            continue
        o1 = mul1.inputs[1] if mul1.inputs[0].node is add else mul1.inputs[0]
        # Either (1 + erf) * x then * 0.5, or (1 + erf) * (x * 0.5), or (1 + erf) * 0.5 then * x.
        end: Node | None = None
        if o1 == x:
            mul2 = _single_user(uses, mul1.output(0))
            if mul2 is not None and mul2.type_name == "Multiply":
                o2 = mul2.inputs[1] if mul2.inputs[0].node is mul1 else mul2.inputs[0]
                if _const_scalar(o2) == 0.5:
                    end = mul2
        elif _const_scalar(o1) == 0.5:
            mul2 = _single_user(uses, mul1.output(0))
            if mul2 is not None and mul2.type_name == "Multiply":
                o2 = mul2.inputs[1] if mul2.inputs[0].node is mul1 else mul2.inputs[0]
                if o2 == x:
                    end = mul2
        elif o1.node.type_name == "Multiply":
            h = o1.node
            hs = [i for i in h.inputs if i != x]
            if len(hs) == 1 and x in h.inputs and _const_scalar(hs[0]) == 0.5:
                end = mul1
        if end is None or x.element_type is not Type.f32:
            continue
        gelu = Node.create(Gelu, [x], {"approximation_mode": "ERF"}, name=f"{end.name}/gelu")
        m.replace_output(end.output(0), gelu.output(0))
        uses = m.consumers()


def _last_axis_mean(node: Node) -> Output | None:
    """The input of ReduceMean(x, [last axis], keep_dims=True); None for anything else."""
    if node.type_name != "ReduceMean" or not is_standard(node) or not getattr(node.attrs, "keep_dims", False):
        return None
    x = node.inputs[0]
    if x.element_type is not Type.f32 or not x.partial_shape.is_static or len(x.shape) < 1:
        return None
    axes = node.inputs[1].node.constant_value()
    if axes is None or np.asarray(axes).size != 1:
        return None
    rank = len(x.shape)
    a = int(np.asarray(axes).reshape(-1)[0])
    return x if a in (-1, rank - 1) else None


def _rewrite_layer_norm(m: Model) -> None:
    """The decomposed layer norm exporters write -> MVN over the last axis (inside_sqrt), whose
    gamma/beta tail the emitter then fuses:
    d = x - mean(x); v = mean(d * d); y = d / sqrt(v + eps)  (or d * (1 / sqrt(v + eps)))."""
    uses = m.consumers()

    def other(n: Node, out: Output) -> Output | None:
        if len(n.inputs) != 2:
            return None
        if n.inputs[0] == out:
            return n.inputs[1]
        return n.inputs[0] if n.inputs[1] == out else None

    for mean in m.get_ordered_ops():
        x = _last_axis_mean(mean)
        if x is None:
            continue
        users = [u for u, _ in uses.get(mean.output(0), [])]
        if len(users) != 1 or users[0].type_name != "Subtract" or not is_standard(users[0]):
            continue
        sub = users[0]
        if sub.inputs[0] != x or sub.inputs[1] != mean.output(0):
            continue
        d = sub.output(0)
        var_mean: Node | None = None
        for u, _ in uses.get(d, []):
            if (u.type_name == "Multiply" and u.inputs[0] == d and u.inputs[1] == d) or (u.type_name == "Power" and u.inputs[0] == d and _const_scalar(u.inputs[1]) == 2.0):
                var_mean = _single_user(uses, u.output(0))
            if var_mean is not None:
                break
        if var_mean is None or _last_axis_mean(var_mean) is None:
            continue
        add = _single_user(uses, var_mean.output(0))
        if add is None or add.type_name != "Add" or not is_standard(add):
            continue
        eps_out = other(add, var_mean.output(0))
        eps = _const_scalar(eps_out) if eps_out is not None else None
        if eps is None or eps < 0:
            continue
        sqrt = _single_user(uses, add.output(0))
        if sqrt is None or sqrt.type_name != "Sqrt":
            continue
        end: Node | None = None
        div = _single_user(uses, sqrt.output(0))
        if div is not None and div.type_name == "Divide" and is_standard(div):
            if div.inputs[0] == d and div.inputs[1] == sqrt.output(0):
                end = div
            elif _const_scalar(div.inputs[0]) == 1.0 and div.inputs[1] == sqrt.output(0):
                mul = _single_user(uses, div.output(0))
                if mul is not None and mul.type_name == "Multiply" and is_standard(mul) and \
                        other(mul, div.output(0)) == d:
                    end = mul
        if end is None or tuple(end.output(0).shape) != tuple(x.shape):
            continue
        axes = Node.create(Constant, [], {"value": np.array([len(x.shape) - 1], np.int64)},
                           name=f"{mean.name}/axes")
        mvn = Node.create(MVN, [x, axes.output(0)], {"normalize_variance": True, "eps": float(eps),
                                                       "eps_mode": "inside_sqrt"}, name=f"{end.name}/mvn")
        m.replace_output(end.output(0), mvn.output(0))
        uses = m.consumers()


# ---------------------------------------------------------------------------------- emission
class KernelKind(enum.Enum):
    BUILTIN = "builtin"
    PYTHON = "python"
    ABI = "abi"


@dataclasses.dataclass
class Emitted:
    """What was emitted for the program (for tests and properties)."""

    steps: list[dict[str, Any]]
    python_nodes: list[str]
    abi_nodes: list[str]


def attrs_dict(node: Node) -> dict[str, Any]:
    """The node's attributes as plain Python values a kernel can read."""
    out: dict[str, Any] = {}
    for k in type(node.attrs).model_fields:
        v = getattr(node.attrs, k)
        if isinstance(v, dict):
            continue  # no C++ kernel reads a mapping (FrameworkNode's attributes); Python ones get node.attrs
        out[k] = _plain(v)
    return out


def _plain(v: Any) -> Any:
    if isinstance(v, Type):
        return v.ir
    if isinstance(v, PartialShape):
        return [(-1 if d is None else int(d)) for d in v.dims] if v.rank is not None else None
    if isinstance(v, enum.Enum):
        return v.value
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    if isinstance(v, np.ndarray):
        return v.tolist()
    return v


def capsule_of(kernel: Any) -> Any:
    """The PyCapsule of a compiled kernel (the capsule itself, or an object exposing one as
    ``opforge_cpu_kernel``), else None."""
    cap = getattr(kernel, "opforge_cpu_kernel", kernel)
    if callable(cap) and not _is_capsule(cap):
        try:
            cap = cap()
        except TypeError:
            return None
    return cap if _is_capsule(cap) else None


def _is_capsule(obj: Any) -> bool:
    return type(obj).__name__ == "PyCapsule"


class Emitter:
    """Builds one ``_core.Program`` from a static, rewritten model."""

    def __init__(self, core: types.ModuleType, model: Model, kernels: Mapping[tuple[str, str | None], Any],
                 kernel_plugins: Mapping[tuple[str, str | None], str], bf16: bool = False) -> None:
        self.core = core
        #: INFERENCE_PRECISION_HINT=bf16: convolutions and dense MatMuls compute in bf16
        self.bf16 = bf16
        self.model = model
        self.kernels = kernels
        self.kernel_plugins = kernel_plugins
        self.prog = core.Program()
        self.tid: dict[Output, int] = {}
        self.uses = model.consumers()
        self.absorbed: set[int] = set()
        self.done: set[int] = set()
        self.python_nodes: list[str] = []
        self.abi_nodes: list[str] = []
        #: tensor -> the Constant node whose array the program reads (see ``_lend_constants``)
        self.const_nodes: dict[int, Node] = {}

    # --- tensors ---------------------------------------------------------------------------
    def tensor(self, out: Output) -> int:
        if out in self.tid:
            return self.tid[out]
        spec = out.spec
        if not spec.shape.is_static:
            raise UnsupportedOpError(
                f"node '{out.node.name}' ({out.node.type_name}): output shape {spec.shape} is not known at "
                "compile time; the CPU device needs shapes that follow from the input shapes"
            )
        value = out.node.constant_value()
        arr = None if value is None else contiguous(value)
        t = self.prog.add_tensor(spec.type.ir, list(spec.shape.to_tuple()), arr)
        self.tid[out] = t
        if arr is not None and arr is value and out.node.type_name == "Constant":
            self.const_nodes[t] = out.node
        return t

    def const_tensor(self, value: np.ndarray) -> int:
        arr = contiguous(value)
        return int(self.prog.add_tensor(Type.from_numpy(arr.dtype).ir, list(arr.shape), arr))

    def new_tensor(self, out: Output) -> int:
        return self.tensor(out)

    # --- program ---------------------------------------------------------------------------
    def build(self, num_threads: int, profiling: bool) -> Any:
        m = self.model
        inputs = [self.tensor(p.output(0)) for p in m.parameters]
        for node in m.get_ordered_ops():
            if node.type_name in STRUCTURAL or node.id in self.absorbed:
                continue
            self.emit(node)
            self.done.add(node.id)
            self.done.update(self.absorbed)
        outputs = [self.tensor(r.inputs[0]) for r in m.results]
        self.prog.set_io(inputs, outputs)
        self._lend_constants()
        try:
            self.prog.finalize(num_threads, profiling)
        finally:
            self._take_back_constants()
        return self.prog

    def _lend_constants(self) -> None:
        """While the program packs weights, it holds the only reference to each constant array
        the model gave it, so an array every reader packed is freed as soon as it is packed
        (the peak holds the packed copy, not the packed copy plus the graph's)."""
        for node in self.const_nodes.values():
            v = node.attrs.value  # type: ignore[attr-defined]
            node.attrs = ConstantAttrs(value=np.broadcast_to(np.zeros((), v.dtype), v.shape))

    def _take_back_constants(self) -> None:
        """Constants the program did not release go back into the graph; released ones keep
        a zero-byte stand-in of their shape and type, and the model is marked (it can no longer
        be specialised again: dynamic models keep their unspecialised original for that)."""
        released = False
        for t, node in self.const_nodes.items():
            v = self.prog.constant(t)
            if v is None:
                node.rt_info[RELEASED_KEY] = "the CPU device"
                released = True
            else:
                node.attrs = ConstantAttrs(value=v)
        if released:
            self.model.rt_info[RELEASED_KEY] = "the CPU device"
        self.const_nodes = {}

    def add(self, node: Node, type_name: str, attrs: dict[str, Any], inputs: list[int], outputs: list[Output],
            fused: list[str], **extra: Any) -> None:
        self.prog.add_node(node.name, type_name, node.version, attrs, inputs,
                           [self.tensor(o) for o in outputs], fused, **extra)

    def emit(self, node: Node) -> None:
        plugin_kernel = find_plugin_kernel(self.kernels, node)
        if plugin_kernel is not None:
            self.emit_plugin(node, plugin_kernel)
            return
        if not is_standard(node):
            raise UnsupportedOpError(
                f"node '{node.name}' ({node.type_name}-{node.version}): the CPU device has no kernel for this "
                "op; its plugin can add one through opforge_register_kernels(register) with "
                f"register('CPU', '{node.type_name}', kernel, version='{node.version}')"
            )
        t = node.type_name
        if t in ("Convolution", "GroupConvolution", "MatMul") and node.inputs[0].element_type is Type.f32:
            self.emit_fused(node)
            return
        if t == "MaxPool":
            need = len(node.output_specs) > 1 and bool(self.uses.get(node.output(1)))
            attrs = attrs_dict(node) | {"need_indices": need, "plain_layout": need}
            self.add(node, t, attrs, [self.tensor(i) for i in node.inputs], node.outputs(), [node.name])
            return
        if t == "MVN":
            self.emit_mvn(node)
            return
        if index_mapped(node, self.core.kernel_types()) and self.emit_index_map(node):
            return
        ins = [self.tensor(i) for i in node.inputs]
        self.add(node, t if t not in _RESHAPES else "Reshape", attrs_dict(node), ins, node.outputs(), [node.name])

    def emit_plugin(self, node: Node, kernel: Any) -> None:
        plugin = self.kernel_plugins.get((node.type_name, node.version)) or self.kernel_plugins.get(
            (node.type_name, None), "?")
        ins = [self.tensor(i) for i in node.inputs]
        cap = capsule_of(kernel)
        if cap is not None:
            got = int(self.core.capsule_abi_version(cap))
            want = int(self.core.abi_version())
            if got != want:
                from opforge_cpu import __version__

                raise PluginValidationError(
                    f"plugin {plugin}: its compiled CPU kernel for {node.type_name}-{node.version} was built "
                    f"against opforge-cpu kernel ABI {got}, but opforge-cpu {__version__} speaks ABI {want}. "
                    "Rebuild the plugin against this opforge-cpu (pip install --force-reinstall --no-binary :all: "
                    "<plugin>)."
                )
            self.abi_nodes.append(node.name)
            self.add(node, node.type_name, attrs_dict(node), ins, node.outputs(), [node.name], capsule=cap)
            return
        if not callable(kernel):
            raise PluginValidationError(
                f"plugin {plugin}: the CPU kernel registered for {node.type_name}-{node.version} is a "
                f"{type(kernel).__name__}, neither a callable kernel(attrs, inputs) nor a kernel capsule"
            )
        self.python_nodes.append(node.name)
        self.add(node, node.type_name, attrs_dict(node), ins, node.outputs(), [node.name],
                 python_kernel=kernel, attrs_object=node.attrs)

    def emit_fused(self, node: Node) -> None:
        """Conv/GroupConv/MatMul plus what follows it: a bias Add, a residual Add (oneDNN sum)
        and element-wise activations, as long as each intermediate has one reader."""
        is_mm = node.type_name == "MatMul"
        cur = node.output(0)
        out_shape = cur.shape
        fused = [node.name]
        extra: list[int] = []
        post: list[str] = []
        has_bias = False
        sum_input = -1
        base = len(node.inputs)
        while True:
            user = _single_user(self.uses, cur)
            if user is None or user.id in self.absorbed or user.output_specs[0].type is not Type.f32:
                break
            if user.type_name == "Add" and getattr(user.attrs, "auto_broadcast", "numpy") == "numpy":
                other = user.inputs[1] if user.inputs[0] == cur else user.inputs[0]
                if user.inputs[0] == user.inputs[1]:
                    break
                bias = self._bias_value(other, out_shape, is_mm)
                if bias is not None and not has_bias and sum_input < 0 and not post:
                    has_bias = True
                    extra.insert(0, self.const_tensor(bias))
                elif (other.node.constant_value() is None and tuple(other.shape) == tuple(out_shape)
                      and sum_input < 0 and not post and self._computed(other)):
                    post.append("sum")
                    extra.append(self.tensor(other))
                    sum_input = -2  # resolved below once the bias position is known
                else:
                    break
            elif user.type_name in _POST_OPS and is_standard(user):
                enc = _POST_OPS[user.type_name](user)
                if enc is None:
                    break
                post.append(enc)
            else:
                break
            self.absorbed.add(user.id)
            fused.append(user.name)
            cur = user.output(0)
        ins = [self.tensor(i) for i in node.inputs] + extra
        if sum_input == -2:
            sum_input = base + (1 if has_bias else 0)
        attrs = attrs_dict(node) | {"has_bias": has_bias, "sum_input": sum_input, "post_ops": post}
        if self._runs_bf16(node):
            # bf16 operands, f32 accumulation and output (see core/nn.cpp); constant weights
            # packed as bf16 once
            attrs["bf16"] = True
            attrs["bf16_output"] = not is_mm and sum_input < 0 and self._only_bf16_convs_read(cur)
        self.prog.add_node(fused[-1] if len(fused) > 1 else node.name, node.type_name, node.version, attrs, ins,
                           [self.tensor(cur)], fused)

    def _runs_bf16(self, node: Node) -> bool:
        """Whether a Convolution/GroupConvolution/MatMul runs in bf16 under the bf16 hint: every
        MatMul (run-time operands are converted per run, as OpenVINO's attention does), and
        convolutions with constant weights except depthwise ones. A depthwise convolution is
        memory-bound and oneDNN 3.2's bf16 kernel for it (jit_dw) is ~3x slower than its f32
        one (brdgmm_dw) on AMX hosts: 0.29 vs 0.09 ms for 144x56x56, so it stays f32."""
        if not self.bf16:
            return False
        if node.type_name == "MatMul":
            return True
        if node.inputs[1].node.constant_value() is None:
            return False
        w = tuple(node.inputs[1].shape)
        return not (node.type_name == "GroupConvolution" and len(w) >= 3 and w[1] == 1 and w[2] == 1)

    def _only_bf16_convs_read(self, out: Output) -> bool:
        """Every reader of ``out`` is a convolution that will run in bf16 (constant weights) and
        reads it as its data input, and ``out`` is no model output: it can then be stored in
        bf16 (see make_dnnl_conv). Anything else reads f32."""
        readers = self.uses.get(out, [])
        if not readers or any(r.type_name == "Result" for r, _ in readers):
            return False
        return all(
            r.type_name in ("Convolution", "GroupConvolution") and is_standard(r) and i == 0
            and r.inputs[1] != out and self._runs_bf16(r) and find_plugin_kernel(self.kernels, r) is None
            and r.inputs[0].element_type is Type.f32
            for r, i in readers
        )

    def _computed(self, out: Output) -> bool:
        # The fused step runs where its first node is; an operand produced later in the order
        # (the shortcut branch of a residual block) cannot be read there. That branch's own
        # convolution will take the Add instead, when its turn comes.
        return out.node.type_name in STRUCTURAL or out.node.id in self.done

    @staticmethod
    def _bias_value(other: Output, out_shape: tuple[int, ...], is_mm: bool) -> np.ndarray | None:
        v = other.node.constant_value()
        if v is None or v.dtype != np.float32:
            return None
        rank = len(out_shape)
        s = (1,) * (rank - v.ndim) + tuple(v.shape)
        if len(s) != rank:
            return None
        if is_mm:
            # per-output-column bias: [..., 1, N]
            if all(d == 1 for d in s[:-1]) and s[-1] in (out_shape[-1],):
                return contiguous(v.reshape(-1).astype(np.float32))
            return None
        if rank >= 3 and s[0] == 1 and s[1] == out_shape[1] and all(d == 1 for d in s[2:]):
            return contiguous(v.reshape(-1).astype(np.float32))
        return None

    def emit_mvn(self, node: Node) -> None:
        """MVN, and the LayerNorm tail MVN * gamma + beta when gamma/beta are constants over the
        normalised (last) axis."""
        cur = node.output(0)
        fused = [node.name]
        extra: list[int] = []
        has_scale = has_shift = False
        for op_name in ("Multiply", "Add"):
            user = _single_user(self.uses, cur)
            if user is None or user.type_name != op_name or not is_standard(user):
                break
            other = user.inputs[1] if user.inputs[0] == cur else user.inputs[0]
            v = other.node.constant_value()
            if v is None or v.dtype != cur.element_type.np or v.size not in (1, cur.shape[-1]):
                break
            if v.size != 1 and tuple(v.shape)[-1:] != tuple(cur.shape)[-1:]:
                break
            if user.output_specs[0].shape != cur.partial_shape:
                break
            if op_name == "Multiply":
                has_scale = True
                extra.append(self.const_tensor(v.reshape(-1)))
            else:
                has_shift = True
                if not has_scale:
                    extra.append(self.const_tensor(np.ones(1, v.dtype)))
                extra.append(self.const_tensor(v.reshape(-1)))
            self.absorbed.add(user.id)
            fused.append(user.name)
            cur = user.output(0)
        ins = [self.tensor(i) for i in node.inputs] + extra
        attrs = attrs_dict(node) | {"has_scale": has_scale or has_shift, "has_shift": has_shift}
        self.prog.add_node(fused[-1] if len(fused) > 1 else node.name, "MVN", node.version, attrs, ins,
                           [self.tensor(cur)], fused)

    def emit_index_map(self, node: Node) -> bool:
        """Lower a constant-parameter data-movement op to IndexMap: evaluate the op itself on
        the flat indices of its input (plus one, so that 0 marks padding)."""
        params = [i.node.constant_value() for i in node.inputs[1:]]
        t = node.type_name
        fill: int | None = None
        if t == "Pad":
            if len(params) > 2:
                fill = self.tensor(node.inputs[3])
            params = params[:2]
        if any(p is None for p in params):
            return False
        data = node.inputs[0]
        n = int(np.prod(data.shape, dtype=np.int64))
        idx = (np.arange(n, dtype=np.int64) + 1).reshape(data.shape)
        args: list[np.ndarray] = [idx, *params]  # type: ignore[list-item]
        if t == "Pad" and node.attrs.pad_mode == "constant":  # type: ignore[attr-defined]
            args.append(np.zeros((), np.int64))
        try:
            mapped = node.op.evaluate(node.attrs, args)[0]
        except Exception:  # noqa: BLE001 - the op refused int64 data: run its own kernel instead
            return False
        if tuple(mapped.shape) != tuple(node.output(0).shape):
            return False
        flat = np.asarray(mapped, np.int64).reshape(-1) - 1
        dt = np.int32 if n < 2**31 - 1 else np.int64
        ins = [self.tensor(data), self.const_tensor(flat.astype(dt))]
        if fill is not None:
            ins.append(fill)
        self.add(node, "IndexMap", {}, ins, node.outputs(), [node.name])
        return True


#: element types the CPU device computes in f32 when an op has no kernel of its own for them
LOW_PRECISION = (Type.f16, Type.bf16, Type.f64)


def _node_reason(core: types.ModuleType, n: Node, f32_types: bool = False) -> str:
    """Why the built-in kernel table cannot run standard node ``n`` ("" when it can); with
    ``f32_types``, as if its f16/bf16/f64 inputs and outputs were f32 (see ``lower_precision``)."""
    def ty(t: Type) -> str:
        return Type.f32.ir if f32_types and t in LOW_PRECISION else t.ir

    def val(v: np.ndarray | None) -> np.ndarray | None:
        if f32_types and v is not None and v.dtype.kind == "f":
            return np.asarray(v, np.float32)
        return v

    ins = [(ty(i.element_type), list(i.partial_shape.dims) if i.partial_shape.is_static else [])
           for i in n.inputs]
    vals = [val(i.node.constant_value()) for i in n.inputs]
    outs = [(ty(o.element_type), list(o.partial_shape.dims) if o.partial_shape.is_static else [])
            for o in n.outputs()]
    if any(not i.partial_shape.is_static for i in n.inputs):
        # Shapes decided per inference: judge by element types only.
        ins = [(t, [1] * (i.partial_shape.rank or 0)) for (t, _), i in zip(ins, n.inputs)]
        outs = [(t, [1] * (o.partial_shape.rank or 0)) for (t, _), o in zip(outs, n.outputs())]
    attrs = attrs_dict(n)
    if f32_types:
        attrs = {k: (Type.f32.ir if isinstance(v, str) and v in {t.ir for t in LOW_PRECISION} else v)
                 for k, v in attrs.items()}
    return str(core.check_node(n.type_name, n.version, attrs, ins, vals, outs))


def _plugin_kernel_needs_f32(core: types.ModuleType, n: Node, kernel: Any) -> bool:
    """Whether a plugin's kernel refuses ``n``'s f16/bf16/f64 types but takes f32. A compiled
    (C ABI) kernel is asked: its ``create`` runs on a one-node program with the node's types,
    then with f32. A Python kernel says which types it takes with an ``element_types``
    attribute (IR names, e.g. ``{"f32"}``); without one it gets the arrays as they are."""
    cap = capsule_of(kernel)
    if cap is None:
        declared = getattr(kernel, "element_types", None)
        if declared is None:
            return False
        names = {str(t) for t in declared}
        used = {t.element_type.ir for t in n.inputs} | {o.element_type.ir for o in n.outputs()}
        return bool({t.ir for t in LOW_PRECISION} & used - names) and "f32" in names
    return bool(_abi_reason(core, n, cap, f32_types=False)) and not _abi_reason(core, n, cap, f32_types=True)


def _abi_reason(core: types.ModuleType, n: Node, cap: Any, f32_types: bool) -> str:
    """Why a compiled plugin kernel cannot be created for ``n`` ("" when it can)."""
    def ty(t: Type) -> str:
        return Type.f32.ir if f32_types and t in LOW_PRECISION else t.ir

    def dims(o: Output) -> list[int]:
        ps = o.partial_shape
        return [int(d) for d in ps.dims] if ps.is_static else [1] * (ps.rank or 0)  # type: ignore[arg-type]

    prog = core.Program()
    ins = []
    for i in n.inputs:
        v = i.node.constant_value()
        if v is not None and f32_types and v.dtype.kind == "f":
            v = np.asarray(v, np.float32)
        ins.append(prog.add_tensor(ty(i.element_type), dims(i), None if v is None else contiguous(v)))
    outs = [prog.add_tensor(ty(o.element_type), dims(o), None) for o in n.outputs()]
    attrs = attrs_dict(n)
    if f32_types:
        attrs = {k: (Type.f32.ir if isinstance(v, str) and v in {t.ir for t in LOW_PRECISION} else v)
                 for k, v in attrs.items()}
    try:
        prog.add_node(n.name, n.type_name, n.version, attrs, ins, outs, [n.name], capsule=cap)
        prog.set_io([t for t, i in zip(ins, n.inputs) if i.node.constant_value() is None], outs)
        prog.finalize(1, False)
    except Exception as err:  # noqa: BLE001 - the kernel's own refusal, whatever its type
        return str(err) or type(err).__name__
    return ""


def _has_low_precision(n: Node) -> bool:
    return any(i.element_type in LOW_PRECISION for i in n.inputs) or any(
        o.element_type in LOW_PRECISION for o in n.outputs())


def supported_nodes(core: types.ModuleType, model: Model, kernels: Mapping[tuple[str, str | None], Any]
                    ) -> dict[str, str]:
    """``{node name: reason}`` for every node without a kernel (empty reason means supported)."""
    builtin = set(core.kernel_types())
    out: dict[str, str] = {}
    for n in model.get_ordered_ops():
        if n.type_name in STRUCTURAL:
            out[n.name] = ""
            continue
        kernel = find_plugin_kernel(kernels, n)
        if kernel is not None:
            # A kernel may refuse some nodes of its op (FrameworkNode: placeholders, not fallbacks).
            refuse = getattr(kernel, "unsupported_reason", None)
            out[n.name] = str(refuse(n) or "") if callable(refuse) else ""
            continue
        if not is_standard(n):
            out[n.name] = f"no kernel for {n.type_name}-{n.version}"
            continue
        t = n.type_name
        if t in HOST_OPS:
            out[n.name] = ""  # its stage runs on the host (staging.HOST_OPS)
            if t == "Loop":  # ... and its body runs on this device: every body node needs a kernel
                body = supported_nodes(core, n.attrs.body, kernels)  # type: ignore[attr-defined]
                bad = [f"'{k}': {why}" for k, why in body.items() if why]
                out[n.name] = f"its body has nodes without a CPU kernel: {'; '.join(bad[:3])}" if bad else ""
            continue
        lowered = index_mapped(n, builtin)
        if t not in builtin and not lowered:
            out[n.name] = f"no kernel for {t}"
            continue
        if lowered:
            params_const = all(i.node.constant_value() is not None for i in n.inputs[1:3 if t == "Pad" else None])
            out[n.name] = "" if params_const else f"{t} needs constant parameters on the CPU device"
            continue
        why = _node_reason(core, n)
        if why and _has_low_precision(n) and not _node_reason(core, n, f32_types=True):
            why = ""  # computed in f32 between Converts (lower_precision)
        out[n.name] = why
    return out


def lower_precision(core: types.ModuleType, model: Model, kernels: Mapping[tuple[str, str | None], Any]) -> None:
    """Nodes of f16/bf16 (or f64) that have no kernel for that type compute in f32: their
    inputs are converted to f32 and their outputs back to the model's type, so every value the
    model exposes keeps its element type (f16 storage, f32 compute, rounded after each op as
    the reference rounds)."""
    builtin = set(core.kernel_types())
    low_names = {t.ir for t in LOW_PRECISION}
    as_f32: dict[Output, Output] = {}  # one f32 copy of each value, however many nodes read it
    changed = False
    for n in model.get_ordered_ops():
        if n.type_name in STRUCTURAL or n.type_name == "Convert" or not _has_low_precision(n):
            continue
        plugin_kernel = find_plugin_kernel(kernels, n)
        if plugin_kernel is not None:
            # a plugin's kernel gets the same treatment: f32 compute when it refuses the type
            if not _plugin_kernel_needs_f32(core, n, plugin_kernel):
                continue
        elif (not is_standard(n) or n.type_name not in builtin or not _node_reason(core, n)
              or _node_reason(core, n, f32_types=True)):
            continue
        new_inputs: list[Output] = []
        for i in n.inputs:
            if i.element_type in LOW_PRECISION:
                if i not in as_f32:
                    v = i.node.constant_value()
                    tag = f"{i.node.name}/{i.index}/f32"
                    if v is not None:
                        c = Node.create(Constant, [], {"value": np.asarray(v, np.float32)}, name=tag)
                    else:
                        c = Node.create(Convert, [i], {"destination_type": "f32"}, name=tag)
                    as_f32[i] = c.output(0)
                new_inputs.append(as_f32[i])
            else:
                new_inputs.append(i)
        update = {k: "f32" for k, v in attrs_dict(n).items() if isinstance(v, str) and v in low_names}
        attrs = n.attrs
        if update:
            attrs = type(n.attrs).model_validate(n.attrs.model_dump() | update)
        clone = Node(n.op, new_inputs, attrs, n.name)
        for k, (old, new) in enumerate(zip(n.outputs(), clone.outputs())):
            res = new
            if old.element_type is not new.element_type:
                res = Node.create(Convert, [new], {"destination_type": old.element_type.ir},
                                  name=f"{n.name}/out{k}/{old.element_type.ir}").output(0)
            res.set_names(old.names)
            model.replace_output(old, res)
        changed = True
    if changed:
        model.validate()


#: inputs at most this large may be specialised on their values (see ``value_inputs``)
VALUE_INPUT_MAX_ELEMENTS = 16


def value_inputs(model: Model, failing: set[str]) -> list[int]:
    """Indices of the inputs to specialise on their values so that the ``failing`` nodes (no
    kernel with those operands fed at run time: axes, pads, shapes, ``k``...) get constants:
    small (rank <= 1, at most ``VALUE_INPUT_MAX_ELEMENTS`` elements) numeric inputs that some
    failing node depends on. Empty when some failing node depends on none of them, i.e. when
    specialising on values cannot help."""
    small: dict[int, int] = {}
    for i, p in enumerate(model.parameters):
        ps = p.output(0).partial_shape
        t = p.output(0).element_type
        if ps.rank is None or ps.rank > 1 or not ps.is_static or t is Type.boolean or not (t.is_integral or t.is_float):
            continue
        if int(np.prod(ps.to_tuple(), dtype=np.int64)) <= VALUE_INPUT_MAX_ELEMENTS:
            small[p.id] = i
    if not small or not failing:
        return []
    deps: dict[int, set[int]] = {}
    for n in model.get_ordered_ops():
        d: set[int] = set()
        if n.id in small:
            d.add(small[n.id])
        for src in n.inputs:
            d |= deps.get(src.node.id, set())
        deps[n.id] = d
    needed: set[int] = set()
    for n in model.get_ordered_ops():
        if n.name in failing:
            if not deps.get(n.id):
                return []
            needed |= deps[n.id]
    return sorted(needed)
