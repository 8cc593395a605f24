"""A placeholder for a framework op that no extension converts.

Converting with ``allow_unsupported=True`` keeps such ops as ``FrameworkNode`` nodes instead of
failing, so the rest of the model can be inspected (names, shapes up to the placeholder, which
ops are missing). Their outputs have dynamic type and shape; they cannot be evaluated or
compiled, and the error says which extension is missing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.element_type import Type
from opforge.errors import UnsupportedOpError
from opforge.op import InferContext, Op, OpAttrs, TensorSpec
from opforge.shape import PartialShape


class FrameworkNodeAttrs(OpAttrs):
    framework: str
    op_type: str
    domain: str = ""
    num_outputs: int = 1
    #: the framework attributes as decoded by the frontend, kept for inspection
    attributes: dict[str, Any] = {}


class FrameworkNode(Op):
    type_name = "FrameworkNode"
    version = "extension"
    Attrs = FrameworkNodeAttrs
    min_inputs = 0
    max_inputs = None

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: FrameworkNodeAttrs = ctx.attrs  # type: ignore[assignment]
        return [TensorSpec(Type.dynamic, PartialShape.dynamic()) for _ in range(max(a.num_outputs, 1))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        a: FrameworkNodeAttrs = attrs
        dom = f"{a.domain}::" if a.domain else ""
        raise UnsupportedOpError(
            f"{a.framework} op '{dom}{a.op_type}' was kept as a placeholder (allow_unsupported) and cannot "
            "run; convert again with an extension for it (OpExtension or ConversionExtension)"
        )

    @classmethod
    def attrs_to_ir(cls, attrs: OpAttrs) -> dict[str, str]:
        a: FrameworkNodeAttrs = attrs  # type: ignore[assignment]
        return {"framework": a.framework, "op_type": a.op_type, "domain": a.domain,
                "num_outputs": str(a.num_outputs)}
