"""Neural-network kernels: convolutions and MatMul (tiled GEMM with a fused epilogue), pooling,
reductions, Softmax/LogSoftmax and MVN."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from opforge.graph import Node

from opforge_gpu.library import conv_fast, kernel
from opforge_gpu.storage import float_bits, supported_type

if TYPE_CHECKING:
    from opforge_gpu.lowering import Epilogue, Lowering
    from opforge_gpu.plan import Tensor

GEMM = "gemm.cl"

#: (TM, TN, TK, WPTM, WPTN), largest first: the biggest tile that still gives every compute unit
#: two work-groups. 8x8 (4x8) accumulators per work-item read local memory as float4 (VEC4), so a
#: multiply-add costs a quarter (three eighths) of a local load; the small tile gives enough
#: work-groups on small layers (batch 1, late layers), or split-K does (convolutions).
TILE_XL = (128, 128, 16, 8, 8)
TILE_WIDE = (64, 128, 16, 4, 8)
TILE_LARGE = (64, 64, 16, 4, 4)
TILE_SMALL = (32, 32, 16, 2, 2)


#: CPU OpenCL devices (PoCL): 64 work-items per group build much faster and suit CPU caches
TILE_CPU = (16, 16, 8, 2, 2)

Tile = tuple[int, int, int, int, int]


def _tile(lw: Lowering, m: int, n: int, batches: int, split_k: bool = False) -> Tile:
    """The tile of an (m x n) x batches GEMM. With ``split_k`` (convolutions), a large tile that
    gives each compute unit at least one work-group is kept: splitting K makes up the rest."""
    forced = conv_fast.forced_tile()
    if forced is not None:
        return forced
    if lw.dev.info.type == "CPU":
        return TILE_CPU
    cus = lw.dev.info.compute_units

    def groups(t: Tile) -> int:
        return -(-m // t[0]) * -(-n // t[1]) * batches

    for t in (TILE_XL, TILE_WIDE, TILE_LARGE):
        if t[0] > 64 and m <= 64:
            continue  # half the rows of the tile would be padding
        if groups(t) >= 2 * cus:
            return t
    return TILE_LARGE if split_k and groups(TILE_LARGE) >= cus else TILE_SMALL


def _tile_defines(tile: Tile) -> dict[str, Any]:
    tm, tn, tk, wm, wn = tile
    return {"TM": tm, "TN": tn, "TK": tk, "WPTM": wm, "WPTN": wn, "VEC4": int(wm % 4 == 0 and wn % 4 == 0)}


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
    t = node.inputs[0].element_type
    if not supported_type(t) or t.ir == "boolean":
        return f"{node.type_name} of {t} has no GPU kernel"
    rank = node.inputs[0].partial_shape.rank
    if rank not in (3, 4, 5):
        return f"{rank}-D input: only 1-D, 2-D and 3-D convolutions have a GPU kernel"
    if node.inputs[1].partial_shape.rank is None:
        return "filters of unknown rank"
    return None


def _geometry(node: Node, x_shape: tuple[int, ...], kernel_dims: tuple[int, ...]) -> dict[str, int]:
    from opforge.opset.geometry import resolve_pads

    a: Any = node.attrs
    n = len(x_shape) - 2
    pb, _ = resolve_pads(x_shape[2:], kernel_dims, a.strides, a.dilations, a.pads_begin, a.pads_end, a.auto_pad)
    pads = [int(p or 0) for p in pb]
    if n == 1:
        return {"KH": 1, "KW": kernel_dims[0], "SH": 1, "SW": a.strides[0], "PH": 0, "PW": pads[0],
                "DH": 1, "DW": a.dilations[0]}
    return {"KH": kernel_dims[0], "KW": kernel_dims[1], "SH": a.strides[0], "SW": a.strides[1],
            "PH": pads[0], "PW": pads[1], "DH": a.dilations[0], "DW": a.dilations[1]}


def _pad3(v: Any, fill: int) -> list[int]:
    vals = [int(x) for x in v]
    return [fill] * (3 - len(vals)) + vals


def _conv_nd(node: Node, lw: Lowering, ep: Epilogue | None, kernel_name: str, x: Tensor, wt: Tensor,
             groups: int, cin_g: int, cout_g: int, kdims: tuple[int, ...], pads: list[int]) -> None:
    """A direct (3-D or transposed) convolution: conv_nd.cl."""
    a: Any = node.attrs
    out_shape = node.output_specs[0].shape.to_tuple()
    defines, extra, p0, p1, y = _epilogue_args(lw, node, ep, groups * cout_g)
    defines["CONV_FWD" if kernel_name == "conv_nd" else "CONV_BWD"] = 1
    c = x.storage.compute
    defines["ACC_T"] = "float" if x.storage.is_float else ("long" if c in ("long", "ulong") else c)
    defines.update(x.storage.macros("X"))
    defines.update(wt.storage.macros("W"))
    defines.update(y.storage.macros("Y"))
    total = int(np.prod(out_shape))
    prm = lw.params([total, x.shape[1], out_shape[1], cin_g, cout_g,
                     *_pad3(x.shape[2:], 1), *_pad3(out_shape[2:], 1), *_pad3(kdims, 1), *_pad3(a.strides, 1),
                     *_pad3(pads, 0), *_pad3(a.dilations, 1), float_bits(p0), float_bits(p1)])
    lw.launch("conv_nd.cl", kernel_name, defines, [x, wt, *extra, y, prm], [total], [64], node=node)


@kernel("Convolution", "GroupConvolution", supports=_conv_supports)
def lower_conv(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    x = lw.input(node, 0)
    w_const = node.inputs[1].node.constant_value()
    grouped = node.type_name == "GroupConvolution"
    w_shape = tuple(int(d) for d in node.inputs[1].shape)
    w5_shape = w_shape if grouped else (1, *w_shape)
    groups, cout_g, cin_g = w5_shape[:3]
    kdims = w5_shape[3:]
    out_shape = node.output_specs[0].shape.to_tuple()
    wtype = node.inputs[1].element_type
    if w_const is None:
        w_dev = lw.input(node, 1)
        wk = None
    else:
        w_val = np.asarray(w_const)
        wk = w_val.astype(np.float64).reshape(groups, cout_g, cin_g, -1)
        if ep is not None and ep.scale is not None:
            wk = wk * ep.scale.reshape(groups, cout_g, 1, 1)
        # shared by the plans made from these filters (w_const), as long as they exist
        key = ("conv-w", node.name, None if ep is None or ep.scale is None else ep.scale.tobytes())
    if len(x.shape) == 5 or not x.storage.is_float:
        from opforge.opset.geometry import resolve_pads

        a: Any = node.attrs
        pb, _ = resolve_pads(x.shape[2:], kdims, a.strides, a.dilations, a.pads_begin, a.pads_end, a.auto_pad)
        if wk is not None:
            w_dev = lw.const_tensor(wk.astype(np.float32).reshape(-1), wtype, key=key, owner=w_const)
        _conv_nd(node, lw, ep, "conv_nd", x, w_dev, groups, cin_g, cout_g, kdims, [int(p or 0) for p in pb])
        return
    geo = _geometry(node, x.shape, kdims)
    n_img = x.shape[0]
    c = x.shape[1]
    h, w = (1, x.shape[2]) if len(x.shape) == 3 else (x.shape[2], x.shape[3])
    oh, ow = (1, out_shape[2]) if len(out_shape) == 3 else (out_shape[2], out_shape[3])
    cout = groups * cout_g
    defines, extra, p0, p1, y = _epilogue_args(lw, node, ep, cout)
    if conv_fast.winograd_applies(lw, x, geo, groups, cin_g, cout_g, wk is not None, (oh, ow)):
        assert wk is not None
        wino = dict(defines)
        wino.update(y.storage.macros("Y"))
        conv_fast.lower_winograd(node, lw, x, wk.reshape(cout_g, cin_g, -1), key, geo, (oh, ow), wino, extra,
                                 p0, p1, y, owner=w_const)
        return
    runtime_geo = lw.dev.info.type == "CPU"
    geo_block = [geo[k] for k in ("KH", "KW", "SH", "SW", "PH", "PW", "DH", "DW")] if runtime_geo else []
    defines.update({"GEO_RUNTIME": 1} if runtime_geo else geo)
    defines.update(x.storage.macros("X"))
    defines.update(y.storage.macros("Y"))
    if cin_g == 1 and cout_g == 1 and groups > 1:
        # depthwise: memory bound with a tiny K, one work-item per output is the right shape
        if wk is not None:
            w_dev = lw.const_tensor(wk.astype(np.float32).reshape(-1), wtype, key=key, owner=w_const)
        defines.update(w_dev.storage.macros("W"))
        defines["CONV_DIRECT"] = 1
        total = n_img * cout * oh * ow
        prm = lw.params([total, c, h, w, oh, ow, cout_g, cin_g, cout, float_bits(p0), float_bits(p1), *geo_block])
        lw.launch(GEMM, "conv_direct", defines, [x, w_dev, *extra, y, prm], [total], [128], node=node)
        return
    k = cin_g * int(np.prod(kdims))
    # packed [G][K][CoutG]: work-items loading a tile of filters read consecutive addresses
    if wk is not None:
        packed = np.ascontiguousarray(wk.reshape(groups, cout_g, k).transpose(0, 2, 1)).astype(np.float32)
        w_dev = lw.const_tensor(packed.reshape(-1), wtype, key=key, owner=w_const)
    else:
        from opforge_gpu.library.movement import strided_copy

        # filters computed at run time: packed on the device by a transposing copy
        src = w_dev
        w_dev = lw.temp([groups * k * cout_g], src.storage)
        strided_copy(lw, node, src, w_dev, [groups, k, cout_g], [cout_g * k, 1, k], [k * cout_g, cout_g, 1])
    defines.update(w_dev.storage.macros("W"))
    nt = n_img * oh * ow
    tile = _tile(lw, cout_g, nt, groups, split_k=True)
    defines.update(_tile_defines(tile))
    defines["CONV"] = 1
    tm, tn, tk, wm, wn = tile
    prm = lw.params([c, h, w, oh, ow, cout_g, cin_g, k, nt, cout, float_bits(p0), float_bits(p1), *geo_block])
    lsize = (tn // wn, tm // wm, 1)
    tiles = -(-nt // tn) * -(-cout_g // tm) * groups
    slices = conv_fast.split_k(lw, tiles, k, tk)
    if slices > 1:
        # late layers at batch 1: too few output tiles to fill the device, so K is split too
        from opforge.element_type import Type

        from opforge_gpu.storage import storage_for

        f32 = storage_for(Type.f32)
        assert f32 is not None
        kc = -(-k // slices // tk) * tk
        slices = -(-k // kc)
        part = lw.temp([slices * cout * nt], f32)
        sd = {key_: v for key_, v in defines.items() if key_ not in ("HAS_BIAS", "HAS_RES", "ACT")}
        sd.update(f32.macros("Y"))
        sd.update({"HAS_BIAS": 0, "HAS_RES": 0, "ACT": 0, "SPLIT_K": slices, "SPLIT_KC": kc})
        gsize = (-(-nt // tn) * lsize[0], -(-cout_g // tm) * lsize[1], groups * slices)
        lw.launch(GEMM, "conv_gemm", sd, [x, w_dev, lw.dummy(), lw.dummy(), part, prm], gsize, lsize, node=node)
        rd = {key_: v for key_, v in defines.items() if key_.startswith(("HAS_", "ACT", "BI_", "R_", "LOAD_BI", "LOAD_R",
                                                                         "Y_", "STORE_Y", "LOAD_Y"))}
        rd.update({"SPLITK_REDUCE": 1, "SPLIT_K": slices})
        total = n_img * cout * oh * ow
        rprm = lw.params([total, cout, oh * ow, float_bits(p0), float_bits(p1)])
        lw.launch(GEMM, "splitk_reduce", rd, [part, *extra, y, rprm], [total], [128], node=node)
        return
    gsize = (-(-nt // tn) * lsize[0], -(-cout_g // tm) * lsize[1], groups)
    lw.launch(GEMM, "conv_gemm", defines, [x, w_dev, *extra, y, prm], gsize, lsize, node=node)


def _backprop_supports(node: Node) -> str | None:
    bad = _float_node(node)
    if bad:
        return bad
    rank = node.inputs[0].partial_shape.rank
    if rank not in (3, 4, 5):
        return f"{rank}-D input: only 1-D, 2-D and 3-D transposed convolutions have a GPU kernel"
    return None


@kernel("ConvolutionBackpropData", "GroupConvolutionBackpropData", supports=_backprop_supports)
def lower_conv_backprop(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    from opforge.opset.geometry import backprop_pads

    x = lw.input(node, 0)
    wt = lw.input(node, 1)
    grouped = node.type_name == "GroupConvolutionBackpropData"
    w5 = wt.shape if grouped else (1, *wt.shape)
    groups, cin_g, cout_g = (int(d) for d in w5[:3])
    kdims = tuple(int(d) for d in w5[3:])
    out_shape = None
    if len(node.inputs) > 2:
        out_shape = [int(v) for v in np.asarray(node.inputs[2].node.constant_value()).reshape(-1)]
    begin, _ = backprop_pads(node.attrs, x.shape[2:], kdims, out_shape)  # type: ignore[arg-type]
    _conv_nd(node, lw, None, "conv_transposed", x, wt, groups, cin_g, cout_g, kdims, [int(b) for b in begin])


# --- MatMul ---------------------------------------------------------------------------------
def _matmul_supports(node: Node) -> str | None:
    t = node.inputs[0].element_type
    if not supported_type(t) or t.ir == "boolean":
        return f"MatMul of {t} has no GPU kernel"
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
    if not a.storage.is_float:
        # integers: exact accumulation, no epilogue (only float results fuse one)
        y = lw.new_output(node)
        c = a.storage.compute
        nd: dict[str, Any] = {"MATMUL_NAIVE": 1, "ACC_T": "long" if c in ("long", "ulong") else c}
        nd.update(a.storage.macros("X"))
        nd.update(b.storage.macros("W"))
        nd.update(y.storage.macros("Y"))
        prm = lw.params([m, n, k, a_sm, a_sk, b_sk, b_sn, 0, 0, *offs])
        lw.launch(GEMM, "matmul_naive", nd, [a, b, y, prm], (n, m, nb), (1, 1, 1), node=node)
        return
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
    t = node.inputs[0].element_type
    if not supported_type(t) or (node.type_name == "AvgPool" and not t.is_float) or t.ir == "boolean":
        return f"{node.type_name} of {t} has no GPU kernel"
    rank = node.inputs[0].partial_shape.rank
    if rank not in (3, 4, 5):
        return f"{rank}-D input: only 1-D, 2-D and 3-D pooling have a GPU kernel"
    return None


def _pool_block(node: Node, x_shape: tuple[int, ...], dil: list[int]) -> tuple[list[int], list[int]]:
    """The parameter block (see pool.cl) and the padded extents (DP, HP, WP)."""
    from opforge.opset.geometry import pool_geometry

    a: Any = node.attrs
    begin, end, out = pool_geometry(x_shape[2:], a.kernel, a.strides, dil, a.pads_begin, a.pads_end,
                                    a.auto_pad, a.rounding_type)
    pad = 3 - (len(x_shape) - 2)

    def full(v: Any, fill: int) -> list[int]:
        return [fill] * pad + [int(x) for x in v]

    sp = full(x_shape[2:], 1)
    osp = full(out, 1)
    b = full(begin, 0)
    e = full(end, 0)
    total = x_shape[0] * x_shape[1] * int(np.prod(osp))
    block = [total, *sp, *osp, *full(a.kernel, 1), *full(a.strides, 1), *b, *full(dil, 1)]
    return block, [sp[d] + b[d] + e[d] for d in range(3)]


@kernel("MaxPool", supports=_pool_supports)
def lower_max_pool(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    a: Any = node.attrs
    x = lw.input(node, 0)
    dil = list(getattr(a, "dilations", None) or [1] * (len(x.shape) - 2))
    block, _ = _pool_block(node, x.shape, dil)
    y = lw.new_output(node, 0)
    defines: dict[str, Any] = {"MAX_POOL": 1, "X_FLOAT": int(x.storage.is_float)}
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
    dil = list(getattr(a, "dilations", None) or [1] * (len(x.shape) - 2))
    block, padded = _pool_block(node, x.shape, dil)
    y = lw.new_output(node)
    defines: dict[str, Any] = {"AVG_POOL": 1}
    defines.update(x.storage.macros("X"))
    defines.update(y.storage.macros("Y"))
    block += [int(bool(a.exclude_pad)), *padded]
    lw.launch("pool.cl", "avg_pool", defines, [x, y, lw.params(block)], [block[0]], [128], node=node)


# --- reductions -----------------------------------------------------------------------------
_REDUCE: dict[str, tuple[str, str, str, bool]] = {
    # init, step(a, v), final(acc, count), float only
    "ReduceSum": ("0", "((a) + (v))", "(acc)", False),
    "ReduceMean": ("0", "((a) + (v))", "((acc) / (float)(n))", True),
    # a NaN element makes the result NaN: it is taken, and nothing compares greater than it after
    "ReduceMax": ("LOWEST", "((v) > (a) || (v) != (v) ? (v) : (a))", "(acc)", False),
    "ReduceMin": ("HIGHEST", "((v) < (a) || (v) != (v) ? (v) : (a))", "(acc)", False),
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
    acc_t = "float" if x.storage.compute == "float" else x.storage.compute
    lowest, highest = {"float": ("-INFINITY", "INFINITY"), "double": ("-INFINITY", "INFINITY"),
                       "long": ("LONG_MIN", "LONG_MAX"), "uint": ("0", "UINT_MAX"),
                       "ulong": ("0", "ULONG_MAX")}.get(acc_t, ("INT_MIN", "INT_MAX"))
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
    return None


@kernel("MVN", supports=_mvn_supports)
def lower_mvn(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    x = lw.input(node, 0)
    y = lw.new_output(node)
    axes = _mvn_axes(node) or []
    if not axes:
        lw.set_output(node, 0, lw.view(x, y.shape))
        return
    if axes != list(range(axes[0], axes[-1] + 1)):
        # normalise over the trailing axes of a transposed copy, then transpose back
        from opforge_gpu.library.movement import contiguous, strided_copy

        rank = len(x.shape)
        perm = [d for d in range(rank) if d not in axes] + list(axes)
        tshape = [x.shape[d] for d in perm]
        xs = contiguous(x.shape)
        xt = lw.temp(tshape, x.storage)
        strided_copy(lw, node, x, xt, tshape, [xs[d] for d in perm], contiguous(tshape))
        yt = lw.temp(tshape, y.storage)
        _mvn_rows(node, lw, xt, yt, list(range(rank - len(axes), rank)))
        inv = [perm.index(d) for d in range(rank)]
        ts = contiguous(tshape)
        strided_copy(lw, node, yt, y, y.shape, [ts[i] for i in inv], contiguous(y.shape))
        return
    _mvn_rows(node, lw, x, y, axes)


def _mvn_rows(node: Node, lw: Lowering, x: Tensor, y: Tensor, axes: list[int]) -> None:
    a: Any = node.attrs
    shape = x.shape
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



# --- Interpolate ----------------------------------------------------------------------------
_RESAMPLE_MODES = ("nearest", "linear", "linear_onnx", "cubic")


def _interp_supports(node: Node) -> str | None:
    bad = _float_node(node)
    if bad:
        return bad
    mode = str(node.attrs.mode)  # type: ignore[attr-defined]
    if mode not in _RESAMPLE_MODES:
        return f"Interpolate mode '{mode}' has no GPU kernel"
    return None


def _taps(a: Any, n_in: int, n_out: int, scale: np.float32, antialias: bool) -> tuple[np.ndarray, np.ndarray]:
    """The tap table (indices, weights) [n_out, T] of one axis: the reference's own weights."""
    from opforge.opset import interpolate as ref

    if a.mode == "nearest":
        idx = ref._nearest_index(a, n_in, n_out, scale).reshape(n_out, 1)
        return idx.astype(np.int32), np.ones((n_out, 1), np.float32)
    if a.mode == "linear_onnx":
        w = ref._linear_onnx_weights(a, n_in, n_out, scale)
    elif a.mode == "cubic":
        w = ref._cubic_weights(a, n_in, n_out, scale)
    else:
        w = ref._triangle_weights(a, n_in, n_out, scale, antialias)
    taps = max(1, int((w != 0).sum(axis=1).max()))
    idx = np.full((n_out, taps), -1, np.int32)
    wt = np.zeros((n_out, taps), np.float32)
    for j in range(n_out):
        nz = np.nonzero(w[j])[0]
        idx[j, : len(nz)] = nz
        wt[j, : len(nz)] = w[j, nz]
    return idx, wt


