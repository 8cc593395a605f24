"""Small valid ONNX models (onnx.helper, seeded weights): the seeds of the ONNX target, and
through opforge's IR writer the seeds of the IR target. Each exercises a different part of the
reader: initializers as raw_data and as typed fields, attributes of every kind, shape arithmetic
that constant folding removes, a subgraph, several inputs and outputs, dynamic dimensions."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = [helper.make_opsetid("", 17)]


def _w(rng: np.random.Generator, name: str, *shape: int) -> TensorProto:
    return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)


def _model(graph: onnx.GraphProto) -> bytes:
    m = helper.make_model(graph, opset_imports=OPSET, producer_name="opforge-fuzz-seed")
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m.SerializeToString()


def conv_relu() -> bytes:
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"], name="flat", axis=1),
        helper.make_node("Gemm", ["f", "fcw", "fcb"], ["y"], name="fc", transB=1, alpha=0.5),
    ]
    g = helper.make_graph(nodes, "conv_relu",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])],
                          [_w(rng, "w", 4, 2, 3, 3), _w(rng, "b", 4), _w(rng, "fcw", 3, 16), _w(rng, "fcb", 3)])
    return _model(g)


def shape_arith() -> bytes:
    """Shape -> Gather -> Concat -> Reshape (folded to a constant), int64 typed-field initializers."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        helper.make_node("Gather", ["s", "i0"], ["n"], name="gather", axis=0),
        helper.make_node("Concat", ["n", "m1"], ["ns"], name="concat", axis=0),
        helper.make_node("Reshape", ["x", "ns"], ["r"], name="reshape"),
        helper.make_node("Softmax", ["r"], ["sm"], name="softmax", axis=-1),
        helper.make_node("ReduceMean", ["sm"], ["y"], name="mean", keepdims=0),
        helper.make_node("Cast", ["r"], ["z"], name="cast", to=TensorProto.INT32),
    ]
    inits = [helper.make_tensor("i0", TensorProto.INT64, [1], [0]),
             helper.make_tensor("m1", TensorProto.INT64, [1], [-1])]
    g = helper.make_graph(nodes, "shape_arith",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N"]),
                           helper.make_tensor_value_info("z", TensorProto.INT32, ["N", 6])],
                          inits)
    return _model(g)


def with_subgraph() -> bytes:
    """An If whose branches are graphs (nesting is what depth limits guard)."""
    then_g = helper.make_graph([helper.make_node("Add", ["x", "one"], ["t"], name="then_add")], "then", [],
                               [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"], name="else_neg")], "else", [],
                               [helper.make_tensor_value_info("e", TensorProto.FLOAT, [2])])
    nodes = [
        helper.make_node("ReduceSum", ["x"], ["s"], name="sum", keepdims=0),
        helper.make_node("Greater", ["s", "zero"], ["c"], name="gt"),
        helper.make_node("If", ["c"], ["y"], name="if", then_branch=then_g, else_branch=else_g),
    ]
    inits = [helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0]),
             helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0])]
    g = helper.make_graph(nodes, "with_if", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])], inits)
    return _model(g)


def multi_io() -> bytes:
    """Two inputs of different types, Gather with data indices, Where, Transpose, Split."""
    nodes = [
        helper.make_node("Gather", ["x", "idx"], ["g"], name="gather", axis=1),
        helper.make_node("Transpose", ["g"], ["t"], name="tr", perm=[1, 0]),
        helper.make_node("Split", ["t", "parts"], ["a", "b"], name="split", axis=0),
        helper.make_node("Less", ["a", "b"], ["c"], name="less"),
        helper.make_node("Where", ["c", "a", "b"], ["y"], name="where"),
        helper.make_node("Clip", ["y", "lo", "hi"], ["z"], name="clip"),
    ]
    inits = [helper.make_tensor("parts", TensorProto.INT64, [2], [1, 1]),
             helper.make_tensor("lo", TensorProto.FLOAT, [], [-1.0]),
             helper.make_tensor("hi", TensorProto.FLOAT, [], [1.0])]
    g = helper.make_graph(nodes, "multi_io",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4]),
                           helper.make_tensor_value_info("idx", TensorProto.INT64, [2])],
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 3])], inits)
    return _model(g)


def misc_tensors() -> bytes:
    """Initializers of several element types, float16 and bool, a string-free constant node."""
    rng = np.random.default_rng(1)
    nodes = [
        helper.make_node("Constant", [], ["k"], name="const",
                         value=numpy_helper.from_array(np.arange(6, dtype=np.float16).reshape(2, 3), "k")),
        helper.make_node("Cast", ["x"], ["xh"], name="to_f16", to=TensorProto.FLOAT16),
        helper.make_node("Mul", ["xh", "k"], ["m"], name="mul"),
        helper.make_node("Cast", ["m"], ["mf"], name="to_f32", to=TensorProto.FLOAT),
        helper.make_node("MatMul", ["mf", "w"], ["mm"], name="matmul"),
        helper.make_node("Expand", ["mm", "es"], ["e"], name="expand"),
        helper.make_node("Tile", ["e", "reps"], ["y"], name="tile"),
        helper.make_node("Not", ["flag"], ["nf"], name="not"),
    ]
    inits = [_w(rng, "w", 3, 2), helper.make_tensor("es", TensorProto.INT64, [3], [2, 2, 2]),
             helper.make_tensor("reps", TensorProto.INT64, [3], [1, 1, 2]),
             helper.make_tensor("flag", TensorProto.BOOL, [2], [True, False])]
    g = helper.make_graph(nodes, "misc",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2, 4]),
                           helper.make_tensor_value_info("nf", TensorProto.BOOL, [2])], inits)
    return _model(g)


def all_models() -> list[bytes]:
    return [conv_relu(), shape_arith(), with_subgraph(), multi_io(), misc_tensors()]
