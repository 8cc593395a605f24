"""Einsum, GRN, NormalizeL2, adaptive pooling, Eye, Identity (a view), Reverse, Roll and
ScatterUpdate (``kernels/extra.cl``; the normalisations reuse the reduction of ``reduce.cl`` and
the broadcasting division of ``copy.cl``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from opforge.element_type import Type
from opforge.graph import Node

from opforge_gpu.library import kernel
from opforge_gpu.storage import float_bits, storage_for, supported_type

if TYPE_CHECKING:
    from opforge_gpu.lowering import Epilogue, Lowering

FILE = "extra.cl"
WG = 128


def _plan_values(node: Node, ports: tuple[int, ...]) -> str | None:
    from opforge_gpu.lowering import plan_value

    for i in ports:
        why = plan_value(node, i)
        if why:
            return why
    return None


def _float_in(node: Node) -> str | None:
    t = node.inputs[0].element_type
    if not t.is_float or not supported_type(t):
        return f"{node.type_name} of {t} has no GPU kernel (floating-point types only)"
    if node.inputs[0].partial_shape.rank is None:
        return "input of unknown rank"
    return None


# --- Einsum -----------------------------------------------------------------------------------
MAX_EINSUM_OPERANDS = 4


def _subscripts(equation: str) -> tuple[list[list[str]], list[str]]:
    """(labels of each operand, output labels), '...' as one label; implicit output as OpenVINO."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")

    def labels(s: str) -> list[str]:
        out: list[str] = []
        while s:
            if s.startswith("..."):
                out.append("...")
                s = s[3:]
            else:
                out.append(s[0])
                s = s[1:]
        return out

    ins = [labels(s) for s in lhs.split(",")]
    if arrow:
        return ins, labels(rhs)
    letters = [c for c in lhs if c.isalpha()]
    singles = sorted(c for c in set(letters) if letters.count(c) == 1)
    return ins, (["..."] if "..." in lhs else []) + singles


def _einsum_supports(node: Node) -> str | None:
    t = node.inputs[0].element_type
    if not supported_type(t) or t is Type.boolean:
        return f"Einsum of {t} has no GPU kernel"
    if len(node.inputs) > MAX_EINSUM_OPERANDS:
        return f"Einsum of {len(node.inputs)} operands: the GPU kernel takes at most {MAX_EINSUM_OPERANDS}"
    return None


def einsum_plan(equation: str, shapes: list[tuple[int, ...]]) -> tuple[list[int], list[int], list[list[int]]]:
    """(output dims, summed dims, per operand the strides of every output then summed label)."""
    ins, out = _subscripts(equation)
    named = [[lb for lb in s if lb != "..."] for s in ins]
    widths = [len(shp) - len(nm) for shp, nm in zip(shapes, named)]
    ell = max(widths) if widths else 0
    # every operand as (label, dim, stride) per axis, ellipsis axes labelled ('...', j) right-aligned
    axes: list[list[tuple[Any, int, int]]] = []
    sizes: dict[Any, int] = {}
    for s, shp, w in zip(ins, shapes, widths):
        strides = [int(np.prod(shp[d + 1:])) for d in range(len(shp))]
        row: list[tuple[Any, int, int]] = []
        pos = 0
        for lb in s:
            if lb == "...":
                for j in range(w):
                    row.append((("...", ell - w + j), shp[pos], strides[pos]))
                    pos += 1
            else:
                row.append((lb, shp[pos], strides[pos]))
                pos += 1
        for lb, dim, _ in row:
            sizes[lb] = dim if sizes.get(lb, 1) == 1 else sizes[lb]
        axes.append(row)
    out_labels: list[Any] = []
    for lb in out:
        out_labels += [("...", j) for j in range(ell)] if lb == "..." else [lb]
    sum_labels = [lb for lb in sizes if lb not in out_labels]
    order = out_labels + sum_labels
    table: list[list[int]] = []
    for row in axes:
        st = dict.fromkeys(order, 0)
        for lb, dim, stride in row:
            if not (dim == 1 and sizes[lb] != 1):
                st[lb] += stride
        table.append([st[lb] for lb in order])
    return [sizes[lb] for lb in out_labels], [sizes[lb] for lb in sum_labels], table


