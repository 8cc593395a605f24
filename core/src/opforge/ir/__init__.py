"""OpenVINO IR (v10/v11 ``.xml`` + ``.bin``): :func:`save_model` writes it, :func:`read_ir` reads it."""

from opforge.ir.reader import read_ir
from opforge.ir.writer import IR_VERSION, save_model, serialize

__all__ = ["IR_VERSION", "read_ir", "save_model", "serialize"]
