"""Partial shapes: static dimensions, dynamic dimensions (``None``) and dynamic rank."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Union

from opforge.errors import ModelValidationError

Dim = Union[int, None]  # None is a dynamic dimension


class PartialShape:
    """A shape whose rank and dimensions may be unknown until inference time.

    ``PartialShape([1, None, 224])`` has a dynamic second dimension;
    ``PartialShape.dynamic()`` has an unknown rank. Instances are immutable and hashable.
    """

    __slots__ = ("_dims",)

    def __init__(self, dims: Iterable[Dim] | PartialShape | None) -> None:
        if isinstance(dims, PartialShape):
            self._dims: tuple[Dim, ...] | None = dims._dims
            return
        if dims is None:
            self._dims = None
            return
        out: list[Dim] = []
        for d in dims:
            if d is None or (isinstance(d, (int,)) and int(d) < 0):
                out.append(None)
            elif isinstance(d, bool):
                raise ModelValidationError(f"shape dimension must be an integer, got {d!r}")
            else:
                try:
                    out.append(int(d))
                except (TypeError, ValueError):
                    raise ModelValidationError(
                        f"shape dimension must be an integer or None, got {d!r}"
                    ) from None
        self._dims = tuple(out)

    @classmethod
    def dynamic(cls, rank: int | None = None) -> PartialShape:
        """A shape of unknown rank, or of known ``rank`` with every dimension dynamic."""
        return cls(None if rank is None else [None] * rank)

    @classmethod
    def parse(cls, text: str) -> PartialShape:
        """Parse ``"1,3,?,224"``, ``"[1,3,-1,224]"``, ``"(1, 3)"`` or ``"..."`` (dynamic rank)."""
        t = text.strip().strip("[]()").strip()
        if t in ("...", "?..."):
            return cls.dynamic()
        if not t:
            return cls([])
        dims: list[Dim] = []
        for part in t.split(","):
            p = part.strip()
            if p in ("?", "-1", ""):
                dims.append(None)
            else:
                try:
                    dims.append(int(p))
                except ValueError:
                    raise ModelValidationError(f"cannot parse shape {text!r}: bad dimension {p!r}") from None
        return cls(dims)

    @property
    def rank_is_static(self) -> bool:
        return self._dims is not None

    @property
    def rank(self) -> int | None:
        return None if self._dims is None else len(self._dims)

    @property
    def is_static(self) -> bool:
        return self._dims is not None and all(d is not None for d in self._dims)

    @property
    def dims(self) -> tuple[Dim, ...]:
        """The dimensions; raises if the rank is dynamic."""
        if self._dims is None:
            raise ModelValidationError("shape has dynamic rank; its dimensions are unknown")
        return self._dims

    def to_tuple(self) -> tuple[int, ...]:
        """The static shape as a tuple of ints; raises if anything is dynamic."""
        if not self.is_static:
            raise ModelValidationError(f"shape {self} is not static")
        return tuple(d for d in self.dims if d is not None)

    def compatible(self, other: PartialShape | Sequence[int]) -> bool:
        """True when some static shape fits both (dynamic parts match anything)."""
        o = other if isinstance(other, PartialShape) else PartialShape(other)
        if self._dims is None or o._dims is None:
            return True
        if len(self._dims) != len(o._dims):
            return False
        return all(a is None or b is None or a == b for a, b in zip(self._dims, o._dims))

    def merge(self, other: PartialShape) -> PartialShape:
        """The most specific shape compatible with both; raises when they conflict."""
        if self._dims is None:
            return other
        if other._dims is None:
            return self
        if not self.compatible(other):
            raise ModelValidationError(f"shapes {self} and {other} are incompatible")
        return PartialShape(a if a is not None else b for a, b in zip(self._dims, other._dims))

    def __len__(self) -> int:
        return len(self.dims)

    def __iter__(self) -> Iterator[Dim]:
        return iter(self.dims)

    def __getitem__(self, i: int) -> Dim:
        return self.dims[i]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PartialShape):
            return self._dims == other._dims
        if isinstance(other, (tuple, list)):
            return self._dims == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._dims)

    def __str__(self) -> str:
        if self._dims is None:
            return "[...]"
        return "[" + ",".join("?" if d is None else str(d) for d in self._dims) + "]"

    def __repr__(self) -> str:
        return f"PartialShape({self})"


def shape_str(shape: Sequence[int] | PartialShape) -> str:
    """Shapes in messages look like Python tuples: ``(1, 3, 224)``."""
    if isinstance(shape, PartialShape):
        if shape.rank is None:
            return "(...)"
        dims = ["?" if d is None else str(d) for d in shape.dims]
    else:
        dims = [str(int(d)) for d in shape]
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"
