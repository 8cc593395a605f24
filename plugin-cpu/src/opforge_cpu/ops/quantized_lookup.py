"""QuantizedLookup: each element of a u8/i8 tensor replaced by its entry in a 256-entry table
(input 1, a constant u8/i8 vector indexed by the element's byte). Made by
``opforge_cpu.passes.int8`` for DequantizeLinear -> element-wise chain (Sigmoid, HardSigmoid,
...) -> QuantizeLinear, whose result depends on the input byte alone: the table is that chain
evaluated once on the 256 values, so the node is exactly the QDQ graph. Run by
csrc/kernels/quantized_lookup.cpp, in the input's layout."""

from __future__ import annotations

from typing import Any

import numpy as np
from opforge.element_type import Type
from opforge.op import InferContext, TensorSpec

from opforge_cpu.ops._cpu_op import CpuOp
from opforge_cpu.ops._quantized import check_int8_input


class QuantizedLookup(CpuOp):
    type_name = "QuantizedLookup"
    min_inputs = 2
    max_inputs = 2

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        check_int8_input(ctx, 0)
        table = ctx.input_shape(1)
        if ctx.input_type(1) not in (Type.u8, Type.i8) or table.rank != 1 or table.dims[0] != 256:
            raise ctx.error(f"input 1 (the table) is {ctx.input_type(1).ir} {table}, expected u8 or i8 [256]")
        return [TensorSpec(ctx.input_type(1), ctx.input_shape(0))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        x, table = np.asarray(inputs[0]), np.asarray(inputs[1])
        return [table[x.view(np.uint8)]]
