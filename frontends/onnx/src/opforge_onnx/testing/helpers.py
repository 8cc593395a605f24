"""Helpers for tests of ONNX conversion: build models with onnx.helper, run them with ONNX
Runtime and with opforge (conversion + reference evaluation), compare."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import helper
from opforge.frontend.convert import convert_model
from opforge.reference import evaluate_model


def make_model(nodes: Sequence[onnx.NodeProto], inputs: Sequence[onnx.ValueInfoProto],
               outputs: Sequence[onnx.ValueInfoProto], initializers: Sequence[onnx.TensorProto] = (),
               opset: int = 17, domains: Mapping[str, int] | None = None, name: str = "test") -> onnx.ModelProto:
    imports = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in (domains or {}).items()]
    graph = helper.make_graph(list(nodes), name, list(inputs), list(outputs), list(initializers))
    model = helper.make_model(graph, opset_imports=imports)
    model.ir_version = min(model.ir_version, 10)  # what onnxruntime in the venv accepts
    if any(o.type.tensor_type.elem_type == 0 for o in model.graph.output):
        # Outputs declared without a type get the one ONNX shape inference finds.
        inferred = onnx.shape_inference.infer_shapes(model)
        known = {vi.name: vi for vi in [*inferred.graph.value_info, *inferred.graph.output]
                 if vi.type.tensor_type.elem_type != 0}
        for o in model.graph.output:
            if o.type.tensor_type.elem_type == 0 and o.name in known:
                o.type.CopyFrom(known[o.name].type)
    return model


def run_ort(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return [np.asarray(x) for x in sess.run(None, dict(feeds))]


def run_opforge(model: onnx.ModelProto | bytes | str, feeds: Mapping[str, np.ndarray], **kwargs: Any) -> list[np.ndarray]:
    data = model.SerializeToString() if isinstance(model, onnx.ModelProto) else model
    m = convert_model(data, framework="onnx", **kwargs)
    return evaluate_model(m, dict(feeds))


def assert_matches_ort(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray], rtol: float = 1e-4,
                       atol: float = 1e-5, **kwargs: Any) -> list[np.ndarray]:
    expected = run_ort(model, feeds)
    got = run_opforge(model, feeds, **kwargs)
    if len(got) != len(expected):
        raise AssertionError(f"opforge returned {len(got)} outputs, ONNX Runtime {len(expected)}")
    for i, (g, e) in enumerate(zip(got, expected)):
        if g.dtype != e.dtype or g.shape != e.shape:
            raise AssertionError(f"output {i}: opforge {g.dtype}{g.shape}, ONNX Runtime {e.dtype}{e.shape}")
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, err_msg=f"output {i}")
    return got
