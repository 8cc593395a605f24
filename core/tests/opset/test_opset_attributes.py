"""Type names, versions and IR attributes of the element-wise, reduction and conversion
operations, compared with what OpenVINO itself writes into an IR file."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from opforge.opset import all_ops

from .oracle import openvino_ir_layers

OURS = {op.type_name: op for op in all_ops()}

# OpenVINO spells PRelu "PReLU" in IR, and writes LogicalXor (ov::op::v1) as opset2; its IR reader
# accepts "PRelu" and LogicalXor in opset1 as well, which is what opforge uses.
IR_TYPE_NAMES = {"PReLU": "PRelu"}
VERSION_EXCEPTIONS = {"LogicalXor": ("opset2", "opset1")}


def _build(o: Any) -> list[Any]:
    """One node of every operation, with non-default attribute values where the API allows."""
    f = o.parameter([2, 3, 4], np.float32)
    i = o.parameter([2, 3], np.int32)
    b = o.parameter([2, 3], bool)
    ax = o.constant(np.array([1], np.int64))
    one = o.constant(np.ones(1, np.float32))
    unary = [
        "absolute",
        "acos",
        "acosh",
        "asin",
        "asinh",
        "atan",
        "atanh",
        "ceiling",
        "cos",
        "cosh",
        "erf",
        "exp",
        "floor",
        "log",
        "negative",
        "sigmoid",
        "sign",
        "sin",
        "sinh",
        "sqrt",
        "tan",
        "tanh",
        "softplus",
        "softsign",
        "mish",
        "hswish",
        "hsigmoid",
        "is_finite",
        "is_nan",
        "swish",
    ]
    nodes = [getattr(o, n)(f) for n in unary]
    nodes += [
        o.gelu(f, "tanh"),
        o.elu(f, 0.5),
        o.clamp(f, -1.5, 2.5),
        o.round(f, "half_away_from_zero"),
        o.is_inf(f, {"detect_negative": False}),
        o.logical_not(b),
        o.bitwise_not(i),
        o.selu(f, one, one),
        o.prelu(f, o.constant(np.ones(3, np.float32))),
        o.convert(f, "i32"),
        o.convert_like(f, i),
        o.select(b, i, i),
        o.cumsum(f, o.constant(np.int64(1)), True, True),
    ]
    binary = [
        "subtract",
        "multiply",
        "divide",
        "power",
        "maximum",
        "minimum",
        "squared_difference",
        "floor_mod",
        "mod",
        "equal",
        "not_equal",
        "less",
        "less_equal",
        "greater",
        "greater_equal",
    ]
    nodes += [getattr(o, n)(f, f) for n in binary]
    nodes += [
        getattr(o, n)(b, b)
        for n in ["logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor"]
    ]
    nodes += [
        getattr(o, n)(f, ax, True)
        for n in [
            "reduce_sum",
            "reduce_mean",
            "reduce_max",
            "reduce_min",
            "reduce_prod",
            "reduce_l1",
            "reduce_l2",
        ]
    ]
    nodes += [getattr(o, n)(b, ax, False) for n in ["reduce_logical_and", "reduce_logical_or"]]
    return nodes


@pytest.fixture(scope="module")
def openvino_layers(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, str, dict[str, str]]]:
    o = pytest.importorskip("openvino.opset13")
    return openvino_ir_layers(_build(o), tmp_path_factory.mktemp("ir") / "ops.xml")


@pytest.mark.openvino
def test_type_names_versions_and_attributes_match_openvino_ir(
    openvino_layers: list[tuple[str, str, dict[str, str]]],
) -> None:
    assert len(openvino_layers) == 73
    for ir_type, ir_version, ir_attrs in openvino_layers:
        name = IR_TYPE_NAMES.get(ir_type, ir_type)
        assert name in OURS, f"no opforge op for OpenVINO's {ir_type}"
        op = OURS[name]
        want_version = ir_version
        if name in VERSION_EXCEPTIONS:
            assert VERSION_EXCEPTIONS[name][0] == ir_version
            want_version = VERSION_EXCEPTIONS[name][1]
        assert op.version == want_version, name
        # Attribute names are identical, and values written from the same settings are too.
        assert set(op.Attrs.model_fields) == set(ir_attrs), name
        attrs = op.attrs_from_ir(name, ir_attrs)
        assert op.attrs_to_ir(attrs) == ir_attrs, name


def test_default_attribute_values() -> None:
    defaults = {
        "Gelu": {"approximation_mode": "ERF"},
        "Round": {"mode": "half_to_even"},
        "IsInf": {"detect_negative": "true", "detect_positive": "true"},
        "Divide": {"auto_broadcast": "numpy", "m_pythondiv": "true"},
        "CumSum": {"exclusive": "false", "reverse": "false"},
        "ReduceL2": {"keep_dims": "false"},
        "Select": {"auto_broadcast": "numpy"},
        "Mod": {"auto_broadcast": "numpy"},
        "BitwiseXor": {"auto_broadcast": "numpy"},
    }
    for name, want in defaults.items():
        op = OURS[name]
        assert op.attrs_to_ir(op.make_attrs(name, {})) == want
