"""The facts op classes declare (``value_inputs``, ``data_dependent_shape``, ``rearranges_input``,
``cost_class``, ``is_standard``) agree with what the ops do: checked on every case of the op-level
catalogue (``opforge.testing.cases``, which covers every standard op)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np
import pytest
from opforge.errors import OpforgeError
from opforge.op import STRUCTURAL, CostClass, InferContext, Op
from opforge.opset import all_ops
from opforge.testing.cases import OpCase, all_cases
from opforge.testing.models import build, input_values, seed_of

CASES = [c for c in all_cases() if not c.dynamic]


def _ids(cases: list[OpCase]) -> list[str]:
    return [c.id for c in cases]


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[set[tuple[type[Op], int]]]:
    """(op class, port) of every input value shape inference asks for."""
    seen: set[tuple[type[Op], int]] = set()
    original = InferContext.input_value

    def recording(self: InferContext, i: int) -> np.ndarray | None:
        seen.add((self.op, i))
        return original(self, i)

    monkeypatch.setattr(InferContext, "input_value", recording)
    yield seen


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_inference_reads_only_declared_value_inputs(case: OpCase, reads: set[tuple[type[Op], int]]) -> None:
    """Every input whose constant value shape inference reads is a declared value input (a
    data-dependent op may read its data: a constant input decides its shape at build time)."""
    op = case.op_class()
    build(op, [dataclasses.replace(i, const=True) for i in case.inputs], case.attrs)
    read = {i for o, i in reads if o is op}
    if not op.data_dependent_shape:
        assert read <= set(op.value_inputs), (
            f"{op.type_name}-{op.version}: inference reads the values of inputs {sorted(read)}, "
            f"but value_inputs = {op.value_inputs}")


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_value_inputs_decide_every_shape(case: OpCase) -> None:
    """With its value inputs constant and every other input a (static) Parameter, an op's
    outputs are static unless its shapes depend on the data: a port that decides a shape but is
    not declared makes this fail (its output turns dynamic)."""
    op = case.op_class()
    inputs = [dataclasses.replace(inp, const=inp.const or i in op.value_inputs) for i, inp in enumerate(case.inputs)]
    if any(i in op.value_inputs and not c.const for i, c in enumerate(case.inputs)):
        pytest.skip("the case feeds a value input at run time on purpose")
    model, _ = build(op, inputs, case.attrs)
    node = model.results[0].inputs[0].node
    static = all(s.shape.is_static for s in node.output_specs)
    if op.data_dependent_shape:
        assert not static or all(inp.const for inp in case.inputs), (
            f"{op.type_name}: declared data_dependent_shape, but its outputs are static: {node.output_specs}")
    else:
        assert static, (f"{op.type_name}-{op.version}: outputs {[str(s.shape) for s in node.output_specs]} "
                        f"are dynamic with value_inputs {op.value_inputs} constant")


REARRANGING = [c for c in CASES if c.op_class().rearranges_input]


@pytest.mark.parametrize("case", REARRANGING, ids=_ids(REARRANGING))
def test_rearranging_ops_only_move_input_0(case: OpCase) -> None:
    """Evaluated on element indices (plus one, so that 0 stands for padding), a rearranging op
    outputs indices of its input 0: every output element is one of its input's (or the pad)."""
    op = case.op_class()
    values = input_values(case.inputs, seed_of(case.id))
    n = int(np.prod(values[0].shape, dtype=np.int64))
    idx = (np.arange(n, dtype=np.int64) + 1).reshape(values[0].shape)
    rest = values[1:]
    if op.type_name == "Pad" and len(rest) > 2:
        rest = [*rest[:2], np.zeros((), np.int64)]
    attrs = op.make_attrs("node", dict(case.attrs))
    try:
        out = op.evaluate(attrs, [idx, *rest])[0]
    except (OpforgeError, TypeError, ValueError):
        pytest.skip(f"{op.type_name} refuses int64 data")
    assert set(np.unique(out).tolist()) <= set(range(n + 1))


def test_standard_is_derived_from_the_opset_package() -> None:
    assert all(op.is_standard for op in all_ops())

    class Relu(Op):  # a plugin's op of a standard name and an opset-like version
        type_name = "Relu"
        version = "opset1"

    assert not Relu.is_standard


def test_declared_ports_exist_and_structure_costs_nothing() -> None:
    for op in all_ops():
        most = op.max_inputs if op.max_inputs is not None else 1 << 16
        assert all(0 <= i < most for i in (*op.value_inputs, *op.scalar_inputs)), op
        if op.type_name in STRUCTURAL:
            assert op.cost_class is CostClass.STRUCTURAL, op
    assert {o.type_name for o in all_ops()} >= STRUCTURAL
