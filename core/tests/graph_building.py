"""Small builders shared by the graph-rewrite tests (test_fusion_passes.py, test_fuse_*.py,
test_merge_transposes.py): a graph written op by op, and the op types a pass left."""

from __future__ import annotations

from typing import Any

import numpy as np
import opforge
from opforge import Model, Node
from opforge.graph import Value


def param(shape: list[int], name: str = "x", et: str = "f32") -> Node:
    return opforge.op("Parameter", element_type=et, shape=shape, name=name)


def const(value: Any, dtype: Any = np.float32) -> Node:
    return opforge.op("Constant", value=np.asarray(value, dtype=dtype))


def op(type_name: str, *args: Value, **attrs: Any) -> Node:
    return opforge.op(type_name, *args, **attrs)


def rand(shape: tuple[int, ...], seed: int, low: float = -2.0, high: float = 2.0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(low, high, shape).astype(np.float32)


def types_of(model: Model) -> list[str]:
    """The op types of ``model`` in order, without its Parameters, Constants and Results."""
    return [n.type_name for n in model.get_ordered_ops() if n.type_name not in ("Parameter", "Constant", "Result")]