@kernel("Interpolate", supports=_interp_supports)
def lower_interpolate(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    from opforge.opset.interpolate import _full_pads, scaled_size

    from opforge_gpu.library.movement import contiguous, fill, strided_copy

    a: Any = node.attrs
    x = lw.input(node, 0)
    rank = len(x.shape)
    y = lw.new_output(node)
    axes = list(range(rank))
    if len(node.inputs) > 2:
        axes = [int(v) + (rank if int(v) < 0 else 0)
                for v in np.asarray(node.inputs[2].node.constant_value()).reshape(-1)]
    values = np.asarray(node.inputs[1].node.constant_value()).reshape(-1)
    pb, pe = _full_pads(a.pads_begin, rank), _full_pads(a.pads_end, rank)
    cur = x
    if any(pb) or any(pe):
        padded = [x.shape[d] + pb[d] + pe[d] for d in range(rank)]
        cur = lw.temp(padded, x.storage)
        fill(lw, node, cur, 0)
        ps = contiguous(padded)
        strided_copy(lw, node, x, cur, x.shape, contiguous(x.shape), ps, 0, sum(pb[d] * ps[d] for d in range(rank)))
    sizes: list[int] = []
    scales: list[np.float32] = []
    for i, ax in enumerate(axes):
        if a.shape_calculation_mode == "sizes":
            sizes.append(int(values[i]))
            scales.append(np.float32(sizes[-1]) / np.float32(cur.shape[ax]))
        else:
            scales.append(np.float32(values[i]))
            sizes.append(scaled_size(cur.shape[ax], float(values[i])))
    antialias = bool(getattr(a, "antialias", False)) and any(s < 1 for s in scales)
    steps = [(ax, n, sc) for ax, n, sc in zip(axes, sizes, scales)
             if not (n == cur.shape[ax] and a.mode == "nearest" and sc == 1)]
    if not steps:
        if y.size:
            strided_copy(lw, node, cur, y, [y.size], [1], [1])
        return
    for k, (ax, n_out, scale) in enumerate(steps):
        shape = list(cur.shape)
        n_in = shape[ax]
        idx, wt = _taps(a, n_in, n_out, scale, antialias)
        shape[ax] = n_out
        out = y if k == len(steps) - 1 else lw.temp(shape, x.storage)
        it = lw.const_tensor(idx, key=("interp-idx", idx.tobytes(), idx.shape), exact=True)
        wtt = lw.const_tensor(wt, key=("interp-w", wt.tobytes(), wt.shape), exact=True)
        inner = int(np.prod(shape[ax + 1:]))
        defines: dict[str, Any] = {"RESAMPLE": 1}
        defines.update(cur.storage.macros("X"))
        defines.update(out.storage.macros("Y"))
        prm = lw.params([out.size, n_out, max(inner, 1), n_in, idx.shape[1]])
        lw.launch("interpolate.cl", "resample_axis", defines, [cur, it, wtt, out, prm], [out.size], [128], node=node)
        cur = out


# --- LRN ------------------------------------------------------------------------------------
def _lrn_supports(node: Node) -> str | None:
    bad = _float_node(node)
    if bad:
        return bad
    if node.inputs[0].partial_shape.rank is None or node.inputs[0].partial_shape.rank > 8:
        return "LRN needs an input of known rank <= 8"
    return None


@kernel("LRN", supports=_lrn_supports)
def lower_lrn(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    a: Any = node.attrs
    x = lw.input(node, 0)
    y = lw.new_output(node)
    rank = len(x.shape)
    axes = _const_axes(node, 1, rank) or []
    defines: dict[str, Any] = {"LRN": 1}
    defines.update(x.storage.macros("X"))
    defines.update(y.storage.macros("Y"))
    prm = lw.params([y.size, rank, *x.shape, len(axes), *axes, (int(a.size) - 1) // 2, int(a.size),
                     float_bits(float(a.alpha)), float_bits(float(a.beta)), float_bits(float(a.bias))])
    lw.launch("reduce.cl", "lrn", defines, [x, y, prm], [y.size], [128], node=node)
