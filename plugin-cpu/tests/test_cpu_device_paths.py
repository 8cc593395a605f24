"""What the CPU device does beyond computing each op (the values of every op on every device are
the op-level conformance suite's, ``tests/ops``): convolution weights fed at run time (not
pre-packed), shapes decided at run time inside a model (NonZero, adaptive pooling fed its output
size), f16/bf16 models computed in f32, AdaptiveMaxPool's tie order, and ``query_model`` claiming
the ops added to the CPU device."""

from __future__ import annotations

from typing import Any

import numpy as np
import opforge
import pytest
from cpu_testing import check, param, rand, single
from opforge.graph import Model
from opforge.reference import evaluate_model

F32 = np.float32
I64 = np.int64


def test_convolution_runtime_weights(core: Any) -> None:
    x, w = rand((1, 3, 8, 8), F32, seed=1), rand((4, 3, 3, 3), F32, seed=2)
    model, feeds = single("Convolution", [x, w], strides=[1, 1], pads_begin=[1, 1], pads_end=[1, 1], dilations=[1, 1])
    check(core, model, feeds, rtol=1e-4, atol=1e-4)


def test_non_zero_feeds_later_ops(core: Any) -> None:
    # NonZero in the middle of the model: the ops after it see its run-time shape.
    p = param("x", [3, 4])
    nz = opforge.op("NonZero", opforge.op("Relu", p), output_type="i64")
    t = opforge.op("Transpose", nz, opforge.op("Constant", value=np.array([1, 0], I64)))
    cnt = opforge.op("ReduceSum", nz, opforge.op("Constant", value=np.array([0, 1], I64)), keep_dims=False)
    model = Model([t.output(0), cnt.output(0), p.output(0)], [p])
    for seed in (0, 1):
        check(core, model, [rand((3, 4), seed=seed)])


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_low_precision_runs_in_f32(core: Any, dtype: str) -> None:
    import ml_dtypes

    npt = np.float16 if dtype == "f16" else ml_dtypes.bfloat16
    a, b = param("a", [3, 4], dtype), param("b", [4, 5], dtype)
    y = opforge.op("Softmax", opforge.op("MatMul", a, b), axis=1)
    model = Model([y.output(0)], [a, b])
    check(core, model, [rand((3, 4)).astype(npt), rand((4, 5), seed=1).astype(npt)], rtol=1e-2, atol=1e-2)


def test_adaptive_max_pool_ties(core: Any) -> None:
    x = rand((2, 2, 6, 6), np.int32, low=-1, high=1)  # many ties: the first in row-major order wins
    size = np.array([4, 3], I64)
    model, feeds = single("AdaptiveMaxPool", [x, size], {1: size})
    check(core, model, feeds)


@pytest.mark.parametrize("op", ["AdaptiveAvgPool", "AdaptiveMaxPool"])
def test_adaptive_pool_fed_output_shape(core: Any, op: str) -> None:
    x = rand((1, 2, 9, 7))
    model, _ = single(op, [x, np.array([3, 2], I64)])
    compiled = core.compile_model(model, "CPU")
    for out in ([3, 2], [4, 5], [1, 1]):
        feeds = [x, np.array(out, I64)]
        got = compiled(feeds).to_tuple()
        want = evaluate_model(model, feeds)
        assert got[0].shape == (1, 2, *out)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_new_ops_are_supported(core: Any) -> None:
    x = rand((1, 2, 6, 6))
    for op, ins, consts, attrs in [
        ("Swish", [x], {}, {}),
        ("AdaptiveAvgPool", [x, np.array([2, 2], I64)], {1: np.array([2, 2], I64)}, {}),
        ("AdaptiveMaxPool", [x, np.array([2, 2], I64)], {1: np.array([2, 2], I64)}, {}),
        ("NormalizeL2", [x, np.array([1], I64)], {1: np.array([1], I64)}, {"eps": 1e-6, "eps_mode": "add"}),
        ("GRN", [x], {}, {"bias": 1.0}),
    ]:
        model, _ = single(op, ins, consts, **attrs)
        assert "node" in core.query_model(model, "CPU"), op
