"""How a PIR op is presented as a ProgramDesc op: the signature table each translator module declares.

PIR (``<prefix>.json``) ops have positional operands and results, and several attributes of the
legacy op became operands (``pool2d``'s ``ksize`` is the operand ``kernel_size``, produced by a
``full_int_array`` op). A :class:`PirOp` names each operand and result with the legacy port name
and says which operands are legacy attributes; when such an operand is a constant (``full``,
``full_int_array``, or a ``combine`` of them) the reader folds it into the attribute, else it stays
a tensor input under the legacy tensor port name (``reshape2``'s ``Shape``).

This is the mapping Paddle's own ``op_compat.yaml`` records between the two op sets; declaring it
next to each translator means one translator, and one user extension, serve both formats.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any


@dataclasses.dataclass(frozen=True)
class Arg:
    """One PIR operand: the legacy input port it becomes, or the legacy attribute it carries."""

    #: legacy input port name (``X``); for an attribute operand, the port used when it is not constant
    port: str
    #: legacy attribute the operand's constant value becomes (``ksize``), if any
    attr: str | None = None
    #: the attribute is a scalar (``axis``), not a list
    scalar: bool = False


@dataclasses.dataclass(frozen=True)
class PirOp:
    """The legacy shape of one PIR ``pd_op`` op (its name without the in-place ``_`` suffix)."""

    pir: str
    legacy: str
    inputs: tuple[Arg, ...]
    outputs: tuple[str, ...] = ("Out",)
    #: PIR attribute name -> legacy attribute name, where they differ
    attrs: Mapping[str, str] = dataclasses.field(default_factory=dict)
    #: legacy attributes PIR does not store (values PIR fixes in the op's definition)
    extra: Mapping[str, Any] = dataclasses.field(default_factory=dict)


def unary(pir: str, legacy: str | None = None, **extra: Any) -> PirOp:
    """An op with one input ``X`` and one output ``Out``, PIR attributes kept by name."""
    return PirOp(pir, legacy or pir, (Arg("X"),), ("Out",), {}, extra)


def binary(pir: str, legacy: str) -> PirOp:
    """An elementwise binary op: PIR ``add(x, y)`` is legacy ``elementwise_add(X, Y)`` with
    ``axis=-1`` (numpy broadcasting, the only kind PIR has)."""
    return PirOp(pir, legacy, (Arg("X"), Arg("Y")), ("Out",), {}, {"axis": -1})
