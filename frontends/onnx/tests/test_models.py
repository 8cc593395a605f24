"""The shapes of the four benchmark models, built small with onnx.helper and seeded weights,
converted by opforge and compared with ONNX Runtime (rtol 1e-4)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh
from opforge.frontend.convert import convert_model
from opforge_onnx.testing.helpers import assert_matches_ort, make_model

RNG = np.random.default_rng(0)


def w(shape: tuple[int, ...], scale: float = 0.1) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def const_node(name: str, arr: np.ndarray) -> object:
    """A weight as a Constant node, the way paddle2onnx stores every weight."""
    return h.make_node("Constant", [], [name], value=nh.from_array(arr, name))


def resnet_like() -> object:
    """Conv-BN-Relu, a residual Add, MaxPool, a ReLU6 as Clip, GlobalAveragePool, flatten as
    Shape/Slice/Concat/Reshape (as paddle2onnx emits it), MatMul + Add for the classifier."""
    nodes = [
        const_node("w1", w((8, 3, 3, 3))), const_node("b1", w((8,))),
        const_node("g", 1 + w((8,))), const_node("be", w((8,))), const_node("mu", w((8,))),
        const_node("var", np.abs(w((8,))) + 0.5),
        h.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], strides=[1, 1]),
        h.make_node("BatchNormalization", ["c1", "g", "be", "mu", "var"], ["bn1"], epsilon=1e-5),
        h.make_node("Relu", ["bn1"], ["r1"]),
        const_node("wdw", w((8, 1, 3, 3))),
        h.make_node("Conv", ["r1", "wdw"], ["dw"], pads=[1, 1, 1, 1], group=8),
        const_node("lo", np.array(0.0, np.float32)), const_node("hi", np.array(6.0, np.float32)),
        h.make_node("Clip", ["dw", "lo", "hi"], ["r6"]),
        h.make_node("Add", ["r6", "r1"], ["res"]),
        h.make_node("MaxPool", ["res"], ["mp"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        h.make_node("GlobalAveragePool", ["mp"], ["gap"]),
        h.make_node("Shape", ["gap"], ["shp"]),
        const_node("s0", np.array([0], np.int64)), const_node("s1", np.array([1], np.int64)),
        h.make_node("Slice", ["shp", "s0", "s1"], ["n"]),
        const_node("m1", np.array([-1], np.int64)),
        h.make_node("Concat", ["n", "m1"], ["newshape"], axis=0),
        h.make_node("Reshape", ["gap", "newshape"], ["flat"]),
        const_node("fw", w((8, 10))), const_node("fb", w((10,))),
        h.make_node("MatMul", ["flat", "fw"], ["mm"]),
        h.make_node("Add", ["mm", "fb"], ["logits"]),
    ]
    return make_model(nodes, [h.make_tensor_value_info("x", T.FLOAT, [1, 3, 16, 16])],
                      [h.make_tensor_value_info("logits", T.FLOAT, [1, 10])])


def bert_like() -> object:
    """Embedding Gather, LayerNormalization (opset 17), attention with Softmax and an additive
    mask from Unsqueeze/Cast/Sub/Mul, erf-GELU with Div/Mul/Add, weights shared through Identity
    (the torch exporter's habit), plus a Pow/ReduceMean/Sqrt normalisation."""
    hid, seq, heads = 16, 6, 2
    inits = [nh.from_array(w((50, hid)), "emb"), nh.from_array(1 + w((hid,)), "ln_g"),
             nh.from_array(w((hid,)), "ln_b"), nh.from_array(w((hid, hid)), "wq"),
             nh.from_array(w((hid, hid)), "wk"), nh.from_array(w((hid, 4 * hid)), "w1"),
             nh.from_array(w((4 * hid, hid)), "w2")]
    nodes = [
        h.make_node("Gather", ["emb", "ids"], ["e"], axis=0),
        h.make_node("LayerNormalization", ["e", "ln_g", "ln_b"], ["x"], axis=-1, epsilon=1e-12),
        h.make_node("Identity", ["wq"], ["wv"]),  # shared weight
        h.make_node("MatMul", ["x", "wq"], ["q"]), h.make_node("MatMul", ["x", "wk"], ["k"]),
        h.make_node("MatMul", ["x", "wv"], ["v"]),
        h.make_node("Constant", [], ["hs"], value=nh.from_array(np.array([1, seq, heads, hid // heads], np.int64))),
        h.make_node("Reshape", ["q", "hs"], ["q4"]), h.make_node("Reshape", ["k", "hs"], ["k4"]),
        h.make_node("Reshape", ["v", "hs"], ["v4"]),
        h.make_node("Transpose", ["q4"], ["qt"], perm=[0, 2, 1, 3]),
        h.make_node("Transpose", ["k4"], ["kt"], perm=[0, 2, 3, 1]),
        h.make_node("Transpose", ["v4"], ["vt"], perm=[0, 2, 1, 3]),
        h.make_node("MatMul", ["qt", "kt"], ["s"]),
        h.make_node("Constant", [], ["sc"], value_float=float(np.sqrt(hid // heads))),
        h.make_node("Div", ["s", "sc"], ["ss"]),
        h.make_node("Constant", [], ["ax"], value=nh.from_array(np.array([1, 2], np.int64))),
        h.make_node("Unsqueeze", ["mask", "ax"], ["m4"]),
        h.make_node("Cast", ["m4"], ["mf"], to=T.FLOAT),
        h.make_node("Constant", [], ["one"], value_float=1.0),
        h.make_node("Sub", ["one", "mf"], ["inv"]),
        h.make_node("Constant", [], ["big"], value_float=-10000.0),
        h.make_node("Mul", ["inv", "big"], ["bias"]),
        h.make_node("Add", ["ss", "bias"], ["sb"]),
        h.make_node("Softmax", ["sb"], ["p"], axis=-1),
        h.make_node("MatMul", ["p", "vt"], ["ctx"]),
        h.make_node("Transpose", ["ctx"], ["ct"], perm=[0, 2, 1, 3]),
        h.make_node("Constant", [], ["fs"], value=nh.from_array(np.array([1, seq, hid], np.int64))),
        h.make_node("Reshape", ["ct", "fs"], ["c3"]),
        h.make_node("MatMul", ["c3", "w1"], ["f1"]),
        h.make_node("Constant", [], ["sq2"], value_float=float(np.sqrt(2.0))),
        h.make_node("Div", ["f1", "sq2"], ["f1d"]), h.make_node("Erf", ["f1d"], ["erf"]),
        h.make_node("Add", ["erf", "one"], ["erf1"]), h.make_node("Mul", ["f1", "erf1"], ["g1"]),
        h.make_node("Constant", [], ["half"], value_float=0.5), h.make_node("Mul", ["g1", "half"], ["gelu"]),
        h.make_node("MatMul", ["gelu", "w2"], ["f2"]),
        h.make_node("Constant", [], ["two"], value_float=2.0),
        h.make_node("Pow", ["f2", "two"], ["sq"]),
        h.make_node("ReduceMean", ["sq"], ["ms"], axes=[-1], keepdims=1),
        h.make_node("Sqrt", ["ms"], ["rms"]),
        h.make_node("Div", ["f2", "rms"], ["out"]),
    ]
    return make_model(nodes, [h.make_tensor_value_info("ids", T.INT64, [1, seq]),
                              h.make_tensor_value_info("mask", T.INT64, [1, seq])],
                      [h.make_tensor_value_info("out", T.FLOAT, [1, seq, hid])], inits)


def mlp(batch: int | str = 4) -> object:
    inits = []
    nodes = []
    prev = "x"
    for i in range(3):
        inits += [nh.from_array(w((16, 16)), f"W{i}"), nh.from_array(w((16,)), f"B{i}")]
        nodes.append(h.make_node("Gemm", [prev, f"W{i}", f"B{i}"], [f"g{i}"], transB=1))
        prev = f"g{i}"
        if i < 2:
            nodes.append(h.make_node("Relu", [prev], [f"r{i}"]))
            prev = f"r{i}"
    nodes.append(h.make_node("Identity", [prev], ["y"]))
    return make_model(nodes, [h.make_tensor_value_info("x", T.FLOAT, [batch, 16])],
                      [h.make_tensor_value_info("y", T.FLOAT, [batch, 16])], inits)


def test_resnet_like_matches_onnxruntime() -> None:
    assert_matches_ort(resnet_like(), {"x": RNG.standard_normal((1, 3, 16, 16)).astype(np.float32)})


def test_resnet_flatten_chain_is_folded_to_a_static_reshape() -> None:
    m = convert_model(resnet_like().SerializeToString(), framework="onnx")
    types = {n.type_name for n in m.get_ordered_ops()}
    assert "ShapeOf" not in types and "Concat" not in types
    assert m.output(0).partial_shape.is_static


def test_bert_like_matches_onnxruntime() -> None:
    ids = RNG.integers(0, 50, (1, 6)).astype(np.int64)
    mask = np.array([[1, 1, 1, 1, 0, 0]], np.int64)
    assert_matches_ort(bert_like(), {"ids": ids, "mask": mask})


def test_mlp_gemm_matches_onnxruntime() -> None:
    assert_matches_ort(mlp(), {"x": RNG.standard_normal((4, 16)).astype(np.float32)})


def test_dynamic_batch_dim_param_and_input_shape_override() -> None:
    model = mlp("batch")
    m = convert_model(model.SerializeToString(), framework="onnx")
    assert m.input(0).partial_shape.dims == (None, 16)
    m2 = convert_model(model.SerializeToString(), framework="onnx", input={"x": [8, 16]})
    assert m2.input(0).partial_shape.dims == (8, 16)
    assert_matches_ort(model, {"x": RNG.standard_normal((3, 16)).astype(np.float32)})


def test_unknown_input_shape_override_names_the_inputs() -> None:
    with pytest.raises(Exception, match="'x'"):
        convert_model(mlp().SerializeToString(), framework="onnx", input={"nope": [1, 16]})


def test_reads_a_path_and_picks_the_onnx_frontend(tmp_path: object) -> None:
    import pathlib

    p = pathlib.Path(str(tmp_path)) / "mlp.onnx"
    p.write_bytes(mlp().SerializeToString())
    m = convert_model(p)  # no framework=: detected through the plugin system
    assert m.rt_info["framework"] == "onnx"
