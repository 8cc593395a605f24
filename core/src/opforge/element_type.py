"""Element types of tensors and their names in NumPy, OpenVINO IR and error messages."""

from __future__ import annotations

import enum
from typing import Any

import ml_dtypes
import numpy as np

from opforge.errors import ModelValidationError


class Type(enum.Enum):
    """An element type. ``Type.f32.np`` is the NumPy dtype, ``Type.f32.ir`` its IR name."""

    boolean = "boolean"
    f16 = "f16"
    bf16 = "bf16"
    f32 = "f32"
    f64 = "f64"
    i8 = "i8"
    i16 = "i16"
    i32 = "i32"
    i64 = "i64"
    u8 = "u8"
    u16 = "u16"
    u32 = "u32"
    u64 = "u64"
    # A port whose type is not known yet (a placeholder node, a partially converted model).
    dynamic = "dynamic"

    @property
    def ir(self) -> str:
        """The name OpenVINO IR uses in ``element_type`` attributes."""
        return self.value

    @property
    def np(self) -> np.dtype[Any]:
        """The NumPy dtype; raises for ``dynamic``."""
        if self is Type.dynamic:
            raise ModelValidationError("element type 'dynamic' has no NumPy dtype")
        return _TO_NUMPY[self]

    @property
    def is_float(self) -> bool:
        return self in (Type.f16, Type.bf16, Type.f32, Type.f64)

    @property
    def is_integral(self) -> bool:
        return self.value[0] in "iu"

    @property
    def is_signed(self) -> bool:
        return self.is_float or self.value.startswith("i")

    @property
    def bitwidth(self) -> int:
        if self is Type.boolean:
            return 8
        return int(self.np.itemsize * 8)

    def __str__(self) -> str:
        # Errors show the canonical NumPy name ("float32"), which everybody recognises.
        return "dynamic" if self is Type.dynamic else str(self.np)

    @classmethod
    def from_numpy(cls, dtype: Any) -> Type:
        """The element type of a NumPy dtype (or anything ``np.dtype`` accepts)."""
        dt = np.dtype(dtype)
        try:
            return _FROM_NUMPY[dt]
        except KeyError:
            raise ModelValidationError(
                f"NumPy dtype {dt} has no opforge element type; supported: "
                + ", ".join(sorted(str(d) for d in _FROM_NUMPY))
            ) from None

    @classmethod
    def parse(cls, name: str | Type | Any) -> Type:
        """Accept an IR name (``f32``), an IR precision (``FP32``), a NumPy name or dtype."""
        if isinstance(name, Type):
            return name
        if isinstance(name, str):
            key = name.strip()
            if key in cls.__members__:
                return cls[key]
            if key.upper() in _IR_PRECISIONS:
                return _IR_PRECISIONS[key.upper()]
            if key.lower() in ("bool", "boolean"):
                return Type.boolean
        try:
            return cls.from_numpy(name)
        except (TypeError, ModelValidationError):
            raise ModelValidationError(
                f"unknown element type {name!r}; expected one of: "
                + ", ".join(t.value for t in Type)
            ) from None


_TO_NUMPY: dict[Type, np.dtype[Any]] = {
    Type.boolean: np.dtype(np.bool_),
    Type.f16: np.dtype(np.float16),
    Type.bf16: np.dtype(ml_dtypes.bfloat16),
    Type.f32: np.dtype(np.float32),
    Type.f64: np.dtype(np.float64),
    Type.i8: np.dtype(np.int8),
    Type.i16: np.dtype(np.int16),
    Type.i32: np.dtype(np.int32),
    Type.i64: np.dtype(np.int64),
    Type.u8: np.dtype(np.uint8),
    Type.u16: np.dtype(np.uint16),
    Type.u32: np.dtype(np.uint32),
    Type.u64: np.dtype(np.uint64),
}
_FROM_NUMPY: dict[np.dtype[Any], Type] = {v: k for k, v in _TO_NUMPY.items()}

# Port precisions as older IR files (and OpenVINO's port elements) spell them.
_IR_PRECISIONS: dict[str, Type] = {
    "FP32": Type.f32, "FP16": Type.f16, "BF16": Type.bf16, "FP64": Type.f64,
    "I8": Type.i8, "I16": Type.i16, "I32": Type.i32, "I64": Type.i64,
    "U8": Type.u8, "U16": Type.u16, "U32": Type.u32, "U64": Type.u64,
    "BOOL": Type.boolean, "BOOLEAN": Type.boolean, "DYNAMIC": Type.dynamic, "UNSPECIFIED": Type.dynamic,
}

PRECISION_NAMES: dict[Type, str] = {v: k for k, v in reversed(list(_IR_PRECISIONS.items()))}
