"""Data movement. Reshape-like ops are free (a view of the same buffer); every other layout change
is one strided copy (``copy.cl``), planned on the host from the static shapes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from opforge.errors import KernelError
from opforge.graph import Node

from opforge_gpu.library import kernel
from opforge_gpu.library.elementwise import broadcast_strides
from opforge_gpu.storage import supported_type

if TYPE_CHECKING:
    from opforge_gpu.lowering import Epilogue, Lowering
    from opforge_gpu.plan import Tensor

FILE = "copy.cl"
WG = 256


def _types_ok(node: Node) -> str | None:
    if not supported_type(node.inputs[0].element_type):
        return f"element type {node.inputs[0].element_type} is not supported on GPU"
    return None


def contiguous(shape: Sequence[int]) -> list[int]:
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    return strides


def strided_copy(lw: Lowering, node: Node, src: Tensor, dst: Tensor, dims: Sequence[int],
                 src_strides: Sequence[int], dst_strides: Sequence[int], src_off: int = 0, dst_off: int = 0) -> None:
    """dst[dst_off + sum(c*ds)] = src[src_off + sum(c*ss)] for every coordinate c of ``dims``."""
    dims = list(dims) or [1]
    ss = list(src_strides) or [0]
    ds = list(dst_strides) or [0]
    # Merge axes that are contiguous in both tensors: fewer divisions per element.
    md, ms, mt = [dims[0]], [ss[0]], [ds[0]]
    for d, s, t in zip(dims[1:], ss[1:], ds[1:]):
        if ms[-1] == s * d and mt[-1] == t * d:
            md[-1] *= d
            ms[-1], mt[-1] = s, t
        else:
            md.append(d)
            ms.append(s)
            mt.append(t)
    n = int(np.prod(md))
    defines = {"STRIDED_COPY": 1, "RAW_T": src.storage.raw}
    prm = lw.params([n, len(md), src_off, dst_off, *md, *ms, *mt])
    lw.launch(FILE, "strided_copy", defines, [src, dst, prm], [n], [WG], node=node)


# --- views ------------------------------------------------------------------------------------
@kernel("Reshape", "Squeeze", "Unsqueeze", supports=lambda n: _types_ok(n))
def lower_view(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    from opforge_gpu.lowering import static_shape

    x = lw.input(node, 0)
    lw.set_output(node, 0, lw.view(x, static_shape(node, 0)))


@kernel("ShapeOf", supports=lambda n: None)
def lower_shape_of(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    # Plans have static shapes, so this is a constant (normally folded before lowering).
    x = lw.input(node, 0)
    et = node.output_specs[0].type
    lw.set_output(node, 0, lw.const_tensor(np.asarray(x.shape, dtype=et.np), et))


# --- Transpose, Concat, Broadcast, Tile --------------------------------------------------------
@kernel("Transpose", supports=_types_ok)
def lower_transpose(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    x = lw.input(node, 0)
    y = lw.new_output(node)
    order = [int(v) for v in np.asarray(node.inputs[1].node.constant_value()).reshape(-1)]
    if not order:
        order = list(range(len(x.shape) - 1, -1, -1))
    xs = contiguous(x.shape)
    strided_copy(lw, node, x, y, y.shape, [xs[p] for p in order], contiguous(y.shape))


def _concat_supports(node: Node) -> str | None:
    return _types_ok(node)


@kernel("Concat", supports=_concat_supports)
def lower_concat(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    y = lw.new_output(node)
    rank = len(y.shape)
    axis = int(node.attrs.axis)  # type: ignore[attr-defined]
    axis = axis + rank if axis < 0 else axis
    ys = contiguous(y.shape)
    pos = 0
    for i in range(len(node.inputs)):
        x = lw.input(node, i)
        if x.size:
            strided_copy(lw, node, x, y, x.shape, contiguous(x.shape), ys, 0, pos * ys[axis])
        pos += x.shape[axis]


@kernel("Broadcast", supports=_types_ok)
def lower_broadcast(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    x = lw.input(node, 0)
    y = lw.new_output(node)
    shape = list(x.shape)
    if getattr(node.attrs, "mode", "numpy") == "explicit":
        mapping = [int(v) for v in np.asarray(node.inputs[2].node.constant_value()).reshape(-1)]
        aligned = [1] * len(y.shape)
        for ax, d in zip(mapping, x.shape):
            aligned[ax] = d
        shape = aligned
    strided_copy(lw, node, x, y, y.shape, broadcast_strides(shape, y.shape), contiguous(y.shape))


@kernel("Tile", supports=_types_ok)
def lower_tile(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    x = lw.input(node, 0)
    y = lw.new_output(node)
    rank = len(y.shape)
    xs = [1] * (rank - len(x.shape)) + list(x.shape)
    reps = [y.shape[d] // xs[d] if xs[d] else 1 for d in range(rank)]
    strides = contiguous(xs)
    # Output coordinates (repeat, element) per axis, in output order, read element strides.
    dims: list[int] = []
    src: list[int] = []
    for d in range(rank):
        dims += [reps[d], xs[d]]
        src += [0, strides[d]]
    strided_copy(lw, node, x, y, dims, src, contiguous(dims))


# --- slicing: the reference applied to a zero-cost probe gives the strided mapping ----------
def view_mapping(node: Node, shape: tuple[int, ...]) -> list[tuple[int, tuple[int, ...], tuple[int, ...]]]:
    """(element offset, element strides, shape) of each output of a slicing node, found by
    running the node's reference on a probe array whose bytes are element indices: the result
    is a NumPy view of the probe, and a view's offset and strides are the mapping."""
    n = int(np.prod(shape))
    probe = np.zeros(max(n, 1), dtype=np.uint8)[:n].reshape(shape)  # calloc'ed: costs no memory
    consts = [np.asarray(i.node.constant_value()) for i in node.inputs[1:]]
    outs = node.op.evaluate(node.attrs, [probe, *consts])
    base = probe.__array_interface__["data"][0]
    result = []
    for o in outs:
        o = np.asarray(o)
        if o.size == 0:
            result.append((0, tuple(0 for _ in o.shape), o.shape))
            continue
        addr = o.__array_interface__["data"][0]
        lo = addr + sum(min(0, s * (d - 1)) for s, d in zip(o.strides, o.shape))
        hi = addr + sum(max(0, s * (d - 1)) for s, d in zip(o.strides, o.shape))
        if o.dtype != np.uint8 or lo < base or hi >= base + n:
            raise KernelError(
                f"node '{node.name}' ({node.type_name}): its reference copies instead of returning a "
                "view, so the GPU cannot plan it as a strided copy"
            )
        result.append((addr - base, tuple(o.strides), o.shape))
    return result


