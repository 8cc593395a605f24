"""An ONNX graph built node by node, with seeded random weights: the base of the CPU tests'
model builders (test_cpu_rope, test_cpu_bf16_se, test_cpu_grouped_nhwc,
test_cpu_shuffle_channels add the blocks they test on top of it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx

helper, numpy_helper, TP = onnx.helper, onnx.numpy_helper, onnx.TensorProto


class OnnxGraph:
    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self.count = 0  # numbers every name, so no two nodes or initializers clash

    def const(self, v: Any, dtype: Any = np.float32) -> str:
        self.count += 1
        name = f"c{self.count}"
        self.inits.append(numpy_helper.from_array(np.asarray(v, dtype), name))
        return name

    def node(self, op: str, ins: list[str], **attrs: Any) -> str:
        """One node of one output; its output's name."""
        return self.node_outs(op, ins, 1, **attrs)[0]

    def node_outs(self, op: str, ins: list[str], n_out: int, **attrs: Any) -> list[str]:
        self.count += 1
        outs = [f"{op.lower()}{self.count}" + (f"_{i}" if n_out > 1 else "") for i in range(n_out)]
        self.nodes.append(helper.make_node(op, ins, outs, name=f"{op}{self.count}", **attrs))
        return outs

    def conv(self, x: str, cin: int, cout: int, k: int = 1, group: int = 1, stride: int = 1) -> str:
        """A k x k convolution ("same" padding) with He-initialised weights and a small bias."""
        w = self.rng.standard_normal((cout, cin // group, k, k)) * (2.0 / (cin // group * k * k)) ** 0.5
        b = self.rng.standard_normal(cout) * 0.1
        return self.node("Conv", [x, self.const(w), self.const(b)], group=group, pads=[k // 2] * 4,
                         strides=[stride, stride])

    def relu(self, x: str) -> str:
        return self.node("Relu", [x])

    def save_model(self, path: Path, inputs: list[Any], outs: list[str], opset: int, name: str = "g") -> Path:
        """The graph as an ONNX file: ``inputs`` are value infos, ``outs`` f32 outputs of any shape."""
        graph = helper.make_graph(self.nodes, name, inputs,
                                  [helper.make_tensor_value_info(o, TP.FLOAT, None) for o in outs], self.inits)
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), str(path))
        return path

    def save(self, path: Path, x_shape: tuple[int, ...], outs: list[str], opset: int = 14) -> Path:
        """The graph with one f32 input ``x`` of ``x_shape``."""
        return self.save_model(path, [helper.make_tensor_value_info("x", TP.FLOAT, x_shape)], outs, opset)
