"""Small real ONNX models for the Ray tests, built with onnx.helper from seeded random weights."""

from __future__ import annotations

import numpy as np

#: the image the test models take, without the batch dimension
ROW_SHAPE = (3, 8, 8)
CLASSES = 5


def conv_net(batch: int | str = 1, seed: int = 0, *, flatten: bool = True) -> bytes:
    """image[batch,3,8,8] -> Conv 3x3 -> Relu -> GlobalAveragePool -> Flatten -> Gemm -> logits,
    and Softmax(logits) -> probs. ``batch`` is a number (static) or a name (dynamic).

    A static batch gets baked into the converted model by Flatten (a Reshape to a constant
    ``[batch, 8]``), as it is in most exported CNNs; ``flatten=False`` pools with
    ReduceMean(keepdims=0) instead, which leaves a static model that can be re-batched."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    w = rng.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.3
    b = rng.standard_normal(8).astype(np.float32) * 0.1
    fc = rng.standard_normal((8, CLASSES)).astype(np.float32)
    fb = rng.standard_normal(CLASSES).astype(np.float32) * 0.1
    nodes = [
        helper.make_node("Conv", ["image", "w", "b"], ["conv"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["conv"], ["relu"]),
        *([helper.make_node("GlobalAveragePool", ["relu"], ["pool"]),
           helper.make_node("Flatten", ["pool"], ["flat"])] if flatten else
          [helper.make_node("ReduceMean", ["relu"], ["flat"], axes=[2, 3], keepdims=0)]),
        helper.make_node("Gemm", ["flat", "fc", "fb"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=1),
    ]
    graph = helper.make_graph(
        nodes, "conv_net",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [batch, *ROW_SHAPE])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, CLASSES]),
         helper.make_tensor_value_info("probs", TensorProto.FLOAT, [batch, CLASSES])],
        [numpy_helper.from_array(a, n) for a, n in ((w, "w"), (b, "b"), (fc, "fc"), (fb, "fb"))],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return bytes(model.SerializeToString())


def images(n: int, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, *ROW_SHAPE)).astype(np.float32)
