"""Resource limits for reading untrusted models: one table, one place.

A model file is untrusted input, and a few bytes of it can ask for gigabytes (a 60-byte ONNX
``sparse_initializer`` with a dense shape of 2^31 floats; an IR ``<dim>`` of 10^12; external data
"length" of 2^62). Readers therefore check every size a file *declares* against these limits
before they allocate or read anything, and raise :class:`~opforge.errors.ResourceLimitError`
naming the file, the tensor or node, the limit and how to raise it.

Each limit can be raised (or lowered) three ways, the later winning:

1. its default below;
2. the environment variable ``OPFORGE_<NAME>`` (read when a reader starts), e.g.
   ``OPFORGE_MAX_TENSOR_BYTES=17179869184``;
3. ``Core.set_property({"<NAME>": value})`` on a :class:`~opforge.Core`: applies to the models
   that Core reads (``Core.read_model``, ``Core.compile_model`` of a path).

``docs/security.md`` explains what these limits promise. The defaults are far above any real
model (the largest public single weight tensors are around 2-4 GiB) and far below what makes a
machine swap to death.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import math
import os
from collections.abc import Iterator, Mapping
from typing import Any

from opforge.errors import PropertyError, ResourceLimitError

GiB = 1 << 30


@dataclasses.dataclass(frozen=True)
class LimitSpec:
    """One limit: its property name, default and what it bounds."""

    name: str
    default: int
    doc: str

    @property
    def env(self) -> str:
        return f"OPFORGE_{self.name}"


#: every limit, by property name
LIMITS: dict[str, LimitSpec] = {s.name: s for s in (
    LimitSpec("MAX_MODEL_FILE_BYTES", 2 * GiB,
              "bytes of a model file read into memory: an .onnx (protobuf caps it at 2 GiB anyway), an IR "
              ".xml, a Paddle .json/.pdmodel"),
    LimitSpec("MAX_WEIGHTS_BYTES", 64 * GiB,
              "bytes of all weights of one model: ONNX external data, an IR .bin, a Paddle .pdiparams"),
    LimitSpec("MAX_TENSOR_BYTES", 4 * GiB,
              "bytes of one tensor a file declares: an initializer, a constant, the dense form of a sparse "
              "initializer, a static input shape"),
    LimitSpec("MAX_TENSOR_RANK", 32, "dimensions of one tensor shape (NumPy itself stops at 64)"),
    LimitSpec("MAX_DIMENSION", 2**32 - 1, "one static dimension of a shape"),
    LimitSpec("MAX_NODES", 1_000_000, "nodes (ONNX, Paddle) or layers (IR) of one model, subgraphs included"),
)}


class Limits:
    """Current values of the limits: defaults, overridden by the environment, then by ``set``."""

    def __init__(self, values: Mapping[str, int] | None = None) -> None:
        self._values: dict[str, int] = {}
        for spec in LIMITS.values():
            env = os.environ.get(spec.env)
            if env is not None and env.strip():
                self._values[spec.name] = _parse(spec, env, f"environment variable {spec.env}")
            else:
                self._values[spec.name] = spec.default
        if values:
            self.set(values)

    def set(self, values: Mapping[str, Any]) -> None:
        """Validate every value first, then apply them all (a bad key changes nothing)."""
        new = {}
        for key, value in values.items():
            spec = LIMITS.get(str(key).upper())
            if spec is None:
                raise PropertyError(
                    f"unknown property '{key}'; Core-wide properties are the resource limits: "
                    f"{', '.join(LIMITS)}"
                )
            new[spec.name] = _parse(spec, value, f"property {spec.name}")
        self._values.update(new)

    def get(self, name: str) -> int:
        spec = LIMITS.get(name.upper())
        if spec is None:
            raise PropertyError(f"unknown limit '{name}'; limits: {', '.join(LIMITS)}")
        return self._values[spec.name]

    def copy(self) -> Limits:
        out = Limits.__new__(Limits)
        out._values = dict(self._values)
        return out

    def as_dict(self) -> dict[str, int]:
        return dict(self._values)

    # --- checks: each raises ResourceLimitError naming the subject and how to raise the limit --
    def check(self, name: str, value: int, what: str) -> None:
        """``value`` (already computed with Python ints, so it cannot overflow) against limit ``name``;
        the message reads "<what> <value> exceeds the limit NAME=N", e.g. "...: dimension 10^12"."""
        limit = self.get(name)
        if value > limit:
            raise ResourceLimitError(f"{what} {value} exceeds the limit {name}={limit}. {how_to_raise(name)}")

    def check_bytes(self, name: str, nbytes: int, what: str) -> None:
        """A byte count: the message reads "<what> needs N bytes, over the limit NAME=M"."""
        limit = self.get(name)
        if nbytes > limit:
            raise ResourceLimitError(f"{what} needs {nbytes} bytes, over the limit {name}={limit}. {how_to_raise(name)}")

    def check_shape(self, dims: Any, itemsize: int, what: str) -> int:
        """Rank, each dimension and the byte size of a static shape; returns the element count."""
        dims = [int(d) for d in dims]
        for name, value, part in (("MAX_TENSOR_RANK", len(dims), "rank"),
                                  ("MAX_DIMENSION", max(dims, default=0), "dimension")):
            limit = self.get(name)
            if value > limit:
                raise ResourceLimitError(f"{what}: {part} {value} of shape {_short(dims)} exceeds the limit "
                                         f"{name}={limit}. {how_to_raise(name)}")
        count = math.prod(dims)
        self.check_bytes("MAX_TENSOR_BYTES", count * itemsize, f"{what}: shape {_short(dims)}")
        return count


def how_to_raise(name: str) -> str:
    return (f"If the model is trusted, raise it with Core.set_property({{'{name}': N}}) or the "
            f"environment variable {LIMITS[name].env}.")


def _short(dims: list[int]) -> str:
    return str(dims) if len(dims) <= 8 else f"[{', '.join(map(str, dims[:8]))}, ...] (rank {len(dims)})"


def _parse(spec: LimitSpec, value: Any, where: str) -> int:
    try:
        if isinstance(value, bool):
            raise ValueError(value)
        v = int(str(value).strip()) if not isinstance(value, int) else value
    except (TypeError, ValueError):
        raise PropertyError(f"{where} expects a non-negative integer, got {value!r}") from None
    if v < 0:
        raise PropertyError(f"{where} expects a non-negative integer, got {value!r}")
    return v


_current: contextvars.ContextVar[Limits | None] = contextvars.ContextVar("opforge_limits", default=None)


def current() -> Limits:
    """The limits in force: those of the Core reading a model, else defaults and environment."""
    lim = _current.get()
    return lim if lim is not None else Limits()


@contextlib.contextmanager
def using(limits: Limits) -> Iterator[Limits]:
    """Make ``limits`` the ones :func:`current` returns inside the block (this thread/task only)."""
    token = _current.set(limits)
    try:
        yield limits
    finally:
        _current.reset(token)
