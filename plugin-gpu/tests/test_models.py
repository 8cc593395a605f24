"""Small networks end to end: a CNN (fused conv epilogues, pooling, classifier) and a transformer
block (MatMul, Softmax, MVN, erf-GELU), in f32 and in f16 storage mode."""

from __future__ import annotations

import math

import numpy as np
import opforge
import pytest
from gpu_util import check, const, param, rand
from opforge.graph import Model


def small_cnn() -> Model:
    rng = np.random.default_rng(0)
    x = param([2, 3, 16, 16])

    def conv(v: opforge.Node, cin: int, cout: int, stride: int, k: int = 3, groups: int = 0) -> opforge.Node:
        pad = k // 2
        attrs = {"strides": [stride, stride], "pads_begin": [pad, pad], "pads_end": [pad, pad], "dilations": [1, 1]}
        if groups:
            w = rng.standard_normal((groups, cout // groups, cin // groups, k, k)) * 0.3
            y = opforge.op("GroupConvolution", v, const(w), **attrs)
        else:
            y = opforge.op("Convolution", v, const(rng.standard_normal((cout, cin, k, k)) * (2 / (cin * k * k)) ** 0.5),
                           **attrs)
        return opforge.op("BatchNormInference", y, const(rng.uniform(0.5, 1.5, cout)), const(rng.normal(0, 0.1, cout)),
                          const(rng.normal(0, 0.1, cout)), const(rng.uniform(0.5, 1.5, cout)), epsilon=1e-5)

    y = opforge.op("Relu", conv(x, 3, 8, 2))
    y = opforge.op("MaxPool", y, kernel=[2, 2], strides=[2, 2], pads_begin=[0, 0], pads_end=[0, 0],
                   dilations=[1, 1]).output(0)
    h = opforge.op("Clamp", conv(y, 8, 8, 1, groups=8), min=0.0, max=6.0)
    h = conv(h, 8, 8, 1, k=1)
    y = opforge.op("Relu", opforge.op("Add", h, y))
    y = opforge.op("ReduceMean", y, const([2, 3], np.int64), keep_dims=False)
    y = opforge.op("MatMul", y, const(rng.standard_normal((5, 8)) * 0.3), transpose_a=False, transpose_b=True)
    y = opforge.op("Softmax", opforge.op("Add", y, const(rng.standard_normal(5) * 0.1)), axis=1)
    return Model([y], [x], name="small_cnn")


def transformer_block(seq: int = 8, hidden: int = 16, heads: int = 2) -> Model:
    rng = np.random.default_rng(1)
    dh = hidden // heads
    x = param([1, seq, hidden])
    mask = param([1, 1, 1, seq], name="mask")

    def linear(v: opforge.Node, cin: int, cout: int) -> opforge.Node:
        y = opforge.op("MatMul", v, const(rng.standard_normal((cin, cout)) / math.sqrt(cin)), transpose_a=False,
                       transpose_b=False)
        return opforge.op("Add", y, const(rng.standard_normal(cout) * 0.1))

    def split_heads(v: opforge.Node) -> opforge.Node:
        r = opforge.op("Reshape", v, const([1, seq, heads, dh], np.int64), special_zero=False)
        return opforge.op("Transpose", r, const([0, 2, 1, 3], np.int64))

    def layer_norm(v: opforge.Node) -> opforge.Node:
        n = opforge.op("MVN", v, const([-1], np.int64), normalize_variance=True, eps=1e-12, eps_mode="inside_sqrt")
        return opforge.op("Add", opforge.op("Multiply", n, const(rng.uniform(0.5, 1.5, hidden))),
                          const(rng.normal(0, 0.1, hidden)))

    q, k, v = (split_heads(linear(x, hidden, hidden)) for _ in range(3))
    s = opforge.op("MatMul", q, k, transpose_a=False, transpose_b=True)
    s = opforge.op("Add", opforge.op("Multiply", s, const(1 / math.sqrt(dh))), mask)
    a = opforge.op("MatMul", opforge.op("Softmax", s, axis=-1), v, transpose_a=False, transpose_b=False)
    a = opforge.op("Reshape", opforge.op("Transpose", a, const([0, 2, 1, 3], np.int64)),
                   const([1, seq, hidden], np.int64), special_zero=False)
    h = layer_norm(opforge.op("Add", x, linear(a, hidden, hidden)))
    f = linear(h, hidden, 4 * hidden)
    gelu = opforge.op("Multiply", opforge.op("Multiply", f, const(0.5)),
                      opforge.op("Add", opforge.op("Erf", opforge.op("Multiply", f, const(1 / math.sqrt(2)))),
                                 const(1.0)))
    out = layer_norm(opforge.op("Add", h, linear(gelu, 4 * hidden, hidden)))
    return Model([out], [x, mask], name="transformer_block")


def _mask(seq: int = 8) -> np.ndarray:
    m = np.zeros((1, 1, 1, seq), np.float32)
    m[..., -2:] = -10000.0
    return m


@pytest.mark.parametrize("precision", ["f32", "f16"])
def test_small_cnn(core: opforge.Core, precision: str) -> None:
    tol = 1e-4 if precision == "f32" else 2e-2
    check(core, small_cnn(), [rand([2, 3, 16, 16])], rtol=tol, atol=tol,
          config={"INFERENCE_PRECISION_HINT": precision})


@pytest.mark.parametrize("precision", ["f32", "f16"])
def test_transformer_block(core: opforge.Core, precision: str) -> None:
    tol = 1e-4 if precision == "f32" else 3e-2
    check(core, transformer_block(), [rand([1, 8, 16]), _mask()], rtol=tol, atol=tol,
          config={"INFERENCE_PRECISION_HINT": precision})


def test_f16_storage_halves_memory(core: opforge.Core) -> None:
    m = small_cnn()
    f32 = core.compile_model(m, "GPU")
    f16 = core.compile_model(m, "GPU", {"INFERENCE_PRECISION_HINT": "f16"})
    p32 = next(iter(f32._executable.plans.values()))
    p16 = next(iter(f16._executable.plans.values()))
    assert p16.memory_bytes() * 2 == pytest.approx(p32.memory_bytes(), rel=0.01)
    assert f16([rand([2, 3, 16, 16])])[0].dtype == np.float32