@kernel("Slice", "StridedSlice", "Split", "VariadicSplit", supports=_types_ok)
def lower_slice(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    x = lw.input(node, 0)
    for i, (off, strides, shape) in enumerate(view_mapping(node, x.shape)):
        y = lw.new_output(node, i)
        if y.size:
            strided_copy(lw, node, x, y, shape, strides, contiguous(shape), off, 0)


# --- Pad ------------------------------------------------------------------------------------
def _pad_supports(node: Node) -> str | None:
    bad = _types_ok(node)
    if bad:
        return bad
    return None


@kernel("Pad", supports=_pad_supports)
def lower_pad(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    x = lw.input(node, 0)
    y = lw.new_output(node)
    begin = [int(v) for v in np.asarray(node.inputs[1].node.constant_value()).reshape(-1)]
    mode = str(getattr(node.attrs, "pad_mode", "constant"))
    if mode != "constant" and x.size:
        # edge / reflect / symmetric: per axis, the source index of each output position (from
        # the shapes only), then one gather over the axes
        from opforge.opset.pad import _source_index

        tables = [(_source_index(mode, x.shape[d], begin[d], y.shape[d])[0]).astype(np.int32)
                  for d in range(len(y.shape))]
        axis_gather(lw, node, x, y, tables)
        return
    value: Any = 0
    if len(node.inputs) > 3:
        cv = node.inputs[3].node.constant_value()
        if cv is None:
            # the pad value is computed (or fed) at run time: fill from its device tensor
            v = lw.input(node, 3)
            lw.launch("generate.cl", "fill_from", {"FILL_FROM": 1, "RAW_T": y.storage.raw},
                      [v, y, lw.params([y.size])], [y.size], [WG], node=node)
            value = None
        else:
            value = np.asarray(cv).reshape(-1)[0]
    if value is not None:
        fill(lw, node, y, value)
    xs, ys = contiguous(x.shape), contiguous(y.shape)
    # Negative pads crop: start later in the source; positive pads start later in the output.
    dims, src_off, dst_off = [], 0, 0
    for d in range(len(x.shape)):
        b = begin[d]
        s0 = max(0, -b)
        t0 = max(0, b)
        dims.append(max(0, min(x.shape[d] - s0, y.shape[d] - t0)))
        src_off += s0 * xs[d]
        dst_off += t0 * ys[d]
    if all(dims):
        strided_copy(lw, node, x, y, dims, xs, ys, src_off, dst_off)


def fill(lw: Lowering, node: Node, y: Tensor, value: Any) -> None:
    host = np.zeros(1, dtype=y.storage.np)
    host[0] = value
    bits = np.zeros(8, dtype=np.uint8)
    bits[: host.nbytes] = host.view(np.uint8)
    words = bits.view(np.int32)
    prm = lw.params([y.size, 0, int(words[0]), int(words[1])])
    lw.launch(FILE, "fill", {"FILL": 1, "RAW_T": y.storage.raw}, [y, prm], [y.size], [WG], node=node)


# --- Gather ---------------------------------------------------------------------------------
def _gather_supports(node: Node) -> str | None:
    bad = _types_ok(node)
    if bad:
        return bad
    if node.inputs[1].element_type.ir not in ("i32", "i64"):
        return f"indices of type {node.inputs[1].element_type} (i32/i64 only)"
    return None


@kernel("Gather", supports=_gather_supports)
def lower_gather(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    data, idx = lw.input(node, 0), lw.input(node, 1)
    y = lw.new_output(node)
    rank = len(data.shape)
    bd = int(getattr(node.attrs, "batch_dims", 0))
    if bd < 0:
        bd += len(idx.shape)
    axis = int(np.asarray(node.inputs[2].node.constant_value()).reshape(-1)[0])
    axis = axis + rank if axis < 0 else axis
    nb = int(np.prod(data.shape[:bd]))
    outer = int(np.prod(data.shape[bd:axis]))
    inner = int(np.prod(data.shape[axis + 1:]))
    count = int(np.prod(idx.shape[bd:]))
    defines = {"GATHER": 1, "INDEX_ERRORS": 1, "RAW_T": data.storage.raw, "I_T": idx.storage.ctype}
    prm = lw.params([nb * outer * count * inner, outer, data.shape[axis], inner, count])
    if not y.size:
        return
    check = lw.index_check(f"index {{value}} is out of range for axis {axis} of size {{size}} "
                           "(expected {low}..{high})")
    lw.launch(FILE, "gather", defines, [data, idx, y, prm, *check], [y.size], [WG], node=node)


def axis_gather(lw: Lowering, node: Node, x: Tensor, y: Tensor, tables: Sequence[np.ndarray]) -> None:
    """y[c] = x[sum_d tables[d][c_d] * stride_d]: a separable index map planned from shapes."""
    flat = np.concatenate([np.asarray(t, np.int32).reshape(-1) for t in tables] or [np.zeros(1, np.int32)])
    tab = lw.const_tensor(flat, key=("axis-gather", flat.tobytes()), exact=True)
    rank = len(y.shape)
    defines = {"AXIS_GATHER": 1, "RAW_T": x.storage.raw}
    prm = lw.params([y.size, rank, *y.shape, *contiguous(x.shape)])
    lw.launch(FILE, "axis_gather", defines, [x, tab, y, prm], [y.size], [WG], node=node)


def _block_supports(node: Node) -> str | None:
    bad = _types_ok(node)
    if bad:
        return bad
    if node.inputs[0].partial_shape.rank is None:
        return "input of unknown rank"
    return None


@kernel("DepthToSpace", "SpaceToDepth", supports=_block_supports)
def lower_depth_space(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    a: Any = node.attrs
    x = lw.input(node, 0)
    y = lw.new_output(node)
    n, bs = len(x.shape) - 2, int(a.block_size)
    batch = x.shape[0]
    blocks_first = str(a.mode) == "blocks_first"
    if node.type_name == "DepthToSpace":
        c, spatial = x.shape[1] // bs**n, list(x.shape[2:])
        if blocks_first:
            src = [batch, *([bs] * n), c, *spatial]
            order = [0, n + 1] + [i for k in range(n) for i in (n + 2 + k, 1 + k)]
        else:
            src = [batch, c, *([bs] * n), *spatial]
            order = [0, 1] + [i for k in range(n) for i in (n + 2 + k, 2 + k)]
    else:
        c = x.shape[1]
        spatial = [d // bs for d in x.shape[2:]]
        src = [batch, c, *[v for d in spatial for v in (d, bs)]]
        blocks = [3 + 2 * k for k in range(n)]
        dims = [2 + 2 * k for k in range(n)]
        order = [0, *blocks, 1, *dims] if blocks_first else [0, 1, *blocks, *dims]
    ss = contiguous(src)
    shape = [src[o] for o in order]
    strided_copy(lw, node, x, y, shape, [ss[o] for o in order], contiguous(shape))


def _reverse_sequence_supports(node: Node) -> str | None:
    bad = _types_ok(node)
    if bad:
        return bad
    if node.inputs[1].element_type.ir not in ("i32", "i64") or node.inputs[0].partial_shape.rank is None:
        return "ReverseSequence needs i32/i64 lengths and an input of known rank"
    return None


@kernel("ReverseSequence", supports=_reverse_sequence_supports)
def lower_reverse_sequence(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    a: Any = node.attrs
    x, lengths = lw.input(node, 0), lw.input(node, 1)
    y = lw.new_output(node)
    rank = len(x.shape)
    ba, sa = (int(v) + (rank if int(v) < 0 else 0) for v in (a.batch_axis, a.seq_axis))
    defines = {"REVERSE_SEQUENCE": 1, "INDEX_ERRORS": 1, "RAW_T": x.storage.raw, "I_T": lengths.storage.ctype}
    prm = lw.params([y.size, rank, ba, sa, *x.shape])
    if not y.size:
        return
    check = lw.index_check("seq_lengths[{which}] = {value} is out of range for a sequence of {size} "
                           "(expected {low}..{high})", negative=False, inclusive=True)
    lw.launch(FILE, "reverse_sequence", defines, [x, lengths, y, prm, *check], [y.size], [WG], node=node)