@kernel("Einsum", supports=_einsum_supports)
def lower_einsum(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    ops = [lw.input(node, i) for i in range(len(node.inputs))]
    y = lw.new_output(node)
    out_dims, sum_dims, table = einsum_plan(str(node.attrs.equation),  # type: ignore[attr-defined]
                                            [tuple(t.shape) for t in ops])
    st = ops[0].storage
    defines: dict[str, Any] = {"EINSUM": 1, "NOPS": len(ops), "ACC_T": "float" if st.is_float else st.compute}
    defines.update(st.macros("X"))
    defines.update(y.storage.macros("Y"))
    args: list[Any] = [*ops, *[lw.dummy()] * (MAX_EINSUM_OPERANDS - len(ops))]
    prm = lw.params([y.size, len(out_dims), *out_dims, len(sum_dims), *sum_dims, *[v for row in table for v in row]])
    lw.launch(FILE, "einsum", defines, [*args, y, prm], [max(y.size, 1)], [WG], node=node)


# --- GRN, NormalizeL2 -------------------------------------------------------------------------
def _normalize(node: Node, lw: Lowering, axes: list[int], final: str) -> None:
    """y = x / final(sum of x**2 over ``axes``): a reduction into an f32 temp, then a division."""
    from opforge_gpu.library.elementwise import run_binary
    from opforge_gpu.library.nn import _contiguous_strides

    x = lw.input(node, 0)
    y = lw.new_output(node)
    rank = len(x.shape)
    f32 = storage_for(Type.f32)
    assert f32 is not None
    out_dims = [1 if d in axes else x.shape[d] for d in range(rank)]
    norm = lw.temp(out_dims, f32)
    defines: dict[str, Any] = {
        "REDUCE": 1, "ACC_T": "float", "REDUCE_INIT": "0.0f",
        "REDUCE_STEP(a, v)": "((a) + (v) * (v))", "REDUCE_FINAL(acc, n)": final,
    }
    defines.update(x.storage.macros("X"))
    defines.update(f32.macros("Y"))
    strides = _contiguous_strides(x.shape)
    block = [int(np.prod(out_dims)), rank, *out_dims, *strides, len(axes), *[x.shape[d] for d in axes],
             *[strides[d] for d in axes]]
    lw.launch("reduce.cl", "reduce", defines, [x, norm, lw.params(block)], [block[0]], [64], node=node)
    run_binary(lw, node, x, norm, y, "((a) / (b))")


def _eps_literal(v: float) -> str:
    return f"as_float({float_bits(v)})"


@kernel("GRN", supports=_float_in)
def lower_grn(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    bias = _eps_literal(float(node.attrs.bias))  # type: ignore[attr-defined]
    _normalize(node, lw, [1], f"sqrt((acc) + {bias})")


def _normalize_l2_supports(node: Node) -> str | None:
    return _float_in(node) or _plan_values(node, (1,))


@kernel("NormalizeL2", supports=_normalize_l2_supports)
def lower_normalize_l2(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    from opforge_gpu.library.elementwise import run_unary

    a: Any = node.attrs
    rank = len(node.inputs[0].shape)
    v = node.inputs[1].node.constant_value()
    axes = sorted({int(d) % rank for d in np.asarray(v).reshape(-1)}) if rank else []
    if not axes:
        # OpenVINO: every element divided by itself (0 for zeros)
        x = lw.input(node, 0)
        y = lw.new_output(node)
        run_unary(lw, node, x, y, "((x) == 0 ? 0.0f : 1.0f)")
        return
    eps = _eps_literal(float(a.eps))
    final = f"sqrt((acc) + {eps})" if a.eps_mode == "add" else f"sqrt(fmax((acc), {eps}))"
    _normalize(node, lw, axes, final)


# --- AdaptiveAvgPool, AdaptiveMaxPool ---------------------------------------------------------
def _adaptive_supports(node: Node) -> str | None:
    t = node.inputs[0].element_type
    if not supported_type(t) or t is Type.boolean or (node.type_name == "AdaptiveAvgPool" and not t.is_float):
        return f"{node.type_name} of {t} has no GPU kernel"
    if node.inputs[0].partial_shape.rank not in (3, 4, 5):
        return "only 1-D, 2-D and 3-D adaptive pooling have a GPU kernel"
    return _plan_values(node, (1,))


@kernel("AdaptiveAvgPool", "AdaptiveMaxPool", supports=_adaptive_supports)
def lower_adaptive_pool(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    x = lw.input(node, 0)
    y = lw.new_output(node, 0)
    pad = 5 - len(x.shape)
    sp = [1] * pad + list(x.shape[2:])
    osp = [1] * pad + list(y.shape[2:])
    defines: dict[str, Any] = {"ADAPTIVE_POOL": 1, "X_FLOAT": int(x.storage.is_float), "I_T": "int",
                               "WITH_INDICES": 0}
    defines.update(x.storage.macros("X"))
    defines.update(y.storage.macros("Y"))
    ind: Any = lw.dummy()
    if node.type_name == "AdaptiveAvgPool":
        defines["AVG"] = 1
    elif (node.id, 1) not in lw.used:
        lw.set_output(node, 1, lw.temp(y.shape, lw.storage(node.output_specs[1].type)))
    else:
        ind = lw.new_output(node, 1)
        defines.update({"I_T": ind.storage.ctype, "WITH_INDICES": 1})
    prm = lw.params([y.size, *sp, *osp])
    lw.launch(FILE, "adaptive_pool", defines, [x, y, ind, prm], [y.size], [WG], node=node)


# --- Eye --------------------------------------------------------------------------------------
def _eye_supports(node: Node) -> str | None:
    t = node.output_specs[0].type
    if not supported_type(t):
        return f"Eye of {t} has no GPU kernel"
    return _plan_values(node, tuple(range(len(node.inputs))))


@kernel("Eye", supports=_eye_supports)
def lower_eye(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    y = lw.new_output(node)
    rows, cols = (y.shape[-2], y.shape[-1])
    k = int(np.asarray(node.inputs[2].node.constant_value()).reshape(-1)[0])
    defines: dict[str, Any] = {"EYE": 1}
    defines.update(y.storage.macros("Y"))
    lw.launch(FILE, "eye", defines, [y, lw.params([y.size, rows, cols, k])], [y.size], [WG], node=node)


# --- ROIAlign, GridSample ---------------------------------------------------------------------
def _roi_supports(node: Node) -> str | None:
    for i in (0, 1):
        t = node.inputs[i].element_type
        if not t.is_float or not supported_type(t):
            return f"ROIAlign of {t} has no GPU kernel"
    if not supported_type(node.inputs[2].element_type):
        return f"batch indices of {node.inputs[2].element_type} are not supported on GPU"
    return None


@kernel("ROIAlign", supports=_roi_supports)
def lower_roi_align(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    a: Any = node.attrs
    x, rois, bidx = (lw.input(node, i) for i in range(3))
    y = lw.new_output(node)
    n_img, c, h, w = x.shape
    defines: dict[str, Any] = {"ROI_ALIGN": 1, "INDEX_ERRORS": 1, "I_T": bidx.storage.ctype}
    defines.update(x.storage.macros("X"))
    defines.update(rois.storage.macros("R"))
    defines.update(y.storage.macros("Y"))
    aligned = {"asymmetric": 0, "half_pixel_for_nn": 1, "half_pixel": 2}[a.aligned_mode]
    prm = lw.params([y.size, c, h, w, a.pooled_h, a.pooled_w, a.sampling_ratio, aligned, {"avg": 0, "max": 1, "onnx_max": 2}[a.mode],
                     float_bits(float(a.spatial_scale)), n_img])
    check = lw.index_check("batch index {value} of roi {which} is out of range (expected {low}..{high})",
                           negative=False)
    lw.launch(FILE, "roi_align", defines, [x, rois, bidx, y, prm, *check], [y.size], [WG], node=node)


def _grid_supports(node: Node) -> str | None:
    for i in (0, 1):
        t = node.inputs[i].element_type
        if not t.is_float or not supported_type(t):
            return f"GridSample of {t} has no GPU kernel (floating-point data and grid only)"
    return None


@kernel("GridSample", supports=_grid_supports)
def lower_grid_sample(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    a: Any = node.attrs
    x, grid = lw.input(node, 0), lw.input(node, 1)
    y = lw.new_output(node)
    defines: dict[str, Any] = {"GRID_SAMPLE": 1}
    defines.update(x.storage.macros("X"))
    defines.update(grid.storage.macros("G"))
    defines.update(y.storage.macros("Y"))
    mode = {"bilinear": 0, "bicubic": 1, "nearest": 2}[a.mode]
    pad = {"zeros": 0, "border": 1, "reflection": 2}[a.padding_mode]
    if len(x.shape) == 5:  # volumetric: nearest or trilinear (shape inference refuses bicubic)
        prm = lw.params([y.size, *x.shape[1:], *y.shape[2:], int(bool(a.align_corners)), mode, pad])
        lw.launch(FILE, "grid_sample_3d", defines, [x, grid, y, prm], [y.size], [WG], node=node)
        return
    _, c, h, w = x.shape
    prm = lw.params([y.size, c, h, w, y.shape[2], y.shape[3], int(bool(a.align_corners)), mode, pad])
    lw.launch(FILE, "grid_sample", defines, [x, grid, y, prm], [y.size], [WG], node=node)


# --- Col2Im -----------------------------------------------------------------------------------
def _col2im_supports(node: Node) -> str | None:
    t = node.inputs[0].element_type
    if not supported_type(t) or t is Type.boolean:
        return f"Col2Im of {t} has no GPU kernel"
    return _plan_values(node, (1, 2))


@kernel("Col2Im", supports=_col2im_supports)
def lower_col2im(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    from opforge.opset.col2im import _blocks

    a: Any = node.attrs
    x = lw.input(node, 0)
    y = lw.new_output(node)
    out = [int(v) for v in np.asarray(node.inputs[1].node.constant_value()).reshape(-1)]
    kern = [int(v) for v in np.asarray(node.inputs[2].node.constant_value()).reshape(-1)]
    nb = _blocks(a, out, kern)
    c = y.shape[-1 - len(out)]
    defines: dict[str, Any] = {"COL2IM": 1}
    defines.update(x.storage.macros("X"))
    defines.update(y.storage.macros("Y"))
    lead = 3 - len(out)  # a 2-D image is a volume of depth 1

    def axes(v: list[int], fill: int) -> list[int]:
        return [fill] * lead + [int(e) for e in v]

    prm = lw.params([y.size, c, *axes(out, 1), *axes(kern, 1), *axes(nb, 1), *axes(a.strides, 1),
                     *axes(a.dilations, 1), *axes(a.pads_begin, 0)])
    lw.launch(FILE, "col2im", defines, [x, y, prm], [y.size], [WG], node=node)


# --- RNNSequence, GRUSequence, LSTMSequence ---------------------------------------------------
#: (cell id, gates, states) per op
_CELLS = {"RNNSequence": (0, 1, 1), "GRUSequence": (1, 3, 1), "LSTMSequence": (2, 4, 2)}
_ACT = {"sigmoid": "(1.0f / (1.0f + exp(-(x))))", "tanh": "tanh(x)", "relu": "((x) < 0.0f ? 0.0f : (x))"}
#: the states of a work-group live in local memory (six arrays of hidden_size floats)
MAX_HIDDEN = 1024


def _rnn_supports(node: Node) -> str | None:
    bad = _float_in(node)
    if bad:
        return bad
    s = _CELLS[node.type_name][2]
    if not supported_type(node.inputs[1 + s].element_type):
        return f"sequence lengths of {node.inputs[1 + s].element_type} are not supported on GPU"
    if int(node.attrs.hidden_size) > MAX_HIDDEN:  # type: ignore[attr-defined]
        return f"hidden_size over {MAX_HIDDEN} has no GPU kernel"
    return None


@kernel(*_CELLS, supports=_rnn_supports)
def lower_rnn_sequence(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    a: Any = node.attrs
    cell, gates, s = _CELLS[node.type_name]
    x = lw.input(node, 0)
    h0 = lw.input(node, 1)
    c0 = lw.input(node, 2) if s == 2 else lw.dummy()
    lens, w, r, b = (lw.input(node, i) for i in range(1 + s, 5 + s))
    outs = [lw.new_output(node, i) for i in range(1 + s)]
    batch, seq, inp = x.shape
    hs = int(a.hidden_size)
    nd = 2 if a.direction == "bidirectional" else 1
    acts = [_ACT[n] for n in a.activations]
    defines: dict[str, Any] = {"RNN_SEQ": 1, "CELL": cell, "HS": hs, "GATES": gates, "NBIAS": b.shape[1] // hs,
                               "WG": 64, "L_T": lens.storage.ctype}
    for name, expr in zip(("ACT_F(x)", "ACT_G(x)", "ACT_H(x)"), acts):
        defines[name] = expr
    defines.update(x.storage.macros("X"))
    defines.update(outs[0].storage.macros("Y"))
    direction = {"forward": 0, "reverse": 1, "bidirectional": 2}[a.direction]
    prm = lw.params([seq, inp, nd, direction, float_bits(float(a.clip)),
                     int(bool(getattr(a, "linear_before_reset", False)))])
    co = outs[2] if s == 2 else lw.dummy()
    lw.launch(FILE, "rnn_seq", defines, [x, h0, c0, lens, w, r, b, outs[0], outs[1], co, prm],
              [batch * nd * 64], [64], node=node)


# --- Identity, Reverse, Roll, ScatterUpdate ---------------------------------------------------
def _data_supports(*value_ports: int) -> Any:
    def check(node: Node) -> str | None:
        for t in (node.inputs[0].element_type, node.output_specs[0].type):
            if not supported_type(t):
                return f"{node.type_name} of {t} has no GPU kernel"
        if node.inputs[0].partial_shape.rank is None:
            return "input of unknown rank"
        return _plan_values(node, value_ports)
    return check


@kernel("Identity", supports=_data_supports())
def lower_identity(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    # A view of the input's buffer, as Reshape: nothing writes a tensor after it is produced.
    from opforge_gpu.lowering import static_shape

    x = lw.input(node, 0)
    lw.set_output(node, 0, lw.view(x, static_shape(node, 0)))


def _ints_of(node: Node, i: int) -> np.ndarray:
    return np.asarray(node.inputs[i].node.constant_value())


def _roll_reverse(node: Node, lw: Lowering, shifts: list[int], flips: list[int]) -> None:
    x = lw.input(node, 0)
    y = lw.new_output(node)
    if not y.size:
        return
    dims = [int(d) for d in x.shape]
    if not dims:
        dims, shifts, flips = [1], [0], [0]
    defines: dict[str, Any] = {"ROLL_REVERSE": 1, "RAW_T": x.storage.raw}
    prm = lw.params([y.size, len(dims), *dims, *shifts, *flips])
    lw.launch(FILE, "roll_reverse", defines, [x, y, prm], [y.size], [WG], node=node)


@kernel("Reverse", supports=_data_supports(1))
def lower_reverse(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    from opforge.opset.reverse import reverse_axes

    rank = len(node.inputs[0].shape)
    axes = reverse_axes(str(node.attrs.mode),  # type: ignore[attr-defined]
                        [int(v) for v in _ints_of(node, 1).reshape(-1)], rank)
    _roll_reverse(node, lw, [0] * rank, [int(d in axes) for d in range(rank)])


@kernel("Roll", supports=_data_supports(1, 2))
def lower_roll(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    from opforge.opset.roll import roll_plan

    dims = [int(d) for d in node.inputs[0].shape]
    shift_v = _ints_of(node, 1)
    shifts, axes = roll_plan([int(v) for v in shift_v.reshape(-1)], [int(v) for v in _ints_of(node, 2).reshape(-1)],
                             shift_v.ndim == 0, len(dims))
    total = [0] * len(dims)
    for s, d in zip(shifts, axes):
        total[d] += s
    _roll_reverse(node, lw, [t % d if d else 0 for t, d in zip(total, dims)], [0] * len(dims))


def _scatter_update_supports(node: Node) -> str | None:
    bad = _data_supports(3)(node)
    if bad:
        return bad
    if node.inputs[1].element_type.ir not in ("i32", "i64"):
        return f"indices of type {node.inputs[1].element_type} (i32/i64 only)"
    return None


@kernel("ScatterUpdate", supports=_scatter_update_supports)
def lower_scatter_update(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    from opforge_gpu.library.index import copy_all

    data, idx, upd = (lw.input(node, i) for i in range(3))
    y = lw.new_output(node)
    copy_all(lw, node, data, y)
    rank = len(data.shape)
    axis = int(_ints_of(node, 3).reshape(-1)[0])
    axis = axis + rank if axis < 0 else axis
    outer = int(np.prod(data.shape[:axis]))
    inner = int(np.prod(data.shape[axis + 1:]))
    n = idx.size
    if not n or not outer * inner:
        return
    defines: dict[str, Any] = {"SCATTER_UPDATE": 1, "INDEX_ERRORS": 1, "RAW_T": y.storage.raw,
                               "I_T": idx.storage.ctype}
    prm = lw.params([outer * inner, inner, data.shape[axis], n, axis])
    check = lw.index_check("index {value} is out of range for axis {which} of size {size} (expected {low}..{high})",
                           negative=False)
    lw.launch(FILE, "scatter_update", defines, [upd, idx, y, prm, *check], [outer * inner], [WG], node=node)
