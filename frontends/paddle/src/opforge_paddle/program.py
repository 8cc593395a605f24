"""The in-memory program both readers produce, in Paddle's ProgramDesc vocabulary.

The legacy ``.pdmodel`` is a ProgramDesc already; the PIR ``.json`` is lowered into the same shape
(:mod:`opforge_paddle.pir`). Translators and user extensions therefore see one op vocabulary with
Paddle's named ports (``conv2d`` with ``Input``/``Filter`` -> ``Output``) whichever format the
model was saved in.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from opforge.element_type import Type

#: Paddle's VarType.Type numbers (framework.proto) -> opforge element types
VARTYPE_TO_TYPE: dict[int, Type] = {
    0: Type.boolean, 1: Type.i16, 2: Type.i32, 3: Type.i64, 4: Type.f16, 5: Type.f32, 6: Type.f64,
    20: Type.u8, 21: Type.i8, 22: Type.bf16, 36: Type.u16, 37: Type.u32, 38: Type.u64,
}
TYPE_TO_VARTYPE: dict[Type, int] = {v: k for k, v in VARTYPE_TO_TYPE.items()}

#: Paddle's dtype spellings in PIR attributes and type ids -> opforge element types
DTYPE_NAMES: dict[str, Type] = {
    "bool": Type.boolean, "int8": Type.i8, "uint8": Type.u8, "int16": Type.i16, "uint16": Type.u16,
    "int32": Type.i32, "uint32": Type.u32, "int64": Type.i64, "uint64": Type.u64, "float16": Type.f16,
    "bfloat16": Type.bf16, "float32": Type.f32, "float64": Type.f64,
    "b": Type.boolean, "i8": Type.i8, "ui8": Type.u8, "i16": Type.i16, "ui16": Type.u16, "i32": Type.i32,
    "ui32": Type.u32, "i64": Type.i64, "ui64": Type.u64, "f16": Type.f16, "bf16": Type.bf16,
    "f32": Type.f32, "f64": Type.f64,
}


@dataclasses.dataclass
class PaddleVar:
    """A variable: a tensor produced by an op, fed, or loaded from the parameters file."""

    name: str
    dtype: Type | None
    shape: list[int] | None  # -1 for an unknown dimension
    persistable: bool = False


@dataclasses.dataclass
class PaddleOp:
    """One op with Paddle's named ports: ``inputs["X"]`` is the list of variable names bound to X."""

    type: str
    inputs: dict[str, list[str]]
    outputs: dict[str, list[str]]
    attrs: dict[str, Any]
    index: int

    @property
    def name(self) -> str:
        """Paddle ops have no names; like OpenVINO, opforge names a node after its first output."""
        for vals in self.outputs.values():
            for v in vals:
                if v:
                    return v
        return f"{self.type}_{self.index}"


@dataclasses.dataclass
class PaddleProgram:
    label: str
    format: str  # "pir" or "legacy"
    ops: list[PaddleOp]
    vars: dict[str, PaddleVar]
    #: (variable name) of each model input, in feed order
    feeds: list[str]
    #: (variable name, output name) of each model output, in fetch order
    fetches: list[tuple[str, str]]
    #: persistable variables stored in the .pdiparams file, in file order (sorted by name)
    params: list[str]
