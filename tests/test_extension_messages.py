"""The silent mistakes of a custom-op mapping become messages: framework attributes an
``OpExtension`` does not map (ONNX ``low``/``high`` for an op whose attributes are ``lo``/``hi``)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from opforge import InferContext, Op, OpAttrs, TensorSpec
from opforge.errors import ExtensionError
from opforge.frontend.convert import convert_model
from opforge.frontend.extensions import OpExtension, UnmappedAttributeWarning
from opforge.reference import evaluate_model

onnx = pytest.importorskip("onnx")


class SoftClipAttrs(OpAttrs):
    lo: float = -1.0
    hi: float = 1.0


class SoftClip(Op):
    type_name = "SoftClip"
    version = "acme_test"
    Attrs = SoftClipAttrs

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        return [TensorSpec(ctx.input_type(0), ctx.input_shape(0))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        return [np.clip(inputs[0], attrs.lo, attrs.hi)]


@pytest.fixture
def softclip_onnx(tmp_path: Path) -> Path:
    from onnx import TensorProto, helper

    node = helper.make_node("SoftClip", ["x"], ["y"], domain="com.acme", low=-0.5, high=0.5)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    path = tmp_path / "softclip.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.acme", 1)]),
              path)
    return path


X = np.array([-2.0, -0.25, 0.25, 2.0], np.float32)


def test_unmapped_framework_attributes_warn_with_the_likely_target(softclip_onnx: Path) -> None:
    ext = OpExtension(SoftClip, "SoftClip", domain="com.acme")
    with pytest.warns(UnmappedAttributeWarning) as record:
        model = convert_model(softclip_onnx, extension=ext)
    msg = str(record[0].message)
    assert "'high' (-> 'hi'?), 'low' (-> 'lo'?) that no attribute of 'SoftClip' reads (lo, hi)" in msg
    assert "attr_names_map={'hi': 'high', 'lo': 'low'}" in msg and "softclip.onnx" in msg
    # what the warning is about: the defaults were used
    np.testing.assert_array_equal(evaluate_model(model, [X])[0], np.clip(X, -1, 1))


def test_strict_mode_makes_it_an_error(softclip_onnx: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ExtensionError, match=r"'low' \(-> 'lo'\?\)"):
        convert_model(softclip_onnx, extension=OpExtension(SoftClip, "SoftClip", domain="com.acme", strict=True))
    monkeypatch.setenv("OPFORGE_STRICT_EXTENSIONS", "1")
    with pytest.raises(ExtensionError, match="ignore_attributes=\\['high', 'low'\\]"):
        convert_model(softclip_onnx, extension=OpExtension(SoftClip, "SoftClip", domain="com.acme"))


def test_mapped_or_ignored_attributes_are_quiet(softclip_onnx: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = convert_model(softclip_onnx, extension=OpExtension(
            SoftClip, "SoftClip", {"lo": "low", "hi": "high"}, domain="com.acme", strict=True))
        np.testing.assert_array_equal(evaluate_model(model, [X])[0], np.clip(X, -0.5, 0.5))
        convert_model(softclip_onnx, extension=OpExtension(
            SoftClip, "SoftClip", domain="com.acme", ignore_attributes=["low", "high"], strict=True))
