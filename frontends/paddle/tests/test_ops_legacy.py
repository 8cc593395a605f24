"""Legacy ProgramDesc ops, written op by op (the NLP ops and the ones the vision networks do not
reach), converted and compared with paddle's executor."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from paddle_test_utils import SEED, check_model, legacy_model

RNG = np.random.default_rng(SEED)


def f32(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def test_nlp_block(paddle: Any, tmp_path: Path) -> None:
    """Embedding, layer_norm, attention (matmul_v2 with trans_y, scale, softmax, additive mask),
    dropout in inference mode, gelu, transpose2/reshape2, slice with decrease_axis, concat."""
    ids = RNG.integers(0, 30, (2, 6)).astype(np.int64)
    mask = np.zeros((2, 1, 1, 6), np.float32)
    mask[1, ..., -2:] = -1e4

    def body(b: Any, d: dict[str, Any]) -> list[Any]:
        emb = b.op("lookup_table_v2", {"Ids": d["ids"], "W": b.param("emb", f32(30, 8))}, {"padding_idx": 3})
        ln = b.op("layer_norm", {"X": emb, "Scale": b.param("ln_g", 1 + f32(8) * 0.1), "Bias": b.param("ln_b", f32(8))},
                  {"begin_norm_axis": 2, "epsilon": 1e-5}, outputs=("Y", "Mean", "Variance"))
        qkv = b.op("matmul_v2", {"X": ln, "Y": b.param("wqkv", f32(8, 24) * 0.3)}, {"trans_x": False, "trans_y": False})
        qkv = b.op("elementwise_add", {"X": qkv, "Y": b.param("bqkv", f32(24) * 0.1)}, {"axis": -1})
        qkv = b.op("reshape2", {"X": qkv}, {"shape": [0, 0, 3, 2, 4]}, outputs=("Out", "XShape"))
        qkv = b.op("transpose2", {"X": qkv}, {"axis": [2, 0, 3, 1, 4]}, outputs=("Out", "XShape"))
        q, k, v = (b.op("slice", {"Input": qkv}, {"axes": [0], "starts": [i], "ends": [i + 1], "decrease_axis": [0],
                                                   "infer_flags": [1]}) for i in range(3))
        s = b.op("matmul_v2", {"X": q, "Y": k}, {"trans_x": False, "trans_y": True})
        s = b.op("scale", {"X": s}, {"scale": 0.5, "bias": 0.0, "bias_after_scale": True})
        s = b.op("elementwise_add", {"X": s, "Y": d["mask"]}, {"axis": -1})
        a = b.op("softmax", {"X": s}, {"axis": -1})
        a = b.op("dropout", {"X": a}, {"dropout_prob": 0.1, "is_test": True,
                                       "dropout_implementation": "upscale_in_train"}, outputs=("Out", "Mask"))
        c = b.op("matmul_v2", {"X": a, "Y": v}, {"trans_x": False, "trans_y": False})
        c = b.op("transpose2", {"X": c}, {"axis": [0, 2, 1, 3]}, outputs=("Out", "XShape"))
        c = b.op("reshape2", {"X": c}, {"shape": [2, 6, 8]}, outputs=("Out", "XShape"))
        h = b.op("gelu", {"X": c}, {"approximate": False})
        h = b.op("dropout", {"X": h}, {"dropout_prob": 0.25, "is_test": True,
                                       "dropout_implementation": "downgrade_in_infer"}, outputs=("Out", "Mask"))
        h = b.op("scale", {"X": h}, {"scale": 2.0, "bias": 0.5, "bias_after_scale": False})
        cat = b.op("concat", {"X": [h, ln]}, {"axis": -1})
        return [cat, b.op("gelu", {"X": cat}, {"approximate": True})]

    path, inputs, ref = legacy_model(paddle, tmp_path / "nlp", {"ids": ids, "mask": mask}, body)
    check_model(path, inputs, ref)


def test_shape_and_reduce_ops(paddle: Any, tmp_path: Path) -> None:
    """split (num and sections), squeeze2/unsqueeze2, reduce_*, cast, clip, stack, pow,
    elementwise_* with a legacy axis, hard_sigmoid/hard_swish/relu6/leaky_relu/swish, matmul v1."""

    def body(b: Any, d: dict[str, Any]) -> list[Any]:
        x = d["x"]
        p1, p2 = b.op("split", {"X": x}, {"num": 2, "axis": 1}, n_out={"Out": 2})
        s1, s2, s3 = b.op("split", {"X": x}, {"sections": [1, 2, -1], "axis": 2}, n_out={"Out": 3})
        m = b.op("elementwise_mul", {"X": p1, "Y": b.param("chan", f32(2))}, {"axis": 1})
        m = b.op("elementwise_sub", {"X": m, "Y": p2}, {"axis": -1})
        m = b.op("elementwise_div", {"X": m, "Y": b.param("den", 2 + np.abs(f32(5, 6)))}, {"axis": -1})
        r = b.op("reduce_mean", {"X": m}, {"dim": [2], "keep_dim": True, "reduce_all": False})
        r = b.op("squeeze2", {"X": r}, {"axes": [2]}, outputs=("Out", "XShape"))
        r = b.op("unsqueeze2", {"X": r}, {"axes": [0]}, outputs=("Out", "XShape"))
        tot = b.op("reduce_sum", {"X": x}, {"dim": [], "keep_dim": False, "reduce_all": True})
        mx = b.op("reduce_max", {"X": s3}, {"dim": [-1], "keep_dim": False, "reduce_all": False})
        acts = [
            b.op("hard_sigmoid", {"X": s1}, {"slope": 0.2, "offset": 0.5}),
            b.op("hard_swish", {"X": s2}, {"threshold": 6.0, "scale": 6.0, "offset": 3.0}),
            b.op("relu6", {"X": s3}, {"threshold": 6.0}),
            b.op("leaky_relu", {"X": s3}, {"alpha": 0.1}),
            b.op("swish", {"X": s3}, {"beta": 1.0}),
            b.op("clip", {"X": s3}, {"min": -0.5, "max": 0.7}),
            b.op("pow", {"X": b.op("abs", {"X": s3})}, {"factor": 1.5}),
        ]
        st = b.op("stack", {"X": acts[2:]}, {"axis": 1}, outputs=("Y",))
        c = b.op("cast", {"X": b.op("scale", {"X": x}, {"scale": 3.0, "bias": 0.0, "bias_after_scale": True})},
                 {"in_dtype": 5, "out_dtype": 2}, dtype="int32")
        mm = b.op("matmul", {"X": s3, "Y": b.param("w1", f32(2, 6))},
                  {"transpose_X": False, "transpose_Y": True, "alpha": 0.5})
        return [r, tot, mx, *acts[:2], st, c, mm]

    path, inputs, ref = legacy_model(paddle, tmp_path / "shape_ops", {"x": f32(2, 4, 5, 6)}, body)
    check_model(path, inputs, ref)


def test_pooling_variants(paddle: Any, tmp_path: Path) -> None:
    """pool2d: ceil mode, exclusive=False average, adaptive to 3x3, global max; conv2d with
    asymmetric 4-value paddings and dilation; flatten_contiguous_range over the middle dims."""

    def body(b: Any, d: dict[str, Any]) -> list[Any]:
        x = d["x"]
        conv = b.op("conv2d", {"Input": x, "Filter": b.param("cw", f32(4, 3, 3, 3))},
                    {"strides": [1, 2], "paddings": [1, 0, 2, 1], "dilations": [2, 1], "groups": 1,
                     "padding_algorithm": "EXPLICIT", "data_format": "NCHW"}, outputs=("Output",))
        base = {"global_pooling": False, "adaptive": False, "padding_algorithm": "EXPLICIT", "data_format": "NCHW"}
        return [
            b.op("pool2d", {"X": conv}, {**base, "pooling_type": "max", "ksize": [3, 3], "strides": [2, 2],
                                         "paddings": [1, 1], "ceil_mode": True, "exclusive": True}),
            b.op("pool2d", {"X": conv}, {**base, "pooling_type": "avg", "ksize": [3, 2], "strides": [2, 1],
                                         "paddings": [1, 0], "ceil_mode": False, "exclusive": False}),
            b.op("pool2d", {"X": conv}, {**base, "adaptive": True, "pooling_type": "avg", "ksize": [3, 3],
                                         "strides": [1, 1], "paddings": [0, 0], "ceil_mode": False, "exclusive": True}),
            b.op("pool2d", {"X": conv}, {**base, "global_pooling": True, "pooling_type": "max", "ksize": [1, 1],
                                         "strides": [1, 1], "paddings": [0, 0], "ceil_mode": False, "exclusive": True}),
            b.op("flatten_contiguous_range", {"X": conv}, {"start_axis": 1, "stop_axis": 2}, outputs=("Out", "XShape")),
        ]

    path, inputs, ref = legacy_model(paddle, tmp_path / "pool", {"x": f32(1, 3, 11, 13)}, body)
    check_model(path, inputs, ref)


@pytest.mark.parametrize("padding_idx", [-1, 0])
def test_embedding_padding_idx(paddle: Any, tmp_path: Path, padding_idx: int) -> None:
    ids = np.array([[0, 1, 2, 0]], np.int64)

    def body(b: Any, d: dict[str, Any]) -> list[Any]:
        return [b.op("lookup_table_v2", {"Ids": d["ids"], "W": b.param("w", f32(5, 3))}, {"padding_idx": padding_idx})]

    path, inputs, ref = legacy_model(paddle, tmp_path / f"emb{padding_idx}", {"ids": ids}, body)
    check_model(path, inputs, ref)


def test_more_legacy_ops(paddle: Any, tmp_path: Path) -> None:
    """The legacy forms of the ops added after the vision networks: transposed convolution,
    *_interp_v2, pad3d, prelu, arg_max/top_k_v2, where, cumsum, expand_v2/expand_as_v2/tile,
    gather_nd, fill_any_like, range, one_hot_v2, instance_norm/group_norm, p_norm, flip, roll,
    index_select, comparisons, where_index, unstack, strided_slice, meshgrid."""

    def body(b: Any, d: dict[str, Any]) -> list[Any]:
        x = d["x"]
        conv_t = b.op("conv2d_transpose", {"Input": x, "Filter": b.param("wt", f32(4, 3, 3, 3))},
                      {"strides": [2, 2], "paddings": [1, 1], "output_padding": [1, 0], "dilations": [1, 1], "groups": 1,
                       "padding_algorithm": "EXPLICIT", "data_format": "NCHW", "output_size": []}, outputs=("Output",))
        dw_t = b.op("depthwise_conv2d_transpose", {"Input": x, "Filter": b.param("wdt", f32(4, 1, 2, 2))},
                    {"strides": [2, 2], "paddings": [0, 0], "dilations": [1, 1], "groups": 4, "output_size": [],
                     "padding_algorithm": "EXPLICIT", "data_format": "NCHW"}, outputs=("Output",))
        interp = {"data_layout": "NCHW", "out_d": -1, "align_corners": False, "align_mode": 0}
        bil = b.op("bilinear_interp_v2", {"X": x}, {**interp, "interp_method": "bilinear", "out_h": 7, "out_w": 9,
                                                   "scale": []})
        near = b.op("nearest_interp_v2", {"X": x}, {**interp, "interp_method": "nearest", "out_h": -1, "out_w": -1,
                                                   "scale": [2.0, 2.0]})
        pad = b.op("pad3d", {"X": b.op("unsqueeze2", {"X": x}, {"axes": [2]}, outputs=("Out", "XShape"))},
                   {"paddings": [1, 2, 0, 1, 0, 0], "mode": "reflect", "value": 0.0, "data_format": "NCDHW"})
        prelu = b.op("prelu", {"X": x, "Alpha": b.param("alpha", np.full([4], 0.2, np.float32))},
                     {"mode": "channel", "data_format": "NCHW"})
        am = b.op("arg_max", {"X": x}, {"axis": 1, "keepdims": False, "flatten": False, "dtype": 3}, dtype="int64")
        top_v = b.op("top_k_v2", {"X": x}, {"k": 2, "axis": -1, "largest": True, "sorted": True},
                     outputs=("Out", "Indices"))
        gt = b.op("greater_than", {"X": x, "Y": b.param("zero", np.zeros([1], np.float32))}, {"axis": -1}, dtype="bool")
        wh = b.op("where", {"Condition": gt, "X": x, "Y": b.op("scale", {"X": x}, {"scale": 2.0, "bias": 0.0,
                                                                                  "bias_after_scale": True})})
        cs = b.op("cumsum", {"X": x}, {"axis": 2, "flatten": False, "exclusive": True, "reverse": True})
        ex = b.op("expand_v2", {"X": b.op("reduce_mean", {"X": x}, {"dim": [1], "keep_dim": True, "reduce_all": False})},
                  {"shape": [-1, 3, -1, -1]})
        exa = b.op("expand_as_v2", {"X": b.param("row", f32(1, 6))}, {"target_shape": [2, 4, 5, 6]})
        tile = b.op("tile", {"X": x}, {"repeat_times": [1, 1, 2]})
        idx = b.op("assign_value", {}, {"shape": [2, 2], "dtype": 3, "values": [0, 1, 1, 3]}, dtype="int64")
        gnd = b.op("gather_nd", {"X": x, "Index": idx})
        like = b.op("fill_any_like", {"X": x}, {"value": 1.5, "dtype": -1})
        start, end, step = (b.op("fill_constant", {}, {"shape": [1], "dtype": 5, "value": v}) for v in (1.0, 4.0, 0.5))
        rng = b.op("range", {"Start": start, "End": end, "Step": step})
        oh = b.op("one_hot_v2", {"X": am}, {"depth": 4, "dtype": 5, "allow_out_of_range": False})
        inorm = b.op("instance_norm", {"X": x, "Scale": b.param("is", 1 + f32(4) * 0.1), "Bias": b.param("ib", f32(4))},
                     {"epsilon": 1e-5}, outputs=("Y", "SavedMean", "SavedVariance"))
        gnorm = b.op("group_norm", {"X": x, "Scale": b.param("gs", 1 + f32(4) * 0.1), "Bias": b.param("gb", f32(4))},
                     {"epsilon": 1e-5, "groups": 2, "data_layout": "NCHW"}, outputs=("Y", "Mean", "Variance"))
        pn = b.op("p_norm", {"X": x}, {"porder": 2.0, "axis": 1, "epsilon": 1e-12, "keepdim": False, "asvector": False})
        flip = b.op("flip", {"X": x}, {"axis": [1, 3]})
        roll = b.op("roll", {"X": x}, {"shifts": [2, -1], "axis": [2, 3]})
        sel = b.op("index_select", {"X": x, "Index": b.op("assign_value", {}, {"shape": [2], "dtype": 3, "values": [3, 1]},
                                                          dtype="int64")}, {"dim": 1})
        nz = b.op("where_index", {"Condition": gt}, dtype="int64")
        parts = b.op("unstack", {"X": x}, {"axis": 1, "num": 4}, outputs=("Y",), n_out={"Y": 4})
        ss = b.op("strided_slice", {"Input": x}, {"axes": [2, 3], "starts": [0, 1], "ends": [5, 6], "strides": [2, 2],
                                                  "infer_flags": [1, 1], "decrease_axis": []})
        return [conv_t, dw_t, bil, near, pad, prelu, am, top_v, wh, cs, ex, exa, tile, gnd, like, rng, oh, inorm,
                gnorm, pn, flip, roll, sel, nz, parts[1], ss]

    path, inputs, ref = legacy_model(paddle, tmp_path / "more", {"x": f32(2, 4, 5, 6)}, body)
    check_model(path, inputs, ref, cpu=False)  # the CPU device has no kernels for most of these yet
