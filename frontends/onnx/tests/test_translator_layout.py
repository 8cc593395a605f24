"""The translator package keeps one ONNX op per module, with a derived registry."""

from __future__ import annotations

import types

import pytest
from opforge.frontend.extensions import ConversionExtension, ConversionResult
from opforge.frontend.node_context import NodeContext
from opforge_onnx import ops
from opforge_onnx.ops import TranslatorLayoutError, all_translators, module_matches, translator_modules


def test_every_module_holds_exactly_its_op() -> None:
    names = translator_modules()
    found = all_translators()
    assert len(found) == len(names)
    for name in names:
        ext = ops.module_translator(name)
        assert module_matches(name, ext.op_type), (name, ext.op_type)


@pytest.mark.parametrize(("module", "op", "ok"), [
    ("is_nan", "IsNaN", True), ("not_", "Not", True), ("q_linear_mat_mul", "QLinearMatMul", True),
    ("reduce_l2", "ReduceL2", True), ("softmax", "LogSoftmax", False), ("arg_max", "ArgMin", False),
])
def test_module_names_follow_the_op(module: str, op: str, ok: bool) -> None:
    assert module_matches(module, op) is ok


def test_a_module_with_two_translators_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.ModuleType("opforge_onnx.ops.fake_pair")

    def convert(ctx: NodeContext) -> ConversionResult:
        return []

    fake.EXTENSIONS = [ConversionExtension("FakePair", convert), ConversionExtension("Other", convert)]  # type: ignore[attr-defined]
    monkeypatch.setitem(__import__("sys").modules, "opforge_onnx.ops.fake_pair", fake)
    with pytest.raises(TranslatorLayoutError, match="exactly one translator"):
        ops.module_translator("fake_pair")


def test_a_module_named_after_another_op_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.ModuleType("opforge_onnx.ops.fake_single")

    def convert(ctx: NodeContext) -> ConversionResult:
        return []

    fake.EXTENSION = ConversionExtension("SomethingElse", convert)  # type: ignore[attr-defined]
    monkeypatch.setitem(__import__("sys").modules, "opforge_onnx.ops.fake_single", fake)
    with pytest.raises(TranslatorLayoutError, match="must be named after"):
        ops.module_translator("fake_single")
