"""Reading ``.pdiparams``: the persistable variables of a program, concatenated.

Each tensor, in the order of the sorted variable names, is stored as::

    u32  version (0)
    u64  lod_level, then per level: u64 byte size + that many bytes of offsets
    u32  tensor version (0)
    i32  size of the TensorDesc that follows
    ...  TensorDesc protobuf (data_type, dims)
    ...  prod(dims) * itemsize bytes of little-endian data

Every length read from the file is checked against the bytes that remain before it is used
(OpenVINO's Paddle frontend over-read on exactly these fields: #14648, #23599), so a damaged file
raises :class:`~opforge.errors.ExternalDataError` naming the parameter and the byte offset.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence

import numpy as np
from google.protobuf.message import DecodeError
from opforge.element_type import Type
from opforge.errors import ExternalDataError, ModelFormatError

from opforge_paddle.program import VARTYPE_TO_TYPE, PaddleVar
from opforge_paddle.protoschema import schema

#: LoD levels are nesting depths of variable-length sequences; real files have 0-2. A larger
#: count in a parameters file means a damaged header, not a deeper tensor.
MAX_LOD_LEVEL = 8


class _Cursor:
    def __init__(self, data: memoryview, label: str) -> None:
        self.data = data
        self.pos = 0
        self.label = label
        self.param = ""

    @property
    def left(self) -> int:
        return len(self.data) - self.pos

    def fail(self, what: str, at: int | None = None) -> ExternalDataError:
        where = self.pos if at is None else at
        return ExternalDataError(
            f"{self.label}: parameter '{self.param}' at byte offset {where}: {what} "
            f"(file has {len(self.data)} bytes)"
        )

    def take(self, n: int, what: str) -> memoryview:
        if n < 0 or n > self.left:
            raise self.fail(f"{what} needs {n} bytes but only {self.left} remain; the file is truncated or damaged")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: str, what: str) -> int:
        size = struct.calcsize(fmt)
        return int(struct.unpack(fmt, self.take(size, what))[0])


def read_params(data: bytes | memoryview, names: Sequence[str], program_vars: Mapping[str, PaddleVar],
                label: str) -> dict[str, np.ndarray]:
    """Decode the tensors of ``names`` (file order) and check them against the program."""
    cur = _Cursor(memoryview(data), label)
    tensor_desc = schema().TensorDesc
    out: dict[str, np.ndarray] = {}
    for name in names:
        cur.param = name
        start = cur.pos
        if cur.left == 0:
            raise ModelFormatError(
                f"{label}: the parameters file ends after {len(out)} tensor(s) but the program has "
                f"{len(names)} persistable variables; first missing: '{name}' (expected at byte offset {start})"
            )
        version = cur.unpack("<I", "the tensor version")
        if version != 0:
            raise cur.fail(f"unknown tensor format version {version} (only 0 is defined)", start)
        lod_level = cur.unpack("<Q", "the LoD level count")
        if lod_level > MAX_LOD_LEVEL:
            raise cur.fail(f"LoD level count {lod_level} exceeds {MAX_LOD_LEVEL}; the header is damaged",
                           cur.pos - 8)
        for _ in range(lod_level):
            size = cur.unpack("<Q", "a LoD level size")
            cur.take(size, "LoD level data")
        dense_version = cur.unpack("<I", "the dense tensor version")
        if dense_version != 0:
            raise cur.fail(f"unknown dense tensor version {dense_version} (only 0 is defined)", cur.pos - 4)
        desc_size = cur.unpack("<i", "the tensor description size")
        desc_at = cur.pos
        raw_desc = cur.take(desc_size, "the tensor description")
        desc = tensor_desc()
        try:
            desc.ParseFromString(bytes(raw_desc))
        except DecodeError as err:
            raise cur.fail(f"the tensor description is not a valid TensorDesc: {err}", desc_at) from None
        etype = VARTYPE_TO_TYPE.get(int(desc.data_type))
        if etype is None or etype is Type.dynamic:
            raise cur.fail(f"unsupported data type {int(desc.data_type)} in the tensor description", desc_at)
        dims = [int(d) for d in desc.dims]
        if any(d < 0 for d in dims):
            raise cur.fail(f"negative dimension in shape {dims}", desc_at)
        numel = 1
        for d in dims:
            numel *= d  # Python ints: a forged shape cannot overflow into a small size
        nbytes = numel * etype.np.itemsize
        raw = cur.take(nbytes, f"tensor data of shape {dims} ({etype})")
        _check_against_program(name, etype, dims, program_vars.get(name), label)
        out[name] = np.frombuffer(raw, dtype=etype.np.newbyteorder("<"), count=numel).astype(
            etype.np, copy=True).reshape(dims)
    if cur.left:
        raise ModelFormatError(
            f"{label}: {cur.left} bytes remain after the {len(names)} tensor(s) of the program's persistable "
            f"variables (ending at byte offset {cur.pos}); the parameters file has more tensors than the program "
            "uses, or belongs to another model"
        )
    return out


def _check_against_program(name: str, etype: Type, dims: list[int], var: PaddleVar | None, label: str) -> None:
    if var is None:
        return
    if var.dtype is not None and var.dtype != etype:
        raise ModelFormatError(
            f"{label}: parameter '{name}' is stored as {etype} but the program declares {var.dtype}; "
            "the parameters file does not belong to this program"
        )
    if var.shape is not None and (len(var.shape) != len(dims) or any(
            p >= 0 and p != d for p, d in zip(var.shape, dims))):
        raise ModelFormatError(
            f"{label}: parameter '{name}' is stored with shape {dims} but the program declares {var.shape}; "
            "the parameters file does not belong to this program"
        )
