"""Helpers of the VPU tests: small models built from opforge ops, seeded inputs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import opforge


def param(shape: Sequence[int], et: str = "f32", name: str = "x") -> opforge.Node:
    p = opforge.op("Parameter", element_type=et, shape=list(shape), name=name)
    p.output(0).set_names([name])
    return p


def const(value: Any, dtype: Any = np.float32) -> opforge.Node:
    return opforge.op("Constant", value=np.asarray(value, dtype=dtype))


def rand(shape: Sequence[int], seed: int = 0, low: float = -2, high: float = 2) -> np.ndarray:
    return np.random.default_rng(seed).uniform(low, high, shape).astype(np.float32)


def half(a: np.ndarray) -> np.ndarray:
    """``a`` rounded to FP16 (what the VPU stores) and back."""
    return np.asarray(a, np.float32).astype(np.float16).astype(np.float32)
