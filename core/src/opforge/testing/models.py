"""Small models for op-level tests: one node of an op class, its inputs described by
:class:`Input` (a Parameter fed with seeded values, or a Constant), built through the core graph
API, and the arrays to feed it.

Inputs are described, not given as arrays, so that a case catalogue stays a table of facts
(shape, element type, value range) and the values come from one seeded generator.
"""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from opforge.element_type import Type
from opforge.graph import Model, Node
from opforge.op import Op

#: float values with IEEE semantics worth checking: NaN, both infinities, both zeros, and
#: ordinary values of both signs (the latter keep the comparison meaningful for the rest)
SPECIAL_FLOATS: tuple[float, ...] = (float("nan"), float("inf"), float("-inf"), -0.0, 0.0, 1.5, -1.5, 0.5, -2.0)


@dataclasses.dataclass(frozen=True)
class Input:
    """One input of a case.

    ``value`` fixes the data (else it is drawn from ``[low, high]``, integers inclusive);
    ``const`` makes it a Constant node (shape-deciding inputs: axes, target shapes, pads), else a
    Parameter that is fed at run time.
    """

    shape: tuple[int, ...]
    dtype: str = "f32"
    low: float = -2.0
    high: float = 2.0
    value: np.ndarray | None = dataclasses.field(default=None, compare=False)
    const: bool = False

    @property
    def type(self) -> Type:
        return Type(self.dtype)

    def describe(self) -> str:
        kind = "c" if self.const else ""
        return f"{kind}{self.dtype}[{'x'.join(map(str, self.shape))}]"


def tensor(*shape: int, dtype: str = "f32", low: float = -2.0, high: float = 2.0) -> Input:
    """A Parameter of random values in ``[low, high]``."""
    return Input(tuple(shape), dtype, low, high)


def const(value: Any, dtype: str = "i64") -> Input:
    """A Constant input (axes, shapes, pads, indices...)."""
    arr = np.asarray(value, dtype=Type(dtype).np)
    return Input(arr.shape, dtype, value=arr, const=True)


def fixed(value: Any, dtype: str = "f32") -> Input:
    """A Parameter fed with exactly ``value``."""
    arr = np.asarray(value, dtype=Type(dtype).np)
    return Input(arr.shape, dtype, value=arr)


def special(dtype: str = "f32") -> Input:
    """A Parameter holding every value of :data:`SPECIAL_FLOATS`."""
    return fixed(np.array(SPECIAL_FLOATS), dtype)


def special_pairs(dtype: str = "f32") -> tuple[Input, Input]:
    """Two Parameters whose elements form every pair of :data:`SPECIAL_FLOATS` (for binary ops)."""
    v = np.array(SPECIAL_FLOATS)
    a, b = np.meshgrid(v, v, indexing="ij")
    return fixed(a, dtype), fixed(b, dtype)


def seed_of(text: str) -> int:
    """A seed that depends only on ``text`` (stable across processes, unlike ``hash``)."""
    return zlib.crc32(text.encode())


def input_values(inputs: Sequence[Input], seed: int) -> list[np.ndarray]:
    """The array of every input: fixed values, else seeded random ones."""
    rng = np.random.default_rng(seed)
    out = []
    for spec in inputs:
        if spec.value is not None:
            out.append(np.asarray(spec.value, dtype=spec.type.np))
            continue
        t = spec.type
        if t is Type.boolean:
            a: np.ndarray = rng.integers(0, 2, size=spec.shape).astype(bool)
        elif t.is_float:
            a = rng.uniform(spec.low, spec.high, size=spec.shape).astype(t.np)
        else:
            a = rng.integers(int(spec.low), int(spec.high) + 1, size=spec.shape).astype(t.np)
        out.append(np.asarray(a))
    return out


def build(op: type[Op], inputs: Sequence[Input], attrs: Mapping[str, Any] | None = None,
          seed: int = 0, dynamic: bool = False) -> tuple[Model, list[np.ndarray]]:
    """A model of one ``op`` node on ``inputs``, and the arrays to feed its Parameters.

    Parameters are named ``in0``, ``in1``... by input position, outputs ``out0``, ``out1``...
    ``dynamic``: every Parameter dimension is dynamic (the rank is kept), so the device sees the
    shapes only when the model runs.
    """
    values = input_values(inputs, seed)
    args: list[Node] = []
    params: list[Node] = []
    feeds: list[np.ndarray] = []
    for i, (spec, value) in enumerate(zip(inputs, values)):
        if spec.const:
            args.append(Node.create("Constant", [], {"value": value}, f"const{i}"))
            continue
        dims = [-1] * len(spec.shape) if dynamic else list(spec.shape)
        p = Node.create("Parameter", [], {"element_type": spec.type, "shape": dims}, f"in{i}")
        p.output(0).set_names([f"in{i}"])
        args.append(p)
        params.append(p)
        feeds.append(value)
    node = Node.create(op, args, dict(attrs or {}), "node")
    results = []
    for j, out in enumerate(node.outputs()):
        out.set_names([f"out{j}"])
        results.append(Node.create("Result", [out], {}, f"result{j}"))
    return Model(results, params, name=f"{op.type_name}_{op.version}"), feeds
