"""The translator package keeps one Paddle op per module, with derived registries (translators
and PIR signatures)."""

from __future__ import annotations

import sys
import types

import pytest
from opforge.frontend.extensions import ConversionExtension, ConversionResult
from opforge.frontend.node_context import NodeContext
from opforge_paddle import ops
from opforge_paddle.ops import (
    TranslatorLayoutError,
    all_translators,
    module_matches,
    module_pir_ops,
    pir_table,
    translator_modules,
)
from opforge_paddle.pir_signatures import unary


def _convert(ctx: NodeContext) -> ConversionResult:
    return []


def test_every_module_holds_exactly_its_op() -> None:
    names = translator_modules()
    assert len(all_translators()) == len(names)
    for name in names:
        ext = ops.module_translator(name)
        assert module_matches(name, ext.op_type), (name, ext.op_type)
        assert ext.framework == "paddle"
        for p in module_pir_ops(name):
            assert p.legacy == ext.op_type


def test_every_pir_signature_lowers_to_a_translated_op() -> None:
    translated = {e.op_type for e in all_translators()}
    assert {p.legacy for p in pir_table().values()} <= translated


@pytest.mark.parametrize(("module", "op", "ok"), [
    ("conv2d", "conv2d", True), ("where", "where", True), ("range_", "range", True),
    ("elementwise_add", "elementwise_sub", False), ("conv2d", "depthwise_conv2d", False),
])
def test_module_names_follow_the_op(module: str, op: str, ok: bool) -> None:
    assert module_matches(module, op) is ok


def _fake(monkeypatch: pytest.MonkeyPatch, name: str, **attrs: object) -> None:
    fake = types.ModuleType(f"opforge_paddle.ops.{name}")
    for k, v in attrs.items():
        setattr(fake, k, v)
    monkeypatch.setitem(sys.modules, fake.__name__, fake)


def test_a_module_with_two_translators_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake(monkeypatch, "fake_pair", TRANSLATORS=[ConversionExtension("fake_pair", _convert, framework="paddle"),
                                                 ConversionExtension("other", _convert, framework="paddle")])
    with pytest.raises(TranslatorLayoutError, match="exactly one translator"):
        ops.module_translator("fake_pair")


def test_a_module_named_after_another_op_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake(monkeypatch, "fake_single", EXTENSION=ConversionExtension("something_else", _convert, framework="paddle"))
    with pytest.raises(TranslatorLayoutError, match="must be named after"):
        ops.module_translator("fake_single")


def test_a_pir_signature_for_another_op_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake(monkeypatch, "fake_op", EXTENSION=ConversionExtension("fake_op", _convert, framework="paddle"),
          PIR=[unary("fake_op"), unary("other", "other_op")])
    with pytest.raises(TranslatorLayoutError, match="lowers to 'other_op'"):
        module_pir_ops("fake_op")
