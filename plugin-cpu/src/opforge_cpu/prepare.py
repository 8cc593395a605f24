"""Specialisation and the CPU's graph rewrites (being moved to opforge.planning and core passes)."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
from opforge.element_type import Type
from opforge.errors import UnsupportedOpError
from opforge.graph import WEIGHTS_RELEASED, Model, Node, Output
from opforge.opset.add import Add
from opforge.opset.constant import Constant
from opforge.opset.gelu import Gelu
from opforge.opset.mvn import MVN
from opforge.transformations.constant_folding import ConstantFolding
from opforge.transformations.dead_code import DeadCodeElimination

from opforge_cpu.emit import contiguous, single_user
from opforge_cpu.passes.int8 import fuse_int8

# ---------------------------------------------------------------------------------- rewrites


def specialize(model: Model, shapes: Mapping[int, tuple[int, ...]] | None,
               values: Mapping[int, np.ndarray] | None = None) -> Model:
    """Static-shape copy of ``model`` (inputs set to ``shapes`` by index), constant folded, with
    shape computations resolved and the graph rewrites applied.

    ``values`` (by input index) turns small inputs that act as parameters (axes, pads, a shape,
    ``k``, the bounds of a Range) into constants for this program: the model's readers of that
    input read the value instead, and everything computed from it folds."""
    if model.rt_info.get(WEIGHTS_RELEASED):
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
    fuse_int8(m)  # quantized Conv/MatMul regions -> int8 kernels (passes/int8.py)
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


def _fold_batch_norm(m: Model) -> None:
    """Convolution -> BatchNormInference becomes Convolution (scaled weights) + Add (shift),
    which the fusion then turns into the convolution's bias: no run-time cost left."""
    uses = m.consumers()
    for bn in m.get_ordered_ops():
        if bn.type_name != "BatchNormInference" or bn.inputs[0].element_type is not Type.f32:
            continue
        conv = bn.inputs[0].node
        if conv.type_name not in ("Convolution", "GroupConvolution") or single_user(uses, conv.output(0)) is not bn:
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
        add = single_user(uses, erf.output(0))
        if add is None or add.type_name != "Add":
            continue
        other = add.inputs[1] if add.inputs[0].node is erf else add.inputs[0]
        if _const_scalar(other) != 1.0:
            continue
        mul1 = single_user(uses, add.output(0))
        if mul1 is None or mul1.type_name != "Multiply":
            continue
        o1 = mul1.inputs[1] if mul1.inputs[0].node is add else mul1.inputs[0]
        # Either (1 + erf) * x then * 0.5, or (1 + erf) * (x * 0.5), or (1 + erf) * 0.5 then * x.
        end: Node | None = None
        if o1 == x:
            mul2 = single_user(uses, mul1.output(0))
            if mul2 is not None and mul2.type_name == "Multiply":
                o2 = mul2.inputs[1] if mul2.inputs[0].node is mul1 else mul2.inputs[0]
                if _const_scalar(o2) == 0.5:
                    end = mul2
        elif _const_scalar(o1) == 0.5:
            mul2 = single_user(uses, mul1.output(0))
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
    if node.type_name != "ReduceMean" or not node.op.is_standard or not getattr(node.attrs, "keep_dims", False):
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
        if len(users) != 1 or users[0].type_name != "Subtract" or not users[0].op.is_standard:
            continue
        sub = users[0]
        if sub.inputs[0] != x or sub.inputs[1] != mean.output(0):
            continue
        d = sub.output(0)
        var_mean: Node | None = None
        for u, _ in uses.get(d, []):
            if (u.type_name == "Multiply" and u.inputs[0] == d and u.inputs[1] == d) or (u.type_name == "Power" and u.inputs[0] == d and _const_scalar(u.inputs[1]) == 2.0):
                var_mean = single_user(uses, u.output(0))
            if var_mean is not None:
                break
        if var_mean is None or _last_axis_mean(var_mean) is None:
            continue
        add = single_user(uses, var_mean.output(0))
        if add is None or add.type_name != "Add" or not add.op.is_standard:
            continue
        eps_out = other(add, var_mean.output(0))
        eps = _const_scalar(eps_out) if eps_out is not None else None
        if eps is None or eps < 0:
            continue
        sqrt = single_user(uses, add.output(0))
        if sqrt is None or sqrt.type_name != "Sqrt":
            continue
        end: Node | None = None
        div = single_user(uses, sqrt.output(0))
        if div is not None and div.type_name == "Divide" and div.op.is_standard:
            if div.inputs[0] == d and div.inputs[1] == sqrt.output(0):
                end = div
            elif _const_scalar(div.inputs[0]) == 1.0 and div.inputs[1] == sqrt.output(0):
                mul = single_user(uses, div.output(0))
                if mul is not None and mul.type_name == "Multiply" and mul.op.is_standard and \
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
