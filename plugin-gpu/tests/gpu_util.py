"""Helpers of the GPU plugin tests: single-node models and comparison with the reference."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import opforge
from opforge.graph import Model
from opforge.reference import evaluate_model


def param(shape: Sequence[int], et: str = "f32", name: str = "x") -> opforge.Node:
    p = opforge.op("Parameter", element_type=et, shape=list(shape), name=name)
    p.output(0).set_names([name])
    return p


def const(value: Any, dtype: Any = np.float32) -> opforge.Node:
    return opforge.op("Constant", value=np.asarray(value, dtype=dtype))


def rand(shape: Sequence[int], dtype: Any = np.float32, seed: int = 0, low: float = -2, high: float = 2) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.uniform(low, high, shape).astype(dtype)
    if np.dtype(dtype) == np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    return rng.integers(int(low), int(high) + 1, shape).astype(dtype)


def check(core: opforge.Core, model: Model, inputs: Sequence[np.ndarray], rtol: float = 1e-4,
          atol: float = 1e-5, config: dict[str, Any] | None = None) -> list[np.ndarray]:
    """Run ``model`` on GPU and compare every output with the reference."""
    got = core.compile_model(model, "GPU", config or {})(list(inputs))
    want = evaluate_model(model, list(inputs))
    outs = []
    for i, w in enumerate(want):
        g = got[i]
        assert g.shape == w.shape, f"output {i}: shape {g.shape} != {w.shape}"
        assert g.dtype == w.dtype, f"output {i}: dtype {g.dtype} != {w.dtype}"
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=f"output {i}")
        else:
            np.testing.assert_array_equal(g, w, err_msg=f"output {i}")
        outs.append(g)
    return outs


def supported(core: opforge.Core, m: Model) -> None:
    """Every node of ``m`` is claimed by the GPU's ``query_model``."""
    assert set(core.query_model(m, "GPU")) == {n.name for n in m.get_ordered_ops()}
