"""A bf16 MatMul whose only readers are bf16 MatMuls with constant weights (a transformer's FFN:
the GELU'd expansion read by the projection back) writes its result in bf16, and the reader takes
it as it is (core/executor.cpp takes_blocked): the same numbers as an f32 result the reader
converts (both round to nearest even), half the bytes."""

from __future__ import annotations

from typing import Any

import numpy as np
import opforge
import pytest
from cpu_testing import const, param, rand
from opforge.graph import Model
from opforge_cpu._loader import load_core

pytestmark = pytest.mark.skipif(not bool(load_core().native_bf16()),
                                reason="this host has no bf16 arithmetic (AVX512_BF16/AMX)")


def to_bf16(a: np.ndarray) -> np.ndarray:
    """f32 -> nearest bf16 (ties to even), as f64."""
    bits = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


def ffn(s: int, e: int, f: int, hidden_out: bool = False, readers: int = 1) -> Model:
    x = param("x", [1, s, e])
    h = opforge.op("MatMul", x, const(rand((e, f), seed=1) * e ** -0.5), name="up")
    h = opforge.op("Gelu", opforge.op("Add", h, const(rand((f,), seed=2) * 0.1), name="up_bias"), name="gelu")
    outs = []
    for k in range(readers):
        y = opforge.op("MatMul", h, const(rand((f, e), seed=3 + k) * f ** -0.5), name=f"down{k}")
        outs.append(opforge.op("Add", opforge.op("Add", y, const(rand((e,), seed=9) * 0.1)), x, name=f"residual{k}"))
    return Model(outs + ([h] if hidden_out else []), [x], name="ffn")


def unplanned_bytes(compiled: Any) -> int:
    return int(next(iter(compiled._executable.programs().values())).program.memory_plan()["unplanned_bytes"])


@pytest.mark.parametrize("s", [7, 197])
@pytest.mark.parametrize("threads", [1, 2])
def test_ffn_hidden_is_bf16_and_exact(core: Any, s: int, threads: int) -> None:
    e, f = 64, 256
    xv = rand((1, s, e), seed=20)
    cfg = {"INFERENCE_PRECISION_HINT": "bf16", "INFERENCE_NUM_THREADS": threads}
    handed = core.compile_model(ffn(s, e, f), "CPU", cfg)
    got = np.asarray(handed([xv])[0])
    # the hidden tensor also a model output: f32, the projection converts it itself
    kept = np.asarray(core.compile_model(ffn(s, e, f, hidden_out=True), "CPU", cfg)([xv])[0])
    np.testing.assert_array_equal(got, kept)
    # the hidden tensor (s x f) is the only one stored in bf16: 2 bytes less per element than f32
    f32 = core.compile_model(ffn(s, e, f), "CPU", {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": threads})
    assert unplanned_bytes(f32) - unplanned_bytes(handed) == s * f * 2
    exact = np.asarray(f32([xv])[0]).astype(np.float64)
    assert np.abs(got - exact).max() / np.abs(exact).max() < 2e-2  # within bf16's reach


def test_two_projections_read_the_bf16_hidden(core: Any) -> None:
    s, e, f = 9, 32, 96
    xv = rand((1, s, e), seed=21)
    cfg = {"INFERENCE_PRECISION_HINT": "bf16"}
    got = core.compile_model(ffn(s, e, f, readers=2), "CPU", cfg)([xv]).to_tuple()
    kept = core.compile_model(ffn(s, e, f, hidden_out=True, readers=2), "CPU", cfg)([xv]).to_tuple()
    for g, k in zip(got, kept[:2]):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(k))


def test_other_readers_keep_f32(core: Any) -> None:
    # a reader that is no constant-weight MatMul (here a Relu) keeps the hidden tensor f32
    s, e, f = 5, 16, 48
    x = param("x", [1, s, e])
    h = opforge.op("MatMul", x, const(rand((e, f), seed=1)), name="up")
    y = opforge.op("MatMul", h, const(rand((f, e), seed=2)), name="down")
    model = Model([y, opforge.op("Relu", h, name="other")], [x], name="m")
    cfg = {"INFERENCE_PRECISION_HINT": "bf16"}
    bf16 = core.compile_model(model, "CPU", cfg)
    f32 = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    assert unplanned_bytes(f32) == unplanned_bytes(bf16)
    xv = rand((1, s, e), seed=3)
    got = np.asarray(bf16([xv])[0]).astype(np.float64)
    hv = to_bf16(xv[0]) @ to_bf16(rand((e, f), seed=1))
    want = to_bf16(hv.astype(np.float32)) @ to_bf16(rand((f, e), seed=2))
    assert np.abs(got[0] - want).max() / np.abs(want).max() < 2e-3
