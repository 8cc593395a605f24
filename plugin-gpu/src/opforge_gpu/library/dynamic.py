"""Ops whose output size depends on the data: NonZero, Unique, NonMaxSuppression (``kernels/dynamic.cl``).

Core's staging (:mod:`opforge.planning.staging`) gives such a node a stage of its own: a model of
that one node. The GPU runs it in two passes (``GpuExecutable``): the *count* pass (``lw.count``
None: the node's only output is its size, ``lw.probe``) and the *fill* pass planned for that
size (``lw.count``), where the node's outputs have static shapes (:func:`observed_shapes`).
Where shape inference already knows the size (Unique of one element), the node is planned like
any other, for that size (:func:`_planned_count`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from opforge.element_type import Type
from opforge.graph import Node
from opforge.shape import PartialShape

from opforge_gpu.library import kernel
from opforge_gpu.storage import storage_for, supported_type

if TYPE_CHECKING:
    from opforge_gpu.lowering import Epilogue, Lowering

FILE = "dynamic.cl"
WG = 256


def _unique_geometry(node: Node) -> tuple[int, int, int, int | None]:
    """(outer, L, inner, axis) of the slices compared (axis None: the flattened input)."""
    shape = node.inputs[0].shape
    if len(node.inputs) < 2:
        return 1, int(np.prod(shape)), 1, None
    ax = int(np.asarray(node.inputs[1].node.constant_value()).reshape(-1)[0]) % len(shape)
    return int(np.prod(shape[:ax])), shape[ax], int(np.prod(shape[ax + 1:])), ax


def observed_shapes(node: Node, count: int) -> list[PartialShape]:
    """The output shapes of data-dependent ``node`` once its size is observed: the inferred
    shapes with every dynamic dimension that size. The kernels here count one size per node
    (NonZero's non-zeros, Unique's unique slices, NonMaxSuppression's selected boxes), and with
    static inputs every dynamic dimension of those ops' outputs is that size."""
    return [PartialShape([count if d is None else d for d in s.shape.dims]) for s in node.output_specs]


def _planned_count(node: Node, lw: Lowering, output: int, axis: int) -> int | None:
    """The size ``node``'s outputs are planned for: in its own stage the observed count (None:
    the count pass); elsewhere its outputs are static (core stages the node otherwise), and the
    size is dimension ``axis`` of output ``output``."""
    if node is lw.counted:
        return lw.count
    return int(node.output_specs[output].shape.to_tuple()[axis])


def _count_tensor(lw: Lowering) -> Any:
    i32 = storage_for(Type.i32)
    assert i32 is not None
    t = lw.temp([1], i32)
    lw.probe = t
    return t


# --- NonZero ----------------------------------------------------------------------------------
def _nonzero_supports(node: Node) -> str | None:
    t = node.inputs[0].element_type
    if not supported_type(t):
        return f"NonZero of {t} has no GPU kernel"
    return None


@kernel("NonZero", supports=_nonzero_supports)
def lower_nonzero(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    x = lw.input(node, 0)
    shape = list(x.shape) or [1]
    defines: dict[str, Any] = {"NONZERO": 1, "WG": WG, "Y_T": "int"}
    defines.update(x.storage.macros("X"))
    count = _planned_count(node, lw, 0, 1)
    if count is None:
        cnt = _count_tensor(lw)
        lw.launch(FILE, "nonzero_count", defines, [x, cnt, lw.params([x.size, len(shape), *shape])], [WG], [WG],
                  node=node)
        return
    y = lw.new_output(node)
    defines["Y_T"] = y.storage.ctype
    prm = lw.params([x.size, len(shape), *shape, count])
    if count:
        lw.launch(FILE, "nonzero_fill", defines, [x, y, prm], [WG], [WG], node=node)


# --- Unique -----------------------------------------------------------------------------------
def _unique_supports(node: Node) -> str | None:
    t = node.inputs[0].element_type
    if not supported_type(t):
        return f"Unique of {t} has no GPU kernel"
    return None


@kernel("Unique", supports=_unique_supports)
def lower_unique(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    x = lw.input(node, 0)
    outer, n, inner, _ = _unique_geometry(node)
    i32 = storage_for(Type.i32)
    assert i32 is not None
    defines: dict[str, Any] = {"UNIQUE": 1, "WG": WG, "SORTED": int(bool(node.attrs.sorted))}  # type: ignore[attr-defined]
    defines.update(x.storage.macros("X"))
    defines.update(x.storage.macros("Y"))
    defines.update({"I_T": "int", "C_T": "int"})
    first, rank, cnt = (lw.temp([max(n, 1)], i32) for _ in range(3))
    prm = lw.params([outer, n, inner])
    lw.launch(FILE, "unique_first", defines, [x, first, prm], [n], [64], node=node)
    lw.launch(FILE, "unique_rank", defines, [x, first, rank, cnt, prm], [n], [64], node=node)
    count = _planned_count(node, lw, 1, 0)
    if count is None:
        c = _count_tensor(lw)
        lw.launch(FILE, "unique_count", defines, [first, c, prm], [WG], [WG], node=node)
        return
    outs = [lw.new_output(node, i) for i in range(4)]
    defines.update(outs[0].storage.macros("Y"))
    defines["I_T"] = outs[1].storage.ctype
    defines["C_T"] = outs[3].storage.ctype
    lw.launch(FILE, "unique_fill", defines, [x, first, rank, cnt, *outs, lw.params([outer, n, inner, count])],
              [n], [64], node=node)


# --- NonMaxSuppression ------------------------------------------------------------------------
def _nms_supports(node: Node) -> str | None:
    for i in range(len(node.inputs)):
        t = node.inputs[i].element_type
        if not supported_type(t) or (i != 2 and not t.is_float):
            return f"NonMaxSuppression with input {i} of {t} has no GPU kernel"
    if len({node.inputs[i].element_type for i in range(3, len(node.inputs))}) > 1:
        return "NonMaxSuppression thresholds of different element types have no GPU kernel"
    return None


@kernel("NonMaxSuppression", supports=_nms_supports)
def lower_nms(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    a: Any = node.attrs
    boxes, scores = lw.input(node, 0), lw.input(node, 1)
    nb, nc, n = scores.shape
    f32, i32 = storage_for(Type.f32), storage_for(Type.i32)
    assert f32 is not None and i32 is not None
    opt = [lw.input(node, i) if len(node.inputs) > i and int(np.prod(node.inputs[i].shape)) else None
           for i in range(2, 6)]
    defines: dict[str, Any] = {"NMS": 1, "WG": WG, "CENTER": int(a.box_encoding == "center"),
                               "SORT_DESC": int(bool(a.sort_result_descending)), "I_T": "int", "Y_T": "float",
                               "STORE_Y(p, i, v)": "((p)[i] = (v))"}
    defines.update(boxes.storage.macros("B"))
    defines.update(scores.storage.macros("S"))
    defines.update((opt[0].storage if opt[0] is not None else i32).macros("M"))
    floats = [t for t in opt[1:] if t is not None]
    defines.update((floats[0].storage if floats else f32).macros("T"))
    for name, t in zip(("HAS_MAX", "HAS_IOU", "HAS_SCORE", "HAS_SIGMA"), opt):
        defines[name] = int(t is not None)
    args = [t if t is not None else lw.dummy() for t in opt]
    size = max(nb * nc * n, 1)
    work, alive, sel_box, sel_score = lw.temp([size], f32), lw.temp([size], i32), lw.temp([size], i32), \
        lw.temp([size], f32)
    nsel = lw.temp([max(nb * nc, 1)], i32)
    prm = lw.params([nb, nc, n])
    lw.launch(FILE, "nms_select", defines, [boxes, scores, *args, work, alive, sel_box, sel_score, nsel, prm],
              [nb * nc], [1], node=node)
    count = _planned_count(node, lw, 0, 0)
    if count is None:
        c = _count_tensor(lw)
        lw.launch(FILE, "nms_count", defines, [nsel, c, prm], [WG], [WG], node=node)
        return
    idx, out_scores, valid = (lw.new_output(node, i) for i in range(3))
    defines["I_T"] = idx.storage.ctype
    del defines["STORE_Y(p, i, v)"]
    defines.update(out_scores.storage.macros("Y"))
    lw.launch(FILE, "nms_fill", defines, [sel_box, sel_score, nsel, idx, out_scores, valid,
                                          lw.params([nb, nc, n, count])], [max(nb * nc * n, 1)], [64], node=node)

