"""The NodeContext Paddle translators and extensions get: named inputs *and* named outputs.

The core :class:`~opforge.frontend.NodeContext` already answers ``get_input("X")``,
``get_input("X", i)`` and ``get_input_size("X")``. Paddle ops also have named outputs, several
of which may hold a list of variables (``split``'s ``Out``); this subclass adds what a
conversion function needs to build them: ``get_output_names()``, ``get_output_size("Out")``,
``has_output("XShape")`` and the Paddle variable names behind each port.
"""

from __future__ import annotations

from typing import Any

from opforge.frontend.node_context import NodeContext
from opforge.graph import Output

from opforge_paddle.program import PaddleOp

FRAMEWORK = "paddle"


class PaddleNodeContext(NodeContext):
    def __init__(self, op: PaddleOp, named_inputs: dict[str, list[Output | None]], builder: Any,
                 source: str, model_format: str) -> None:
        flat = [v for vals in named_inputs.values() for v in vals]
        super().__init__(
            framework=FRAMEWORK, op_type=op.type, domain="", name=op.name, inputs=flat,
            attributes=op.attrs, builder=builder, named_inputs=named_inputs,
            output_names=list(op.outputs), source=source,
            extra={"paddle_op": op, "format": model_format},
        )
        self.paddle_op = op

    @property
    def label(self) -> str:
        """``node 'conv2d_0.tmp_0' (paddle conv2d) in model.pdmodel``: Paddle has no op domains."""
        where = f" in {self.source}" if self.source else ""
        return f"node '{self.name}' (paddle {self.op_type}){where}"

    # --- named inputs: the variable names, for messages -------------------------------------
    def get_input_var_names(self, name: str) -> list[str]:
        return list(self.paddle_op.inputs.get(name, []))

    # --- named outputs ---------------------------------------------------------------------------
    def get_output_names(self) -> list[str]:
        """The op's output ports (``["Out", "XShape"]``), in the order the model lists them."""
        return list(self.paddle_op.outputs)

    def get_output_size(self, name: str | None = None) -> int:  # type: ignore[override]
        """Number of output ports; or of variables bound to output port ``name`` (0 if absent)."""
        if name is None:
            return len(self.paddle_op.outputs)
        return len(self.paddle_op.outputs.get(name, []))

    def has_output(self, name: str) -> bool:
        """Whether the model binds a variable to output port ``name``."""
        return any(self.paddle_op.outputs.get(name, []))

    def get_output_var_names(self, name: str) -> list[str]:
        return list(self.paddle_op.outputs.get(name, []))
