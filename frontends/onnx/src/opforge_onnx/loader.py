"""Reading ONNX bytes safely: the ModelProto, tensors and external data.

Untrusted model files are the norm, so every check happens before any allocation or file access
it guards: tensor sizes are compared with the bytes that hold them, and external data paths
must stay inside the model's folder (no ``..``, no absolute paths, no symlinks, no hard links,
regular files only; offsets and lengths inside the file). See CVE-2022-25882, CVE-2024-27318.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import TensorProto, numpy_helper
from opforge.element_type import Type
from opforge.errors import ExternalDataError, ModelFormatError, ResourceLimitError, UnsupportedOpError
from opforge.frontend.base import ModelSource
from opforge.limits import Limits, current
from opforge.model_files import check_regular, note_read, read_regular

#: ONNX element types opforge has a counterpart for.
ONNX_TO_TYPE: dict[int, Type] = {
    TensorProto.FLOAT: Type.f32, TensorProto.UINT8: Type.u8, TensorProto.INT8: Type.i8,
    TensorProto.UINT16: Type.u16, TensorProto.INT16: Type.i16, TensorProto.INT32: Type.i32,
    TensorProto.INT64: Type.i64, TensorProto.BOOL: Type.boolean, TensorProto.FLOAT16: Type.f16,
    TensorProto.DOUBLE: Type.f64, TensorProto.UINT32: Type.u32, TensorProto.UINT64: Type.u64,
    TensorProto.BFLOAT16: Type.bf16,
}
TYPE_TO_ONNX: dict[Type, int] = {v: k for k, v in ONNX_TO_TYPE.items()}

#: protobuf refuses messages over 2 GiB; larger models must keep weights as external data
MAX_MODEL_BYTES = 2**31


def onnx_type_name(code: int) -> str:
    try:
        return str(TensorProto.DataType.Name(code))
    except ValueError:
        return f"<unknown element type {code}>"


def decode_type(code: Any, what: str = "") -> Type:
    """The opforge element type of an ONNX ``TensorProto.DataType`` code."""
    try:
        return ONNX_TO_TYPE[int(code)]
    except (KeyError, TypeError, ValueError):
        raise UnsupportedOpError(
            f"{what + ': ' if what else ''}ONNX element type {onnx_type_name(int(code))} is not supported by "
            f"opforge (supported: {', '.join(onnx_type_name(c) for c in ONNX_TO_TYPE)})"
        ) from None


def parse_model(source: ModelSource) -> onnx.ModelProto:
    """The ModelProto of a file or bytes, or a ModelFormatError naming the file."""
    label = source.label
    if source.data is not None:
        data = source.data
    elif source.path is not None:
        # A FIFO or device named *.onnx is refused, never opened for a blocking read.
        st = check_regular(source.path)
        if st.st_size > MAX_MODEL_BYTES:
            raise ModelFormatError(
                f"{label}: not a valid ONNX ModelProto: {st.st_size} bytes exceed protobuf's 2 GiB limit; "
                "store the weights as external data"
            )
        data = read_regular(source.path)
    else:
        raise ModelFormatError("no model given: pass a path or bytes")
    if not data:
        raise ModelFormatError(f"{label}: not a valid ONNX ModelProto (the file is empty)")
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as err:
        raise ModelFormatError(
            f"{label}: not a valid ONNX ModelProto ({err or 'protobuf could not decode it'}; "
            f"{len(data)} bytes, starting {data[:8]!r})"
        ) from None
    # Protobuf decodes many random byte strings without complaint; a real model has these.
    if model.ir_version <= 0 or not model.HasField("graph"):
        raise ModelFormatError(
            f"{label}: not a valid ONNX ModelProto (no ir_version or no graph; {len(data)} bytes, "
            f"starting {data[:8]!r})"
        )
    if model.ir_version > onnx.IR_VERSION:
        raise ModelFormatError(
            f"{label}: ONNX IR version {model.ir_version} is newer than this onnx package supports "
            f"({onnx.IR_VERSION}); upgrade onnx and opforge-onnx"
        )
    return model


#: the keys ONNX defines for ``TensorProto.external_data`` (onnx.external_data_helper.ExternalDataInfo)
EXTERNAL_DATA_KEYS = ("location", "offset", "length", "checksum", "basepath")


class TensorReader:
    """Decodes TensorProtos of one model, checking every declared size against the limits
    (:mod:`opforge.limits`) before allocating, and reading only the bytes of each tensor from
    external data files (never a whole file: it may be far larger than memory)."""

    def __init__(self, label: str, base_dir: Path | None, limits: Limits | None = None) -> None:
        self.label = label
        self.base_dir = base_dir
        self.limits = limits if limits is not None else current()
        #: bytes of tensor data decoded so far, checked against MAX_WEIGHTS_BYTES
        self.total_bytes = 0

    def to_array(self, t: TensorProto, what: str = "") -> np.ndarray:
        name = t.name or what or "<unnamed>"
        where = f"{self.label}: tensor '{name}'"
        et = decode_type(t.data_type, where)
        dims = list(t.dims)
        if any(d < 0 for d in dims):
            raise ModelFormatError(f"{where}: negative dimension in shape {dims}")
        itemsize = et.np.itemsize
        # Rank, dimensions and bytes are checked with Python ints before NumPy sees the shape.
        count = self.limits.check_shape(dims, itemsize, where)
        nbytes = count * itemsize
        self.total_bytes += nbytes
        self.limits.check_bytes("MAX_WEIGHTS_BYTES", self.total_bytes,
                                f"{where}: the weights read so far with this tensor")
        try:
            return self._decode(t, et, dims, count, nbytes, name, where)
        except MemoryError:
            raise ResourceLimitError(
                f"{where}: not enough memory for its {nbytes} bytes (shape {dims}); "
                "free memory or lower the model's size"
            ) from None

    def _decode(self, t: TensorProto, et: Type, dims: list[int], count: int, nbytes: int, name: str,
                where: str) -> np.ndarray:
        if t.data_location == TensorProto.EXTERNAL:
            raw = self._external(t, name, nbytes)
            return np.frombuffer(raw, dtype=et.np.newbyteorder("<")).astype(et.np).reshape(dims)
        if t.HasField("raw_data"):
            if len(t.raw_data) != nbytes:
                raise ModelFormatError(
                    f"{where}: raw_data holds {len(t.raw_data)} bytes, but shape {dims} of "
                    f"{onnx_type_name(t.data_type)} needs {nbytes}"
                )
            return np.frombuffer(t.raw_data, dtype=et.np.newbyteorder("<")).astype(et.np).reshape(dims)
        try:
            arr = numpy_helper.to_array(t)
        except (ValueError, TypeError) as err:
            raise ModelFormatError(f"{where}: cannot decode its values: {err}") from None
        if arr.size != count:
            raise ModelFormatError(f"{where}: holds {arr.size} values, but shape {dims} needs {count}")
        # np.asarray(order="C"), not ascontiguousarray: the latter turns 0-d scalars into 1-d arrays
        return np.asarray(arr.astype(et.np, copy=False).reshape(dims), order="C")

    # --- external data -------------------------------------------------------------------------
    def _external(self, t: TensorProto, name: str, nbytes: int) -> bytes:
        where = f"{self.label}: tensor '{name}'"
        info: dict[str, str] = {}
        for e in t.external_data:
            if e.key not in EXTERNAL_DATA_KEYS:
                raise ExternalDataError(
                    f"{where}: unknown external_data key {e.key[:64]!r}; ONNX defines "
                    f"{', '.join(EXTERNAL_DATA_KEYS)}"
                )
            if e.key in info:
                raise ExternalDataError(
                    f"{where}: external_data key '{e.key}' is given twice ({info[e.key][:64]!r} and "
                    f"{e.value[:64]!r}); refusing to guess which one is meant"
                )
            info[e.key] = e.value
        loc = info.get("location", "")
        if self.base_dir is None:
            raise ExternalDataError(
                f"{where} keeps its data in external file '{loc}', but the model was given as bytes, so "
                "there is no folder to read it from; pass the model's path instead"
            )
        if not loc or "\x00" in loc:
            raise ExternalDataError(f"{where}: external data has no valid 'location' ({loc!r})")
        if os.path.isabs(loc) or loc.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", loc):
            raise ExternalDataError(
                f"{where}: external data path '{loc}' is absolute; it must be relative to the model's "
                f"folder '{self.base_dir}'"
            )
        parts = [p for p in re.split(r"[\\/]+", loc) if p not in ("", ".")]
        if ".." in parts or not parts:
            raise ExternalDataError(f"{where}: external data path '{loc}' escapes the model's folder '{self.base_dir}'")
        # Walk each component with lstat: a symlink anywhere could point out of the folder.
        cur = self.base_dir
        st: os.stat_result | None = None
        for p in parts:
            cur = cur / p
            try:
                st = os.lstat(cur)
            except OSError as err:
                raise ExternalDataError(f"{where}: external data file '{loc}' cannot be opened: {err.strerror}") from None
            if stat.S_ISLNK(st.st_mode):
                raise ExternalDataError(
                    f"{where}: external data path '{loc}' goes through a symlink ('{cur}'); symlinks are "
                    "refused because they can point out of the model's folder"
                )
        if st is None or not stat.S_ISREG(st.st_mode):
            raise ExternalDataError(f"{where}: external data path '{loc}' is not a regular file")
        if st.st_nlink > 1:
            raise ExternalDataError(
                f"{where}: external data file '{loc}' is a hard link ({st.st_nlink} links); refused because "
                "it may alias a file outside the model's folder"
            )
        try:
            base_real = os.path.realpath(self.base_dir)
            if os.path.commonpath([base_real, os.path.realpath(cur)]) != base_real:
                raise ExternalDataError(f"{where}: external data path '{loc}' escapes the model's folder")
        except ValueError:
            raise ExternalDataError(f"{where}: external data path '{loc}' escapes the model's folder") from None
        offset = self._int_field(info, "offset", 0, where)
        length = self._int_field(info, "length", None, where)
        size = st.st_size
        if length is None:
            length = nbytes
        if offset > size or length > size - offset:
            raise ExternalDataError(
                f"{where}: external data offset={offset}, length={length} exceed file '{loc}' ({size} bytes)"
            )
        if length != nbytes:
            raise ModelFormatError(
                f"{where}: external data length {length} does not match its shape and type ({nbytes} bytes)"
            )
        # O_NONBLOCK: a file swapped for a FIFO after the lstat above cannot block the open.
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
        try:
            fd = os.open(cur, flags)
        except OSError as err:
            raise ExternalDataError(f"{where}: cannot open external data file '{loc}': {err.strerror}") from None
        try:
            st2 = os.fstat(fd)
            if (st2.st_ino, st2.st_dev) != (st.st_ino, st.st_dev) or not stat.S_ISREG(st2.st_mode):
                raise ExternalDataError(f"{where}: external data file '{loc}' changed while being opened")
            note_read(cur)  # a converter must not overwrite it (opforge convert -o)
            # Only this tensor's bytes: the file may hold many tensors, or be sparse and huge.
            data = _pread_exact(fd, length, offset)
        except OSError as err:
            raise ExternalDataError(f"{where}: cannot read external data file '{loc}': {err.strerror}") from None
        finally:
            os.close(fd)
        if len(data) != length:
            raise ExternalDataError(
                f"{where}: external data file '{loc}' ended after {len(data)} of {length} bytes at offset "
                f"{offset} (it shrank while being read)"
            )
        return data

    @staticmethod
    def _int_field(info: dict[str, str], key: str, default: int | None, where: str) -> Any:
        if key not in info:
            return default
        try:
            v = int(info[key])
        except ValueError:
            raise ExternalDataError(f"{where}: external data {key} {info[key]!r} is not a number") from None
        if v < 0:
            raise ExternalDataError(f"{where}: external data {key} {v} is negative")
        return v


def _pread_exact(fd: int, length: int, offset: int) -> bytes:
    """Up to ``length`` bytes at ``offset`` (fewer only at end of file), in bounded chunks."""
    chunks = []
    while length > 0:
        chunk = os.pread(fd, min(length, 1 << 26), offset)
        if not chunk:
            break
        chunks.append(chunk)
        length -= len(chunk)
        offset += len(chunk)
    return b"".join(chunks)
