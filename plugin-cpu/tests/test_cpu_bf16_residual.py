"""bf16 programs keep a CNN's residual stream and its stem's MaxPool in bf16, as OpenVINO's bf16
does: a tensor read only by bf16 convolutions, bf16 MaxPools and residual Adds that a bf16
convolution takes as its post-op is stored in bf16 (emit.py ``_bf16_storable``). The residual is
oneDNN's in-place sum when it has the destination's type, else a binary add post-op reading it
where it is (a bf16 residual under an f32 destination: the last block before the pooling)."""

from __future__ import annotations

from typing import Any

import numpy as np
import opforge
import pytest
from cpu_testing import const, param, rand
from opforge.graph import Model
from opforge_cpu._loader import load_core

needs_bf16 = pytest.mark.skipif(not bool(load_core().native_bf16()),
                                reason="this host has no bf16 arithmetic (AVX512_BF16/AMX)")
SHAPE = (1, 8, 32, 32)


def conv(x: Any, cin: int, cout: int, k: int, stride: int, seed: int, name: str) -> Any:
    w = rand((cout, cin, k, k), seed=seed) * (1.0 / (cin * k * k)) ** 0.5
    b = rand((1, cout, 1, 1), seed=seed + 100) * 0.1
    p = k // 2
    y = opforge.op("Convolution", x, const(w), strides=[stride, stride], pads_begin=[p, p], pads_end=[p, p],
                   dilations=[1, 1], name=name)
    return opforge.op("Add", y, const(b), name=f"{name}_bias")


def resnet_like() -> Model:
    """stem conv -> relu -> MaxPool -> identity block -> downsampling block -> global average."""
    x = param("x", list(SHAPE))
    h = opforge.op("Relu", conv(x, 8, 32, 3, 1, 1, "stem"), name="stem_relu")
    p = opforge.op("MaxPool", h, strides=[2, 2], dilations=[1, 1], pads_begin=[1, 1], pads_end=[1, 1],
                   kernel=[3, 3], rounding_type="floor", auto_pad="explicit", name="pool").output(0)
    a = opforge.op("Relu", conv(p, 32, 32, 3, 1, 2, "a"), name="a_relu")
    y = opforge.op("Relu", opforge.op("Add", conv(a, 32, 32, 3, 1, 3, "b"), p, name="res1"), name="res1_relu")
    c = opforge.op("Relu", conv(y, 32, 64, 3, 2, 4, "c"), name="c_relu")
    d = conv(c, 64, 64, 3, 1, 5, "d")
    ds = conv(y, 32, 64, 1, 2, 6, "ds")
    z = opforge.op("Relu", opforge.op("Add", d, ds, name="res2"), name="res2_relu")
    out = opforge.op("ReduceMean", z, const(np.array([2, 3], np.int64), np.int64), keep_dims=True, name="gap")
    return Model([out], [x], name="resnet_like")


def run(core: Any, model: Model, feeds: np.ndarray, precision: str, threads: int = 1) -> tuple[np.ndarray, Any]:
    compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": precision, "ENABLE_PROFILING": True,
                                                 "INFERENCE_NUM_THREADS": threads})
    request = compiled.create_infer_request()
    return np.asarray(request.infer([feeds])[0]), request


@needs_bf16
@pytest.mark.parametrize("threads", [1, 2])
def test_bf16_residual_stream_and_max_pool(core: Any, threads: int) -> None:
    model = resnet_like()
    feeds = rand(SHAPE, seed=9)
    want, _ = run(core, model, feeds, "f32")
    got, request = run(core, model, feeds, "bf16", threads)
    rel = np.abs(got.astype(np.float64) - want).max() / np.abs(want).max()
    # bf16 rounding of every stored tensor (8 bits of mantissa: ~4e-3 each), not more; and it
    # really rounded (an f32 program would agree to ~1e-6)
    assert 1e-4 < rel < 3e-2, rel
    rows = {r.node_name: r for r in request.get_profiling_info() if r.status == "EXECUTED"}
    assert "bf16" in rows["pool"].exec_type, rows["pool"].exec_type  # pools bf16, not f32
    # the residual Adds are post-ops of their convolutions, not steps of their own (nor reorders)
    assert not any(r.node_type in ("Add", "Reorder") for r in rows.values()), sorted(
        (r.node_name, r.node_type) for r in rows.values())


