"""The C++ program refuses a step that reads a tensor no earlier step writes (and that is no model
input or constant) when it is built, instead of running it on unplanned memory: a lowering bug
of that kind (a Transpose both written by one MatMul and folded into the next) was a segfault."""

from __future__ import annotations

import pytest
from opforge import Type
from opforge_cpu._loader import load_core


def test_a_step_reading_an_unwritten_tensor_is_refused_when_the_program_is_built() -> None:
    core = load_core()
    prog = core.Program()
    x = prog.add_tensor(Type.f32.ir, [4], None)
    orphan = prog.add_tensor(Type.f32.ir, [4], None)
    y = prog.add_tensor(Type.f32.ir, [4], None)
    prog.add_node("r", "Relu", "opset1", {}, [orphan], [y], [])
    prog.set_io([x], [y])
    with pytest.raises(RuntimeError, match=r"node 'r' \(Relu\): reads tensor #1, which no earlier step writes"):
        prog.finalize(1, False)


def test_inputs_constants_and_earlier_outputs_are_readable() -> None:
    import numpy as np

    core = load_core()
    prog = core.Program()
    x = prog.add_tensor(Type.f32.ir, [4], None)
    c = prog.add_tensor(Type.f32.ir, [4], np.full(4, -1.0, np.float32))
    s = prog.add_tensor(Type.f32.ir, [4], None)
    y = prog.add_tensor(Type.f32.ir, [4], None)
    prog.add_node("add", "Add", "opset1", {}, [x, c], [s], [])
    prog.add_node("relu", "Relu", "opset1", {}, [s], [y], [])
    prog.set_io([x], [y])
    prog.finalize(1, False)
