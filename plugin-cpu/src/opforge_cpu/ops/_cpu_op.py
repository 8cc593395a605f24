"""What the CPU device's own ops declare alike: their version and the ``cpu_internal`` mark that
hands them to the C++ kernel of their type name (``emit_cpu_op``), and for the ops that
concatenate their inputs (ShuffleChannels, QuantizedConcat) the input count and cost class."""

from __future__ import annotations

from typing import ClassVar

from opforge.op import CostClass, Op


class CpuOp(Op):
    """Base of the ops in ``opforge_cpu.ops``: made by the CPU's graph passes, run by its kernels."""

    version = "opforge_cpu"
    #: run by the CPU device's C++ kernel of this type name (see ``opforge_cpu.ops``)
    cpu_internal: ClassVar[bool] = True


class ConcatenatingOp(CpuOp):
    """An op over one or more inputs whose elements it moves into its outputs (a concatenation)."""

    cost_class = CostClass.MOVEMENT
    min_inputs = 1
    max_inputs = None