@needs_bf16
def test_bf16_residual_stream_stores_bf16(core: Any) -> None:
    # the stem's output, the pooled tensor and the first block's tensors are bf16: the bf16
    # program's unplanned bytes are well below the f32 one's (the stem output alone, 32x32x32,
    # saves 64 KiB)
    model = resnet_like()
    plans = {}
    for prec in ("f32", "bf16"):
        compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": prec})
        plans[prec] = compiled._executable.programs()[(SHAPE,)].program.memory_plan()
    assert plans["f32"]["unplanned_bytes"] - plans["bf16"]["unplanned_bytes"] >= 32 * 32 * 32 * 2


@needs_bf16
def test_bf16_max_pool_keeps_nan(core: Any) -> None:
    # a NaN in the image reaches the stem convolution's bf16 output and the bf16 MaxPool (whose
    # oneDNN kernel skips NaN): the outputs that the f32 program makes NaN are NaN in bf16 too,
    # and only those. (No Relu in between: the fused relu post-op turns NaN into 0 in both.)
    feeds = rand(SHAPE, seed=9)
    feeds[0, 3, 5, 7] = np.nan
    x = param("x", list(SHAPE))
    h = conv(x, 8, 32, 3, 1, 1, "stem")
    p = opforge.op("MaxPool", h, strides=[2, 2], dilations=[1, 1], pads_begin=[1, 1], pads_end=[1, 1],
                   kernel=[3, 3], rounding_type="floor", auto_pad="explicit", name="pool").output(0)
    y = conv(p, 32, 16, 1, 1, 7, "after")  # the pool's output read by a bf16 convolution only
    stem = Model([y], [x], name="stem")
    want, _ = run(core, stem, feeds, "f32")
    got, request = run(core, stem, feeds, "bf16")
    assert np.isnan(want).sum() > 0
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    pool = next(r for r in request.get_profiling_info() if r.node_name == "pool")
    assert "bf16" in pool.exec_type, pool.exec_type


@needs_bf16
@pytest.mark.parametrize("spatial", [1, 2, 3])
def test_bf16_residual_read_by_two_blocks(core: Any, spatial: int) -> None:
    # h0 is the residual of two blocks: the first block's in-place bf16 sum cannot write over it
    # (the second still reads it), so the executor copies it into that block's output first; the
    # copy is sized by the bf16 descriptor (the f32 element count overran the buffer and
    # corrupted the heap). The second residual is bf16 under the f32 model output: binary add.
    shape = [1, 16] + [10] * spatial
    x = param("x", shape)

    def conv_n(h: Any, seed: int, name: str) -> Any:
        w = rand((16, 16) + (3,) * spatial, seed=seed) * 0.1
        return opforge.op("Convolution", h, const(w), strides=[1] * spatial, pads_begin=[1] * spatial,
                          pads_end=[1] * spatial, dilations=[1] * spatial, name=name)

    h0 = opforge.op("Relu", conv_n(x, 1, "c0"), name="r0")
    h = opforge.op("Relu", conv_n(h0, 2, "c1"), name="r1")
    y = opforge.op("Relu", opforge.op("Add", conv_n(h, 3, "c2"), h0, name="res"), name="r2")
    z = opforge.op("Relu", opforge.op("Add", h0, conv_n(y, 4, "c3"), name="res2"), name="r3")
    model = Model([z], [x], name="two_residuals")
    feeds = rand(tuple(shape), seed=5)
    want, _ = run(core, model, feeds, "f32")
    for _ in range(3):  # (a heap overrun shows up on a later allocation, if at all)
        got, request = run(core, model, feeds, "bf16")
        rel = np.abs(got.astype(np.float64) - want).max() / np.abs(want).max()
        assert 1e-4 < rel < 2e-2, rel
        rows = [r for r in request.get_profiling_info() if r.status == "EXECUTED" and r.node_name != "output_reorder"]
        assert not any(r.node_type in ("Add", "Reorder") for r in rows), [(r.node_name, r.node_type) for r in rows]
