"""Kernels register themselves: each ``csrc/kernels/<op>.cpp`` ends with an ``OPFORGE_KERNEL``
line, and the module's registry (``_core.kernel_types()``, ``_core.post_op_types()``) is exactly
what those lines say, so the linker kept every kernel object file. Activations fused into a
convolution reach C++ as (type, attributes) pairs and become the post-op their kernel registered."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import opforge
import pytest
from cpu_testing import check, const, param, rand
from opforge.graph import Model
from opforge_cpu import _core

KERNELS = Path(__file__).resolve().parents[1] / "csrc" / "kernels"
# OPFORGE_KERNEL(Type, make_x, check_x)[.layout_flexible()][.post_op(x_eltwise)];
REGISTRATION = re.compile(r"^OPFORGE_KERNEL\((\w+),\s*\w+,\s*\w+\)(.*);\s*$", re.M)

#: the kernels the hand-kept table in kernels/registry.cpp listed before the kernels registered
#: themselves: every one must still be there
HAND_TABLE = {
    "Abs", "Acos", "Acosh", "AdaptiveAvgPool", "AdaptiveMaxPool", "Add", "Asin", "Asinh", "Atan", "Atanh",
    "AvgPool", "BatchNormInference", "BitCast", "BitwiseAnd", "BitwiseLeftShift", "BitwiseNot", "BitwiseOr",
    "BitwiseRightShift", "BitwiseXor", "Ceiling", "Clamp", "Col2Im", "Concat", "Convert", "ConvertLike",
    "Convolution", "ConvolutionBackpropData", "Cos", "Cosh", "CumSum", "DFT", "DeformableConvolution", "Divide",
    "Einsum", "Elu", "Equal", "Erf", "Exp", "Floor", "FloorMod", "GRN", "GRUSequence", "Gather", "GatherElements",
    "GatherND", "Gelu", "Greater", "GreaterEqual", "GridSample", "GroupConvolution", "GroupConvolutionBackpropData",
    "HSigmoid", "HSwish", "IDFT", "IRDFT", "Identity", "IndexMap", "Interpolate", "IsFinite", "IsInf", "IsNaN",
    "LRN", "LSTMSequence", "Less", "LessEqual", "Log", "LogSoftmax", "LogicalAnd", "LogicalNot", "LogicalOr",
    "LogicalXor", "MVN", "MatMul", "MaxPool", "Maximum", "Minimum", "Mish", "Mod", "Multiply", "Negative",
    "NonMaxSuppression", "NonZero", "NormalizeL2", "NotEqual", "OneHot", "PRelu", "Power", "RDFT", "RNNSequence",
    "ROIAlign", "ReduceL1", "ReduceL2", "ReduceLogicalAnd", "ReduceLogicalOr", "ReduceMax", "ReduceMean",
    "ReduceMin", "ReduceProd", "ReduceSum", "Relu", "Reshape", "Round", "ScatterElementsUpdate", "ScatterNDUpdate",
    "ScatterUpdate", "Select", "Selu", "ShapeOf", "Sigmoid", "Sign", "Sin", "Sinh", "SoftPlus", "SoftSign",
    "Softmax", "Split", "Sqrt", "SquaredDifference", "Squeeze", "Subtract", "Swish", "Tan", "Tanh",
    "TfIdfVectorizer", "TopK", "Transpose", "Unique", "Unsqueeze", "VariadicSplit",
}
#: the activations the Python/C++ pair of post-op string tables fused
OLD_POST_OPS = {"Relu", "Clamp", "Sigmoid", "Tanh", "Gelu", "HSwish", "HSigmoid", "Mish", "Elu", "Abs", "Exp", "Sqrt"}


def registrations() -> dict[str, str]:
    """Type -> the options chained onto its OPFORGE_KERNEL line, over every kernel source."""
    out: dict[str, str] = {}
    for path in sorted(KERNELS.glob("*.cpp")):
        for m in REGISTRATION.finditer(path.read_text()):
            assert m.group(1) not in out, f"{m.group(1)} registered twice ({path.name})"
            out[m.group(1)] = m.group(2)
    return out


def test_every_registration_in_the_sources_is_linked() -> None:
    # A kernel object file the linker dropped would take its registrar with it.
    regs = registrations()
    assert len(regs) >= len(HAND_TABLE)
    assert sorted(_core.kernel_types()) == sorted(regs)


def test_every_kernel_of_the_hand_table_is_still_registered() -> None:
    assert HAND_TABLE - set(_core.kernel_types()) == set()


def test_post_op_types_are_the_registrations_with_a_post_op() -> None:
    regs = registrations()
    assert sorted(_core.post_op_types()) == sorted(t for t, opts in regs.items() if ".post_op(" in opts)
    assert set(_core.post_op_types()) >= OLD_POST_OPS


def conv_then(act: str, attrs: dict[str, Any]) -> tuple[Model, list[np.ndarray]]:
    x = param("x", [1, 4, 6, 6])
    w = const(rand((4, 4, 3, 3), seed=1) * 0.3)
    y = opforge.op("Convolution", x, w, strides=[1, 1], pads_begin=[1, 1], pads_end=[1, 1], dilations=[1, 1],
                   name="conv")
    y = opforge.op(act, y, name="act", **attrs)
    return Model([y], [x], name=f"conv_{act}"), [rand((1, 4, 6, 6), seed=2)]


#: attributes that make a fused activation's post-op differ from its defaults
ATTRS: dict[str, list[dict[str, Any]]] = {
    "Clamp": [{"min": -0.25, "max": 0.75}],
    "Elu": [{"alpha": 0.3}],
    "Gelu": [{"approximation_mode": "erf"}, {"approximation_mode": "tanh"}],
}
CASES = [(t, a) for t in sorted(_core.post_op_types()) for a in ATTRS.get(t, [{}])]


@pytest.mark.parametrize(("act", "attrs"), CASES, ids=[f"{t}-{a}" if a else t for t, a in CASES])
def test_each_post_op_fuses_into_a_convolution_and_matches_the_reference(core: Any, act: str,
                                                                       attrs: dict[str, Any]) -> None:
    model, feeds = conv_then(act, attrs)
    check(core, model, feeds, rtol=1e-4, atol=1e-4)
    steps = core.compile_model(model, "CPU")._executable.programs()[((1, 4, 6, 6),)].program.steps()
    kernels = [s for s in steps if s["type"] != "Reorder"]
    assert len(kernels) == 1, steps
    assert set(kernels[0]["fused_names"]) == {"conv", "act"}


def conv_program(post_ops: Any) -> Any:
    prog = _core.Program()
    x = prog.add_tensor("f32", [1, 1, 3, 3])
    w = prog.add_tensor("f32", [1, 1, 1, 1], np.ones((1, 1, 1, 1), np.float32))
    y = prog.add_tensor("f32", [1, 1, 3, 3])
    attrs = {"strides": [1, 1], "pads_begin": [0, 0], "pads_end": [0, 0], "dilations": [1, 1], "auto_pad": "explicit",
             "has_bias": False, "sum_input": -1, "post_ops": post_ops}
    prog.add_node("conv", "Convolution", "opset1", attrs, [x, w], [y], ["conv", "act"])
    prog.set_io([x], [y])
    return prog


def test_a_fused_op_without_a_post_op_is_refused_by_name() -> None:
    prog = conv_program([("Add", {})])
    with pytest.raises(_core.NodeCompileFailure, match="fused Add is not an op oneDNN can run as a post-op"):
        prog.finalize(1, False)


def test_the_old_string_encoding_is_refused() -> None:
    prog = conv_program(["relu"])
    with pytest.raises(_core.NodeCompileFailure, match=r"'post_ops' is not a list of \(op type, attributes\) pairs"):
        prog.finalize(1, False)


def test_post_op_attributes_reach_the_kernel() -> None:
    # Clamp's min/max come from the pair's attribute dict, not from an encoded string.
    prog = conv_program([("Clamp", {"min": -0.5, "max": 0.5})])
    prog.finalize(1, False)
    state = prog.create_state()
    x = np.linspace(-2, 2, 9, dtype=np.float32).reshape(1, 1, 3, 3)
    (y,) = prog.run(state, [x])
    np.testing.assert_array_equal(y, np.clip(x, -0.5, 0.5))
