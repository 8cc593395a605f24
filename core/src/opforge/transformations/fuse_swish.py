"""SiLU fusion: ``Multiply(x, Sigmoid(x))`` (either operand order) becomes one ``Swish`` (beta 1).

This is how PyTorch's ``nn.SiLU`` and the EfficientNet/YOLO exporters write the activation. Left
as two nodes, a device runs a standalone Sigmoid, keeps its result alive, and runs a Multiply that
reads two tensors; on the CPU that also costs a reorder from the convolution's blocked layout to
a plain one for each of them. ``Swish`` is one element-wise op that a device can run in place or
apply as an epilogue of the convolution before it (oneDNN's ``eltwise_swish``).

Only the Multiply is replaced: a Sigmoid that other nodes also read stays for them (its value is
unchanged), and the graph's dead-code pass removes it when the Multiply was its only reader.
``x`` must be a floating-point tensor (f32, f16, bf16, f64: the types both ops accept), and the
Sigmoid must read the very same port as the Multiply: ``Sigmoid(y) * x`` is not SiLU.
"""

from __future__ import annotations

from typing import ClassVar

from opforge.element_type import Type
from opforge.graph import Model, Node
from opforge.opset.multiply import Multiply
from opforge.opset.sigmoid import Sigmoid
from opforge.opset.swish import Swish
from opforge.transformations import pattern as p
from opforge.transformations.pattern import Match, MatcherPass, PatternNode

#: the element types Sigmoid and Swish are both defined for
FLOAT_TYPES = (Type.f32, Type.f16, Type.bf16, Type.f64)


class FuseSwish(MatcherPass):
    """``Multiply(x, Sigmoid(x))`` or ``Multiply(Sigmoid(x), x)`` -> ``Swish(x)``."""

    name: ClassVar[str] = "fuse_swish"
    stage: ClassVar[str] = "middle"
    order: ClassVar[int] = 60

    def pattern(self) -> PatternNode:
        # One pattern node object used twice: the Sigmoid and the Multiply read the same port.
        x = p.capture("x", p.any_input(predicate=p.element_type_is(*FLOAT_TYPES)))
        sigmoid = p.capture("sigmoid", p.op(Sigmoid, x))
        # x and Sigmoid(x) have one shape, so every broadcast mode (numpy, pdpd, none) multiplies
        # them element by element: the order of the operands does not matter.
        return p.op(Multiply, x, sigmoid, commutative=True)

    def callback(self, match: Match, model: Model) -> bool:
        mul = match.root.node
        if not (mul.op.is_standard and match.node("sigmoid").op.is_standard):
            return False  # a plugin's op that subclasses Multiply/Sigmoid may mean something else
        swish = Node.create(Swish, [match["x"]], name=mul.name)
        swish.rt_info.update(mul.rt_info)
        match.replace_root(swish)
        return True

