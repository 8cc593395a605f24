"""How tensors of each element type are stored on the device, and the OpenCL macros kernels use to
read and write them.

Kernels never name a concrete type: for each operand ``X`` the builder defines ``X_T`` (storage),
``X_CT`` (compute type), ``LOAD_X(p, i)`` and ``STORE_X(p, i, v)``. Half precision is stored as
``half`` and moved with ``vload_half``/``vstore_half``, which OpenCL guarantees even without
``cl_khr_fp16`` (NVIDIA's driver lacks it); arithmetic then runs in float, which is also more
accurate than half arithmetic.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from opforge.element_type import Type


@dataclasses.dataclass(frozen=True)
class Storage:
    """The device representation of one element type."""

    type: Type  # the element type the model sees
    ctype: str  # OpenCL storage type
    compute: str  # OpenCL type arithmetic runs in
    raw: str  # same-size type for bit copies
    np: np.dtype[Any]  # dtype of the host array uploaded/downloaded

    @property
    def itemsize(self) -> int:
        return int(self.np.itemsize)

    @property
    def is_half(self) -> bool:
        return self.ctype == "half"

    @property
    def is_float(self) -> bool:
        return self.compute in ("float", "double")

    def macros(self, name: str) -> dict[str, str]:
        """``#define``s for operand ``name`` (``X_T``, ``X_CT``, ``LOAD_X``, ``STORE_X``)."""
        d = {f"{name}_T": self.ctype, f"{name}_CT": self.compute}
        if self.is_half:
            d[f"LOAD_{name}(p, i)"] = "vload_half((i), (p))"
            d[f"STORE_{name}(p, i, v)"] = "vstore_half((float)(v), (i), (p))"
        elif self.type is Type.boolean:
            d[f"LOAD_{name}(p, i)"] = "((int)(p)[i])"
            d[f"STORE_{name}(p, i, v)"] = "((p)[i] = (uchar)((v) != 0))"
        else:
            d[f"LOAD_{name}(p, i)"] = f"(({self.compute})(p)[i])"
            d[f"STORE_{name}(p, i, v)"] = f"((p)[i] = ({self.ctype})(v))"
        return d


_TABLE: dict[Type, tuple[str, str, str]] = {
    Type.f32: ("float", "float", "uint"),
    Type.f16: ("half", "float", "ushort"),
    Type.i32: ("int", "int", "uint"),
    Type.i64: ("long", "long", "ulong"),
    Type.i8: ("char", "int", "uchar"),
    Type.u8: ("uchar", "int", "uchar"),
    Type.i16: ("short", "int", "ushort"),
    Type.u16: ("ushort", "int", "ushort"),
    Type.u32: ("uint", "uint", "uint"),
    Type.u64: ("ulong", "ulong", "ulong"),
    # double needs cl_khr_fp64 (NVIDIA, AMD, Intel discrete, PoCL have it); programs enable it
    Type.f64: ("double", "double", "ulong"),
    Type.boolean: ("uchar", "int", "uchar"),
}


def storage_for(t: Type, half_floats: bool = False) -> Storage | None:
    """The storage of element type ``t`` (None: the device cannot hold it). With
    ``half_floats`` (INFERENCE_PRECISION_HINT=f16), f32 tensors are kept in half precision."""
    if t is Type.f32 and half_floats:
        t_dev = Type.f16
    else:
        t_dev = t
    row = _TABLE.get(t_dev)
    if row is None:
        return None
    ctype, compute, raw = row
    return Storage(type=t, ctype=ctype, compute=compute, raw=raw, np=t_dev.np)


def supported_type(t: Type) -> bool:
    return t in _TABLE


def float_bits(v: float) -> int:
    """The int32 with the bits of float32 ``v`` (float parameters travel in int blocks)."""
    return int(np.array([v], dtype=np.float32).view(np.int32)[0])
