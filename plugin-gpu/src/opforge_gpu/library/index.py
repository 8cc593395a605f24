"""Index-driven kernels: GatherElements, GatherND, ScatterElementsUpdate, ScatterNDUpdate
(``gather_scatter.cl``), TopK (``topk.cl``), CumSum (``scan.cl``), Range and OneHot
(``generate.cl``). Values that decide shapes (k, axis, depth) are known when the plan is built;
everything else is read on the device."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from opforge.errors import UnsupportedOpError
from opforge.graph import Node

from opforge_gpu.library import kernel
from opforge_gpu.library.movement import contiguous, strided_copy
from opforge_gpu.storage import supported_type

if TYPE_CHECKING:
    from opforge_gpu.lowering import Epilogue, Lowering

WG = 128
GS = "gather_scatter.cl"

#: the errors of indices out of range (IndexCheck messages: the kernel reports value, size, which)
_AXIS_MESSAGE = "index {value} is out of range for axis {which} of size {size} (expected {low}..{high})"
_DIM_MESSAGE = "index {value} is out of range for data dimension {which} of size {size} (expected {low}..{high})"


def _check(index_port: int | None = None) -> Any:
    def check(node: Node) -> str | None:
        types = [i.element_type for i in node.inputs] + [s.type for s in node.output_specs]
        for t in types:
            if not supported_type(t):
                return f"element type {t} is not supported on GPU"
        if index_port is not None and node.inputs[index_port].element_type.ir not in ("i32", "i64"):
            return f"indices of type {node.inputs[index_port].element_type} (i32/i64 only)"
        return None
    return check


def _scalar(node: Node, i: int) -> int:
    value = node.inputs[i].node.constant_value()
    if value is None or np.asarray(value).size < 1:
        # computed on the device from data (not from shapes, sizes or model inputs, which the
        # plan folds): the kernel's launch geometry cannot wait for it
        raise UnsupportedOpError(
            f"node '{node.name}' ({node.type_name}): input {i} ('{node.inputs[i].node.name}') is computed from "
            "tensor data at run time; the GPU plans this node with it as a known constant (run the model "
            "on CPU, or through HETERO:GPU,CPU)"
        )
    return int(np.asarray(value).reshape(-1)[0])


def _axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def copy_all(lw: Lowering, node: Node, src: Any, dst: Any) -> None:
    if dst.size:
        strided_copy(lw, node, src, dst, [dst.size], [1], [1])


# --- gathers ----------------------------------------------------------------------------------
@kernel("GatherElements", supports=_check(index_port=1))
def lower_gather_elements(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    data, idx = lw.input(node, 0), lw.input(node, 1)
    y = lw.new_output(node)
    rank = len(data.shape)
    axis = _axis(int(node.attrs.axis), rank)  # type: ignore[attr-defined]
    defines = {"GATHER_ELEMENTS": 1, "INDEX_ERRORS": 1, "RAW_T": data.storage.raw, "I_T": idx.storage.ctype}
    prm = lw.params([y.size, rank, axis, data.shape[axis], *y.shape, *contiguous(data.shape)])
    if not y.size:
        return
    lw.launch(GS, "gather_elements", defines, [data, idx, y, prm, *lw.index_check(_AXIS_MESSAGE)], [y.size], [WG],
              node=node)


@kernel("GatherND", supports=_check(index_port=1))
def lower_gather_nd(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    data, idx = lw.input(node, 0), lw.input(node, 1)
    y = lw.new_output(node)
    bd = int(getattr(node.attrs, "batch_dims", 0))
    k = idx.shape[-1]
    nb = int(np.prod(data.shape[:bd]))
    m = int(np.prod(idx.shape[bd:-1]))
    rest = int(np.prod(data.shape[bd + k:]))
    strides = contiguous(data.shape)
    bstride = int(np.prod(data.shape[bd:]))
    defines = {"GATHER_ND": 1, "INDEX_ERRORS": 1, "RAW_T": data.storage.raw, "I_T": idx.storage.ctype}
    prm = lw.params([nb * m * rest, k, m, max(rest, 1), bstride, *data.shape[bd:bd + k],
                     *strides[bd:bd + k]])
    if not y.size:
        return
    check = lw.index_check(_DIM_MESSAGE, which_base=bd)
    lw.launch(GS, "gather_nd", defines, [data, idx, y, prm, *check], [y.size], [WG], node=node)


# --- scatters ---------------------------------------------------------------------------------
_RED = {"none": 0, "sum": 1, "prod": 2, "min": 3, "max": 4, "mean": 5, "sub": 6}


def _identity(reduction: str, storage: Any) -> str:
    if reduction in ("sum", "mean", "none", "sub"):
        return "0"
    if reduction == "prod":
        return "1"
    if storage.type.ir == "boolean":
        return "1" if reduction == "min" else "0"
    if storage.is_float:
        return "INFINITY" if reduction == "min" else "-INFINITY"
    limits = {"char": ("SCHAR_MAX", "SCHAR_MIN"), "uchar": ("UCHAR_MAX", "0"), "short": ("SHRT_MAX", "SHRT_MIN"),
              "ushort": ("USHRT_MAX", "0"), "int": ("INT_MAX", "INT_MIN"), "uint": ("UINT_MAX", "0"),
              "long": ("LONG_MAX", "LONG_MIN"), "ulong": ("ULONG_MAX", "0")}[storage.ctype]
    return limits[0] if reduction == "min" else limits[1]


@kernel("ScatterElementsUpdate", supports=_check(index_port=1))
def lower_scatter_elements(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    a: Any = node.attrs
    data, idx, upd = (lw.input(node, i) for i in range(3))
    y = lw.new_output(node)
    copy_all(lw, node, data, y)
    rank = len(data.shape)
    axis = _axis(_scalar(node, 3), rank)
    red = str(getattr(a, "reduction", "none"))
    use_init = int(bool(getattr(a, "use_init_val", True)))
    shape = list(idx.shape)
    lines = int(np.prod([d for i, d in enumerate(shape) if i != axis]))
    if not idx.size:
        return
    defines: dict[str, Any] = {"SCATTER_ELEMENTS": 1, "INDEX_ERRORS": 1, "I_T": idx.storage.ctype, "REDUCTION": _RED[red],
                               "IDENTITY": _identity(red, y.storage)}
    defines.update(y.storage.macros("X"))
    prm = lw.params([lines, rank, axis, data.shape[axis], shape[axis], use_init, *shape, *contiguous(data.shape),
                     *contiguous(upd.shape)])
    lw.launch(GS, "scatter_elements", defines, [upd, idx, y, prm, *lw.index_check(_AXIS_MESSAGE)], [lines], [64],
              node=node)


@kernel("ScatterNDUpdate", supports=_check(index_port=1))
def lower_scatter_nd(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    data, idx, upd = (lw.input(node, i) for i in range(3))
    y = lw.new_output(node)
    copy_all(lw, node, data, y)
    k = idx.shape[-1]
    m = int(np.prod(idx.shape[:-1]))
    rest = int(np.prod(data.shape[k:]))
    if not m or not rest:
        return
    red = str(getattr(node.attrs, "reduction", "none"))
    defines: dict[str, Any] = {"SCATTER_ND": 1, "INDEX_ERRORS": 1, "I_T": idx.storage.ctype, "REDUCTION": _RED[red]}
    defines.update(y.storage.macros("X"))
    prm = lw.params([rest, m, k, *data.shape[:k], *contiguous(data.shape)[:k]])
    lw.launch(GS, "scatter_nd", defines, [upd, idx, y, prm, *lw.index_check(_DIM_MESSAGE)], [rest], [64], node=node)


# --- TopK -------------------------------------------------------------------------------------
def _topk_supports(node: Node) -> str | None:
    bad = _check()(node)
    if bad:
        return bad
    if node.inputs[0].element_type.ir == "boolean":
        return "TopK of booleans has no GPU kernel"
    return None


@kernel("TopK", supports=_topk_supports)
def lower_topk(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    a: Any = node.attrs
    x = lw.input(node, 0)
    rank = len(x.shape)
    axis = _axis(int(a.axis), rank)
    k = _scalar(node, 1)
    y = lw.new_output(node, 0)
    ind = lw.new_output(node, 1)
    length = x.shape[axis]
    inner = int(np.prod(x.shape[axis + 1:]))
    by_index = str(a.sort) == "index"
    defines: dict[str, Any] = {"TOPK": 1, "I_T": ind.storage.ctype, "SORT_INDEX": int(by_index),
                               # NaN ranks above every number, as in NumPy's sort and the CPU and
                               # reference TopK: first for "max", last for "min"
                               "BETTER(a, b)": "((a) > (b) || ((a) != (a) && (b) == (b)))" if str(a.mode) == "max"
                               else "((a) < (b) || ((b) != (b) && (a) == (a)))"}
    defines.update(x.storage.macros("X"))
    defines.update(y.storage.macros("Y"))
    prm = lw.params([x.size, length, max(inner, 1), k])
    if not y.size:
        return
    ranks: Any = lw.dummy()
    if by_index:
        from opforge.element_type import Type

        ranks = lw.temp(x.shape, lw.storage(Type.i32))
    lw.launch("topk.cl", "topk_rank", defines, [x, y, ind, ranks, prm], [x.size], [WG], node=node)
    if by_index:
        lw.launch("topk.cl", "topk_index", defines, [x, y, ind, ranks, prm], [x.size], [WG], node=node)


# --- CumSum -----------------------------------------------------------------------------------
def _cumsum_supports(node: Node) -> str | None:
    bad = _check()(node)
    if bad:
        return bad
    if node.inputs[0].element_type.ir == "boolean":
        return "CumSum of booleans has no GPU kernel"
    return None


@kernel("CumSum", supports=_cumsum_supports)
def lower_cumsum(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    a: Any = node.attrs
    x = lw.input(node, 0)
    y = lw.new_output(node)
    rank = len(x.shape)
    axis = _axis(_scalar(node, 1) if len(node.inputs) > 1 else 0, rank)
    length = x.shape[axis]
    inner = int(np.prod(x.shape[axis + 1:]))
    lines = x.size // max(length, 1)
    c = x.storage.compute
    acc = "double" if c == "double" else ("float" if x.storage.is_float else c)
    defines: dict[str, Any] = {"CUMSUM": 1, "ACC_T": acc}
    defines.update(x.storage.macros("X"))
    defines.update(y.storage.macros("Y"))
    prm = lw.params([lines, length, max(inner, 1), int(bool(a.exclusive)), int(bool(a.reverse))])
    lw.launch("scan.cl", "cumsum", defines, [x, y, prm], [lines], [64], node=node)


# --- Range, OneHot ----------------------------------------------------------------------------
@kernel("Range", supports=_check())
def lower_range(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    start, step = lw.input(node, 0), lw.input(node, 2)
    y = lw.new_output(node)
    defines: dict[str, Any] = {"RANGE": 1, "Y_INTEGRAL": int(not y.storage.is_float)}
    defines.update(start.storage.macros("A"))
    defines.update(step.storage.macros("B"))
    defines.update(y.storage.macros("Y"))
    lw.launch("generate.cl", "range", defines, [start, step, y, lw.params([y.size])], [y.size], [WG], node=node)


@kernel("OneHot", supports=_check(index_port=0))
def lower_one_hot(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    idx, on, off = lw.input(node, 0), lw.input(node, 2), lw.input(node, 3)
    y = lw.new_output(node)
    depth = _scalar(node, 1)
    axis = _axis(int(node.attrs.axis), len(y.shape))  # type: ignore[attr-defined]
    after = int(np.prod(y.shape[axis + 1:]))
    defines = {"ONE_HOT": 1, "I_T": idx.storage.ctype, "RAW_T": y.storage.raw}
    prm = lw.params([y.size, depth, max(after, 1)])
    lw.launch("generate.cl", "one_hot", defines, [idx, on, off, y, prm], [y.size], [WG], node=node)
