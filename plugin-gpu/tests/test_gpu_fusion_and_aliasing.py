"""What the GPU plan does to a graph beyond one kernel per op (each op's values on every device are the
op-level conformance suite's, ``tests/ops``): epilogues fused into convolution and MatMul launches,
ShapeOf folded away, and an Identity that aliases its input inside a graph."""

from __future__ import annotations

import numpy as np
import opforge
from gpu_util import check, const, param, rand, supported
from opforge.graph import Model


def _conv(x: opforge.Node, w: np.ndarray, grouped: bool = False, **attrs: object) -> opforge.Node:
    a = {"strides": [1, 1], "pads_begin": [0, 0], "pads_end": [0, 0], "dilations": [1, 1]}
    a.update(attrs)
    return opforge.op("GroupConvolution" if grouped else "Convolution", x, const(w), **a)


def test_conv_epilogue_fusion(core: opforge.Core) -> None:
    """Conv -> BatchNorm -> Add(residual) -> Clamp folds into one launch and stays exact."""
    x, r = param([1, 4, 6, 6], name="x"), param([1, 6, 6, 6], name="r")
    c = _conv(x, rand([6, 4, 3, 3], seed=9), pads_begin=[1, 1], pads_end=[1, 1])
    bn = opforge.op("BatchNormInference", c, const(rand([6], low=0.5)), const(rand([6], seed=2)),
                    const(rand([6], seed=3)), const(rand([6], seed=4, low=0.5, high=2)), epsilon=1e-5)
    y = opforge.op("Clamp", opforge.op("Add", bn, r), min=-1.0, max=1.5)
    m = Model([y], [x, r])
    check(core, m, [rand([1, 4, 6, 6]), rand([1, 6, 6, 6], seed=5)])
    compiled = core.compile_model(m, "GPU", {"ENABLE_PROFILING": True})
    req = compiled.create_infer_request()
    req.infer([rand([1, 4, 6, 6]), rand([1, 6, 6, 6], seed=5)])
    assert [c["kernel"] for c in req.get_profiling_info()] == ["conv_gemm"]


def test_matmul_bias_relu(core: opforge.Core) -> None:
    x = param([4, 16])
    y = opforge.op("MatMul", x, const(rand([10, 16], seed=3)), transpose_a=False, transpose_b=True)
    y = opforge.op("Relu", opforge.op("Add", y, const(rand([10], seed=4))))
    check(core, Model([y], [x]), [rand([4, 16])])


def test_shape_of_is_folded(core: opforge.Core) -> None:
    x = param([2, 3, 4])
    shp = opforge.op("ShapeOf", x, output_type="i64")
    flat = opforge.op("Reshape", x, opforge.op("Concat", opforge.op("Gather", shp, const([0], np.int64),
                                                                    const(0, np.int64)),
                                                 const([-1], np.int64), axis=0), special_zero=False)
    check(core, Model([flat, shp], [x]), [rand([2, 3, 4])])


def test_identity_inside_a_graph(core: opforge.Core) -> None:
    # the alias of the input is read by the next node and is itself an output; the input stays intact
    x = param([2, 3, 4])
    i = opforge.op("Identity", opforge.op("Relu", x), name="identity")
    m = Model([i, opforge.op("Multiply", i, const(2.0)), opforge.op("Sigmoid", x)], [x])
    supported(core, m)
    check(core, m, [rand([2, 3, 4])])
    check(core, m, [rand([2, 3, 4], seed=1)], config={"INFERENCE_PRECISION_HINT": "f16"}, rtol=1e-2, atol=1e-2)


def test_epilogue_pass_records_what_built_in_kernels_absorb() -> None:
    """EpilogueFusion (a planning pass) changes no node: it records each anchor's epilogue in its
    rt_info, stopping at a node a custom kernel runs (it cannot be absorbed) and skipping an
    anchor a custom kernel runs (it cannot apply one). A clone carries stale records: a run
    replaces them."""
    from opforge_gpu.epilogue import EPILOGUE, EpilogueFusion, epilogue_of

    x = param([1, 4, 6, 6])
    c = _conv(x, rand([6, 4, 3, 3], seed=9))
    y = opforge.op("Relu", opforge.op("Add", c, const(rand([1, 6, 1, 1], seed=2))))
    m = Model([y], [x])
    ops = {n.type_name: n for n in m.get_ordered_ops()}

    def members() -> list[str] | None:
        ep = epilogue_of(ops["Convolution"])
        return None if ep is None else [n.type_name for n in ep.members]

    assert EpilogueFusion(lambda n: True).apply(m) is False
    assert members() == ["Add", "Relu"]
    ep = epilogue_of(ops["Convolution"])
    assert ep is not None and ep.bias is not None and ep.act == 1
    EpilogueFusion(lambda n: n.type_name != "Relu").apply(m)
    assert members() == ["Add"]
    EpilogueFusion(lambda n: n.type_name != "Convolution").apply(m)
    assert members() is None and EPILOGUE not in ops["Convolution"].rt_info
