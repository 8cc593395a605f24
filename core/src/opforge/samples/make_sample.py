"""Regenerate ``sample_custom_op.onnx`` (needs the ``onnx`` package; byte-identical on re-run).

A small CNN with one custom op in the middle: Conv -> Relu -> org.opforge.template::Identity
(scale=0.5) -> Conv -> Relu -> GlobalAveragePool -> Flatten -> Gemm. Weights are seeded random.

    python -m opforge.samples.make_sample
"""

from __future__ import annotations

import numpy as np


def build() -> bytes:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)

    def init(name: str, shape: tuple[int, ...], scale: float = 0.3) -> onnx.TensorProto:
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    inits = [init("w1", (8, 3, 3, 3)), init("b1", (8,)), init("w2", (16, 8, 3, 3)), init("b2", (16,)),
             init("fc_w", (16, 10)), init("fc_b", (10,))]
    nodes = [
        helper.make_node("Conv", ["image", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Identity", ["r1"], ["t1"], name="template_identity", domain="org.opforge.template",
                         scale=0.5),
        helper.make_node("Conv", ["t1", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["logits"], name="fc"),
    ]
    graph = helper.make_graph(
        nodes, "opforge_sample",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])],
        inits,
    )
    model = helper.make_model(
        graph, producer_name="opforge.samples",
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("org.opforge.template", 1)],
    )
    model.ir_version = 8
    return model.SerializeToString()  # type: ignore[no-any-return]


if __name__ == "__main__":
    from opforge.samples import SAMPLE_ONNX

    SAMPLE_ONNX.write_bytes(build())
    print(f"wrote {SAMPLE_ONNX}")
