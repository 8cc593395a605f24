"""Neural-network kernels: convolutions and MatMul (tiled GEMM with a fused epilogue), pooling,
reductions, Softmax/LogSoftmax and MVN."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from opforge.graph import Node

from opforge_gpu.library import kernel
from opforge_gpu.storage import float_bits, supported_type

if TYPE_CHECKING:
    from opforge_gpu.lowering import Epilogue, Lowering
    from opforge_gpu.plan import Tensor

GEMM = "gemm.cl"

#: (TM, TN, TK, WPTM, WPTN): the big tile keeps a GPU busy on large layers, the small one gives
#: enough work-groups on small ones (batch 1, late layers)
TILE_LARGE = (64, 64, 16, 4, 4)
TILE_SMALL = (32, 32, 16, 2, 2)


#: CPU OpenCL devices (PoCL): 64 work-items per group build much faster and suit CPU caches
TILE_CPU = (16, 16, 8, 2, 2)


def _tile(lw: Lowering, m: int, n: int, batches: int) -> tuple[int, int, int, int, int]:
    if lw.dev.info.type == "CPU":
        return TILE_CPU
    big = -(-m // TILE_LARGE[0]) * -(-n // TILE_LARGE[1]) * batches
    return TILE_LARGE if big >= 2 * lw.dev.info.compute_units else TILE_SMALL


def _tile_defines(tile: tuple[int, int, int, int, int]) -> dict[str, Any]:
    tm, tn, tk, wm, wn = tile
    return {"TM": tm, "TN": tn, "TK": tk, "WPTM": wm, "WPTN": wn}


def _float_node(node: Node) -> str | None:
    t = node.inputs[0].element_type
    if not t.is_float or not supported_type(t):
        return f"{node.type_name} of {t} has no GPU kernel (f32/f16 only)"
    return None


def _epilogue_args(lw: Lowering, node: Node, ep: Epilogue | None, channels: int,
                   ) -> tuple[dict[str, Any], list[Any], float, float, Tensor]:
    """Defines, the (bias, residual) arguments, activation params and the output tensor."""
    defines: dict[str, Any] = {"HAS_BIAS": 0, "HAS_RES": 0, "ACT": 0}
    out_node = ep.last if ep is not None and ep.last is not None else node
    y = lw.new_output(out_node)
    bias: Any = lw.dummy()
    res: Any = lw.dummy()
    if ep is not None:
        if ep.bias is not None and np.any(ep.bias != 0):
            bias_t = lw.const_tensor(ep.bias.astype(np.float32), node.output_specs[0].type)
            defines.update(bias_t.storage.macros("BI"))
            defines["HAS_BIAS"] = 1
            bias = bias_t
        if ep.residual is not None:
            r = lw.input_of(ep.residual)
            defines.update(r.storage.macros("R"))
            defines["HAS_RES"] = 1
            res = r
        defines["ACT"] = ep.act
    for name in ("BI", "R"):
        if f"{name}_T" not in defines:
            defines.update(y.storage.macros(name))
    p0, p1 = (ep.act_min, ep.act_max) if ep is not None else (0.0, 0.0)
    return defines, [bias, res], p0, p1, y


# --- convolution ----------------------------------------------------------------------------
def _conv_supports(node: Node) -> str | None:
    bad = _float_node(node)
    if bad:
        return bad
    rank = node.inputs[0].partial_shape.rank
    if rank not in (3, 4):
        return f"{rank}-D input: only 1-D and 2-D convolutions have a GPU kernel"
    if node.inputs[1].node.constant_value() is None:
        return "the filters are not a constant (GPU kernels pack constant filters)"
    return None


def _geometry(node: Node, x_shape: tuple[int, ...], kernel_dims: tuple[int, ...]) -> dict[str, int]:
    from opforge.opset._window import resolve_pads

    a: Any = node.attrs
    n = len(x_shape) - 2
    pb, _ = resolve_pads(x_shape[2:], kernel_dims, a.strides, a.dilations, a.pads_begin, a.pads_end, a.auto_pad)
    pads = [int(p or 0) for p in pb]
    if n == 1:
        return {"KH": 1, "KW": kernel_dims[0], "SH": 1, "SW": a.strides[0], "PH": 0, "PW": pads[0],
                "DH": 1, "DW": a.dilations[0]}
    return {"KH": kernel_dims[0], "KW": kernel_dims[1], "SH": a.strides[0], "SW": a.strides[1],
            "PH": pads[0], "PW": pads[1], "DH": a.dilations[0], "DW": a.dilations[1]}


@kernel("Convolution", "GroupConvolution", supports=_conv_supports)
def lower_conv(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    x = lw.input(node, 0)
    w_val = np.asarray(node.inputs[1].node.constant_value())
    grouped = node.type_name == "GroupConvolution"
    w5 = w_val if grouped else w_val[np.newaxis]
    groups, cout_g, cin_g = (int(d) for d in w5.shape[:3])
    kdims = tuple(int(d) for d in w5.shape[3:])
    out_shape = node.output_specs[0].shape.to_tuple()
    geo = _geometry(node, x.shape, kdims)
    n_img = x.shape[0]
    c = x.shape[1]
    h, w = (1, x.shape[2]) if len(x.shape) == 3 else (x.shape[2], x.shape[3])
    oh, ow = (1, out_shape[2]) if len(out_shape) == 3 else (out_shape[2], out_shape[3])
    cout = groups * cout_g
    wk = w5.astype(np.float64).reshape(groups, cout_g, cin_g, -1)
    if ep is not None and ep.scale is not None:
        wk = wk * ep.scale.reshape(groups, cout_g, 1, 1)
    defines, extra, p0, p1, y = _epilogue_args(lw, node, ep, cout)
    runtime_geo = lw.dev.info.type == "CPU"
    geo_block = [geo[k] for k in ("KH", "KW", "SH", "SW", "PH", "PW", "DH", "DW")] if runtime_geo else []
    defines.update({"GEO_RUNTIME": 1} if runtime_geo else geo)
    defines.update(x.storage.macros("X"))
    defines.update(y.storage.macros("Y"))
    wtype = node.inputs[1].element_type
    key = ("conv-w", id(w_val), node.name, None if ep is None or ep.scale is None else ep.scale.tobytes())
    if cin_g == 1 and cout_g == 1 and groups > 1:
        # depthwise: memory bound with a tiny K, one work-item per output is the right shape
        wt = lw.const_tensor(wk.astype(np.float32).reshape(-1), wtype, key=key)
        defines.update(wt.storage.macros("W"))
        defines["CONV_DIRECT"] = 1
        total = n_img * cout * oh * ow
        prm = lw.params([total, c, h, w, oh, ow, cout_g, cin_g, cout, float_bits(p0), float_bits(p1), *geo_block])
        lw.launch(GEMM, "conv_direct", defines, [x, wt, *extra, y, prm], [total], [128], node=node)
        return
    k = cin_g * int(np.prod(kdims))
    # packed [G][K][CoutG]: work-items loading a tile of filters read consecutive addresses
    packed = np.ascontiguousarray(wk.reshape(groups, cout_g, k).transpose(0, 2, 1)).astype(np.float32)
    wt = lw.const_tensor(packed.reshape(-1), wtype, key=key)
    defines.update(wt.storage.macros("W"))
    nt = n_img * oh * ow
    tile = _tile(lw, cout_g, nt, groups)
    defines.update(_tile_defines(tile))
    defines["CONV"] = 1
    tm, tn, _, wm, wn = tile
    prm = lw.params([c, h, w, oh, ow, cout_g, cin_g, k, nt, cout, float_bits(p0), float_bits(p1), *geo_block])
    lsize = (tn // wn, tm // wm, 1)
    gsize = (-(-nt // tn) * lsize[0], -(-cout_g // tm) * lsize[1], groups)
    lw.launch(GEMM, "conv_gemm", defines, [x, wt, *extra, y, prm], gsize, lsize, node=node)


# --- MatMul ---------------------------------------------------------------------------------
def _matmul_supports(node: Node) -> str | None:
    bad = _float_node(node)
    if bad:
        return bad
    for i in (0, 1):
        r = node.inputs[i].partial_shape.rank
        if r is None or r < 1:
            return f"input {i} has rank {r}; MatMul needs rank >= 1"
    return None


@kernel("MatMul", supports=_matmul_supports)
def lower_matmul(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    a_attr: Any = node.attrs
    a, b = lw.input(node, 0), lw.input(node, 1)
    sa, sb = list(a.shape), list(b.shape)
    ta, tb = bool(a_attr.transpose_a), bool(a_attr.transpose_b)
    if len(sa) == 1:
        sa, ta = [1, sa[0]], False
    if len(sb) == 1:
        sb, tb = [sb[0], 1], False
    ra, ca = sa[-2], sa[-1]
    rb, cb = sb[-2], sb[-1]
    m, k = (ca, ra) if ta else (ra, ca)
    n = rb if tb else cb
    a_sm, a_sk = (1, ca) if ta else (ca, 1)
    b_sk, b_sn = (1, cb) if tb else (cb, 1)
    batch_a, batch_b = sa[:-2], sb[:-2]
    rank = max(len(batch_a), len(batch_b))
    ba = [1] * (rank - len(batch_a)) + batch_a
    bb = [1] * (rank - len(batch_b)) + batch_b
    out_batch = [max(x, y) for x, y in zip(ba, bb)]
    nb = int(np.prod(out_batch)) if out_batch else 1
    offs: list[int] = []
    for flat in range(nb):
        idx = np.unravel_index(flat, out_batch) if out_batch else ()
        oa = ob = 0
        sa_acc, sb_acc = ra * ca, rb * cb
        for d in range(rank - 1, -1, -1):
            i = int(idx[d])
            oa += (i if ba[d] != 1 else 0) * sa_acc
            ob += (i if bb[d] != 1 else 0) * sb_acc
            sa_acc *= ba[d]
            sb_acc *= bb[d]
        offs += [oa, ob]
    defines, extra, p0, p1, y = _epilogue_args(lw, node, ep, n)
    defines.update(a.storage.macros("X"))
    defines.update(b.storage.macros("W"))
    defines.update(y.storage.macros("Y"))
    tile = _tile(lw, m, n, nb)
    defines.update(_tile_defines(tile))
    defines.update({"MATMUL": 1, "A_KMAJOR": int(a_sk == 1 and a_sm != 1), "B_NMAJOR": int(b_sn == 1)})
    tm, tn, _, wm, wn = tile
    prm = lw.params([m, n, k, a_sm, a_sk, b_sk, b_sn, float_bits(p0), float_bits(p1), *offs])
    lsize = (tn // wn, tm // wm, 1)
    gsize = (-(-n // tn) * lsize[0], -(-m // tm) * lsize[1], nb)
    lw.launch(GEMM, "matmul", defines, [a, b, *extra, y, prm], gsize, lsize, node=node)


# --- pooling --------------------------------------------------------------------------------
def _pool_supports(node: Node) -> str | None:
    bad = _float_node(node)
    if bad:
        return bad
    rank = node.inputs[0].partial_shape.rank
    if rank not in (3, 4):
        return f"{rank}-D input: only 1-D and 2-D pooling have a GPU kernel"
    return None


def _pool_block(node: Node, x_shape: tuple[int, ...], dil: list[int]) -> tuple[list[int], int, int]:
    from opforge.opset._pool import pool_geometry

    a: Any = node.attrs
    begin, end, out = pool_geometry(x_shape[2:], a.kernel, a.strides, dil, a.pads_begin, a.pads_end,
                                    a.auto_pad, a.rounding_type)
    if len(x_shape) == 3:
        h, w, oh, ow = 1, x_shape[2], 1, out[0]
        geo = [1, a.kernel[0], 1, a.strides[0], 0, begin[0], 1, dil[0]]
        hp, wp = 1, x_shape[2] + begin[0] + end[0]
    else:
        h, w, oh, ow = x_shape[2], x_shape[3], out[0], out[1]
        geo = [a.kernel[0], a.kernel[1], a.strides[0], a.strides[1], begin[0], begin[1], dil[0], dil[1]]
        hp, wp = h + begin[0] + end[0], w + begin[1] + end[1]
    total = x_shape[0] * x_shape[1] * oh * ow
    return [total, h, w, oh, ow, *geo], hp, wp


@kernel("MaxPool", supports=_pool_supports)
def lower_max_pool(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    a: Any = node.attrs
    x = lw.input(node, 0)
    dil = list(getattr(a, "dilations", None) or [1] * (len(x.shape) - 2))
    block, _, _ = _pool_block(node, x.shape, dil)
    y = lw.new_output(node, 0)
    defines: dict[str, Any] = {"MAX_POOL": 1}
    defines.update(x.storage.macros("X"))
    defines.update(y.storage.macros("Y"))
    ind: Any = lw.dummy()
    defines["I_T"] = "int"
    if len(node.output_specs) > 1 and (node.id, 1) not in lw.used:
        # nobody reads the indices: a placeholder keeps the port defined without the writes
        lw.set_output(node, 1, lw.temp(node.output_specs[1].shape.to_tuple(), lw.storage(node.output_specs[1].type)))
        block.append(0)
    elif len(node.output_specs) > 1:
        ind_t = lw.new_output(node, 1)
        defines["I_T"] = ind_t.storage.ctype
        defines["WITH_INDICES"] = 1
        axis = int(getattr(a, "axis", 0))
        axis = axis + len(x.shape) if axis < 0 else axis
        modulus = {0: 2**31 - 1, 1: x.shape[1]}.get(axis, 1)
        block.append(modulus)
        ind = ind_t
    else:
        block.append(0)
    defines.setdefault("WITH_INDICES", 0)
    lw.launch("pool.cl", "max_pool", defines, [x, y, ind, lw.params(block)], [block[0]], [128], node=node)


@kernel("AvgPool", supports=_pool_supports)
def lower_avg_pool(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    a: Any = node.attrs
    x = lw.input(node, 0)
    block, hp, wp = _pool_block(node, x.shape, [1] * (len(x.shape) - 2))
    y = lw.new_output(node)
    defines: dict[str, Any] = {"AVG_POOL": 1}
    defines.update(x.storage.macros("X"))
    defines.update(y.storage.macros("Y"))
    block += [int(bool(a.exclude_pad)), hp, wp]
    lw.launch("pool.cl", "avg_pool", defines, [x, y, lw.params(block)], [block[0]], [128], node=node)


# --- reductions -----------------------------------------------------------------------------
_REDUCE: dict[str, tuple[str, str, str, bool]] = {
    # init, step(a, v), final(acc, count), float only
    "ReduceSum": ("0", "((a) + (v))", "(acc)", False),
    "ReduceMean": ("0", "((a) + (v))", "((acc) / (float)(n))", True),
    "ReduceMax": ("LOWEST", "((v) > (a) ? (v) : (a))", "(acc)", False),
    "ReduceMin": ("HIGHEST", "((v) < (a) ? (v) : (a))", "(acc)", False),
    "ReduceProd": ("1", "((a) * (v))", "(acc)", False),
    "ReduceL1": ("0", "((a) + fabs(v))", "(acc)", True),
    "ReduceL2": ("0", "((a) + (v) * (v))", "sqrt(acc)", True),
    "ReduceLogicalAnd": ("1", "((a) && (v))", "(acc)", False),
    "ReduceLogicalOr": ("0", "((a) || (v))", "(acc)", False),
}


def _const_axes(node: Node, i: int, rank: int) -> list[int] | None:
    v = node.inputs[i].node.constant_value()
    if v is None:
        return None
    return sorted({int(a) + rank if int(a) < 0 else int(a) for a in np.asarray(v).reshape(-1)})


def _reduce_supports(node: Node) -> str | None:
    t = node.inputs[0].element_type
    if not supported_type(t):
        return f"element type {t} is not supported on GPU"
    float_only = _REDUCE[node.type_name][3]
    if float_only and not t.is_float:
        return f"{node.type_name} of {t} has no GPU kernel (floating-point types only)"
    if node.inputs[0].partial_shape.rank is None:
        return "input of unknown rank"
    if node.inputs[1].node.constant_value() is None:
        return "the axes are not a constant"
    return None


def _contiguous_strides(shape: tuple[int, ...]) -> list[int]:
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    return strides


@kernel(*_REDUCE, supports=_reduce_supports)
def lower_reduce(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    x = lw.input(node, 0)
    rank = len(x.shape)
    axes = _const_axes(node, 1, rank) or []
    y = lw.new_output(node)
    init, step, final, _ = _REDUCE[node.type_name]
    acc_t = "float" if x.storage.is_float else x.storage.compute
    lowest = "-INFINITY" if acc_t == "float" else ("LONG_MIN" if acc_t == "long" else "INT_MIN")
    highest = "INFINITY" if acc_t == "float" else ("LONG_MAX" if acc_t == "long" else "INT_MAX")
    init = init.replace("LOWEST", lowest).replace("HIGHEST", highest)
    defines: dict[str, Any] = {
        "REDUCE": 1, "ACC_T": acc_t, "REDUCE_INIT": f"(({acc_t}){init})",
        "REDUCE_STEP(a, v)": step, "REDUCE_FINAL(acc, n)": final,
    }
    defines.update(x.storage.macros("X"))
    defines.update(y.storage.macros("Y"))
    strides = _contiguous_strides(x.shape)
    out_dims = [1 if d in axes else x.shape[d] for d in range(rank)]
    red = list(axes)
    block = [int(np.prod(out_dims)), rank, *out_dims, *strides, len(red), *[x.shape[d] for d in red],
             *[strides[d] for d in red]]
    lw.launch("reduce.cl", "reduce", defines, [x, y, lw.params(block)], [block[0]], [64], node=node)


# --- Softmax, LogSoftmax, MVN ---------------------------------------------------------------
def _row_group(length: int) -> int:
    wg = 32
    while wg < length and wg < 256:
        wg *= 2
    return wg


def _softmax_supports(node: Node) -> str | None:
    bad = _float_node(node)
    if bad:
        return bad
    if node.inputs[0].partial_shape.rank is None:
        return "input of unknown rank"
    return None


@kernel("Softmax", "LogSoftmax", supports=_softmax_supports)
def lower_softmax(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    x = lw.input(node, 0)
    y = lw.new_output(node)
    rank = max(len(x.shape), 1)
    axis = int(node.attrs.axis)  # type: ignore[attr-defined]
    axis = axis + rank if axis < 0 else axis
    shape = x.shape or (1,)
    length = shape[axis]
    inner = int(np.prod(shape[axis + 1:]))
    rows = int(np.prod(shape)) // max(length, 1)
    wg = _row_group(length)
    defines: dict[str, Any] = {"SOFTMAX": 1, "WG": wg}
    if node.type_name == "LogSoftmax":
        defines["LOG_SOFTMAX"] = 1
    defines.update(x.storage.macros("X"))
    defines.update(y.storage.macros("Y"))
    lw.launch("reduce.cl", "softmax", defines, [x, y, lw.params([length, inner])], [rows * wg], [wg], node=node)


def _mvn_axes(node: Node) -> list[int] | None:
    rank = node.inputs[0].partial_shape.rank
    if rank is None:
        return None
    if node.version == "opset2":
        a: Any = node.attrs
        start = 1 if getattr(a, "across_channels", False) else 2
        return list(range(start, rank))
    return _const_axes(node, 1, rank)


def _mvn_supports(node: Node) -> str | None:
    bad = _float_node(node)
    if bad:
        return bad
    axes = _mvn_axes(node)
    if axes is None:
        return "the axes are not a constant"
    if axes and axes != list(range(axes[0], axes[-1] + 1)):
        return f"axes {axes} are not contiguous (the GPU kernel normalises one block of axes)"
    return None


@kernel("MVN", supports=_mvn_supports)
def lower_mvn(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    a: Any = node.attrs
    x = lw.input(node, 0)
    y = lw.new_output(node)
    axes = _mvn_axes(node) or []
    shape = x.shape
    if not axes:
        lw.set_output(node, 0, lw.view(x, y.shape))
        return
    length = int(np.prod([shape[d] for d in axes]))
    inner = int(np.prod(shape[axes[-1] + 1:]))
    rows = int(np.prod(shape)) // max(length, 1)
    wg = _row_group(length)
    inside = getattr(a, "eps_mode", "inside_sqrt") == "inside_sqrt"
    defines: dict[str, Any] = {"MVN": 1, "WG": wg}
    defines.update(x.storage.macros("X"))
    defines.update(y.storage.macros("Y"))
    prm = lw.params([length, inner, int(bool(a.normalize_variance)), int(inside), float_bits(float(a.eps))])
    lw.launch("reduce.cl", "mvn", defines, [x, y, prm], [rows * wg], [wg], node=node)

