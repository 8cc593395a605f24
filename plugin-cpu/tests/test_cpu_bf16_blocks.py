"""bf16 programs keep Inception, Dense and Fire blocks in bf16 from convolution to convolution:
Concat, MaxPool, AvgPool, a standalone Relu and DenseNet's pre-activation BatchNorm (+ ReLU) read
the bf16 outputs of the convolutions and write bf16 for the convolutions after them (emit.py
``_bf16_storable`` / ``_bf16_passes``); a Relu or BatchNorm whose readers are not all bf16 ones
(the last block before a classifier) reads bf16 and writes f32; a global pooling reads bf16. Each model runs in f32 and in
bf16: bf16 agrees within its rounding (precision.md's table), NaN and +-inf land where f32 puts
them, and the profile shows the bf16 kernels ran with no reorder between them."""

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


def conv(x: Any, cin: int, cout: int, k: int, seed: int, name: str, relu: bool = True, stride: int = 1,
         positive: bool = False) -> Any:
    """k x k convolution (same padding) + bias (+ ReLU, fused by the emitter). ``positive``: weights
    in (0, 1], so that a +-inf or NaN pixel stays +-inf or NaN in every output channel."""
    scale = (1.0 / (cin * k * k)) ** 0.5
    w = rand((cout, cin, k, k), seed=seed, low=0.05, high=1.0) if positive else rand((cout, cin, k, k), seed=seed)
    p = k // 2
    y = opforge.op("Convolution", x, const(w * scale), strides=[stride, stride], pads_begin=[p, p], pads_end=[p, p],
                   dilations=[1, 1], name=name)
    y = opforge.op("Add", y, const(rand((1, cout, 1, 1), seed=seed + 100) * 0.1), name=f"{name}_bias")
    return opforge.op("Relu", y, name=f"{name}_relu") if relu else y


def pool(kind: str, x: Any, k: int, stride: int, name: str) -> Any:
    p = k // 2 if stride == 1 else 0
    if kind == "MaxPool":
        return opforge.op("MaxPool", x, strides=[stride, stride], dilations=[1, 1], pads_begin=[p, p], pads_end=[p, p],
                          kernel=[k, k], rounding_type="floor", auto_pad="explicit", name=name).output(0)
    return opforge.op("AvgPool", x, strides=[stride, stride], pads_begin=[p, p], pads_end=[p, p], kernel=[k, k],
                      exclude_pad=True, rounding_type="floor", auto_pad="explicit", name=name)


def batch_norm(x: Any, c: int, seed: int, name: str) -> Any:
    rng = np.random.default_rng(seed)
    g, b = rng.uniform(0.5, 1.5, c), rng.uniform(-0.5, 0.5, c)
    m, v = rng.uniform(-0.5, 0.5, c), rng.uniform(0.5, 2.0, c)
    return opforge.op("BatchNormInference", x, *(const(a) for a in (g, b, m, v)), epsilon=1e-5, name=name)


def gap(x: Any) -> Any:
    return opforge.op("ReduceMean", x, const(np.array([2, 3], np.int64), np.int64), keep_dims=True, name="gap")


def inception(positive: bool = False, size: int = 16) -> Model:
    """GoogLeNet-like: two Inception modules (1x1; 1x1 -> 3x3; MaxPool -> 1x1; AvgPool -> 1x1),
    each Concat followed by a standalone Relu, a stride-2 MaxPool between them, then a 1x1
    convolution (the bf16 pool's reader) and the output."""
    x = param("x", [1, 8, size, size])
    h = conv(x, 8, 32, 3, 1, "stem", relu=not positive, positive=positive)  # (a fused ReLU makes NaN 0)
    for m in range(2):
        cin = 32 if m == 0 else 64
        a = conv(h, cin, 16, 1, 10 * m + 2, f"m{m}_a", relu=False, positive=positive)
        b = conv(conv(h, cin, 16, 1, 10 * m + 3, f"m{m}_b1", positive=positive), 16, 16, 3, 10 * m + 4, f"m{m}_b2",
                 relu=False, positive=positive)
        c = conv(pool("MaxPool", h, 3, 1, f"m{m}_maxpool"), cin, 16, 1, 10 * m + 5, f"m{m}_c", relu=False,
                 positive=positive)
        d = conv(pool("AvgPool", h, 3, 1, f"m{m}_avgpool"), cin, 16, 1, 10 * m + 6, f"m{m}_d", relu=False,
                 positive=positive)
        h = opforge.op("Relu", opforge.op("Concat", a, b, c, d, axis=1, name=f"m{m}_concat"), name=f"m{m}_relu")
        h = pool("MaxPool", h, 3, 2 if m == 0 else 1, f"m{m}_pool")
    y = conv(h, 64, 16, 1, 40, "head", relu=False, positive=positive)
    return Model([y], [x], name="inception")


def dense(blocks: int = 2, layers: int = 3, pooled: bool = True, stem_relu: bool = True) -> Model:
    """DenseNet-like: pre-activation BN -> ReLU -> 1x1 -> BN -> ReLU -> 3x3, concatenated onto
    the block's input; a transition (BN -> ReLU -> 1x1 -> AvgPool 2x2) between blocks; the last
    block's concatenation goes through BN -> ReLU into a global average pooling (``pooled``) or
    is the output."""
    x = param("x", [1, 8, 16, 16])
    h = pool("MaxPool", conv(x, 8, 16, 3, 1, "stem", relu=stem_relu), 3, 2, "stem_pool")
    c, seed = 16, 2
    for blk in range(blocks):
        for layer in range(layers):
            t = opforge.op("Relu", batch_norm(h, c, seed, f"b{blk}l{layer}_bn"), name=f"b{blk}l{layer}_bn_relu")
            t = conv(t, c, 16, 1, seed + 1, f"b{blk}l{layer}_1x1")  # (its BN folds into the convolution)
            t = conv(t, 16, 8, 3, seed + 2, f"b{blk}l{layer}_3x3", relu=False)
            h = opforge.op("Concat", h, t, axis=1, name=f"b{blk}l{layer}_concat")
            c, seed = c + 8, seed + 3
        if blk + 1 < blocks:
            t = opforge.op("Relu", batch_norm(h, c, seed, f"t{blk}_bn"), name=f"t{blk}_relu")
            h = pool("AvgPool", conv(t, c, c // 2, 1, seed + 1, f"t{blk}_conv", relu=False), 2, 2, f"t{blk}_pool")
            c, seed = c // 2, seed + 2
    h = opforge.op("Relu", batch_norm(h, c, seed, "final_bn"), name="final_relu")
    return Model([gap(h) if pooled else h], [x], name="dense")


def fire() -> Model:
    """SqueezeNet-like: squeeze 1x1 -> (expand 1x1 | expand 3x3) -> Concat, twice, a MaxPool between."""
    x = param("x", [1, 8, 16, 16])
    h = conv(x, 8, 32, 3, 1, "stem")
    for f in range(3):
        s = conv(h, 32, 8, 1, 10 * f + 2, f"f{f}_squeeze")
        h = opforge.op("Concat", conv(s, 8, 16, 1, 10 * f + 3, f"f{f}_e1"), conv(s, 8, 16, 3, 10 * f + 4, f"f{f}_e3"),
                       axis=1, name=f"f{f}_concat")
        if f == 0:
            h = pool("MaxPool", h, 3, 2, "f0_pool")
    return Model([gap(conv(h, 32, 10, 1, 50, "classifier"))], [x], name="fire")


def run(core: Any, model: Model, x: np.ndarray, precision: str, threads: int = 1) -> tuple[np.ndarray, dict[str, Any]]:
    compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": precision, "ENABLE_PROFILING": True,
                                                 "INFERENCE_NUM_THREADS": threads})
    request = compiled.create_infer_request()
    got = np.asarray(request.infer([x])[0])
    return got, {r.node_name: r for r in request.get_profiling_info() if r.status == "EXECUTED"}


def assert_bf16_close(got: np.ndarray, want: np.ndarray) -> None:
    # bf16 rounding of every stored tensor and operand (8 bits of mantissa, ~4e-3 each), not
    # more; and it really rounded (an f32 program agrees to ~1e-6)
    rel = np.abs(got.astype(np.float64) - want).max() / np.abs(want).max()
    assert 1e-4 < rel < 3e-2, rel


def exec_types(rows: dict[str, Any], node_type: str) -> dict[str, str]:
    return {name: r.exec_type for name, r in rows.items() if r.node_type == node_type}


@needs_bf16
@pytest.mark.parametrize("threads", [1, 2])
def test_inception_modules_stay_bf16(core: Any, threads: int) -> None:
    model, x = inception(), rand((1, 8, 16, 16), seed=7)
    want, _ = run(core, model, x, "f32")
    got, rows = run(core, model, x, "bf16", threads)
    assert_bf16_close(got, want)
    # the Concat -> Relu -> pools of each module run on bf16
    relus = exec_types(rows, "Relu")
    assert relus["m0_relu"] == "loop:bf16" and relus["m1_relu"] == "loop:bf16", relus
    pools = exec_types(rows, "MaxPool") | exec_types(rows, "AvgPool")
    assert all("bf16" in e for e in pools.values()), pools
    # no conversion between the blocks' kernels, and the Concats are oneDNN's (same-layout bf16
    # inputs), not the reorder-to-plain path
    assert not any(r.node_type == "Reorder" and n != "output_reorder" for n, r in rows.items()), rows
    concats = exec_types(rows, "Concat")
    assert all("reorder" not in e for e in concats.values()), concats


@needs_bf16
def test_inception_stores_less_in_bf16(core: Any) -> None:
    # the Concat outputs and the tensors around them are bf16: the program's planned bytes drop
    # by at least the two 64-channel concatenations' half (16x16 and 8x8 pixels)
    model = inception()
    plans = {}
    for prec in ("f32", "bf16"):
        compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": prec})
        plans[prec] = compiled._executable.programs()[((1, 8, 16, 16),)].program.memory_plan()
    assert plans["f32"]["unplanned_bytes"] - plans["bf16"]["unplanned_bytes"] >= (16 * 16 + 8 * 8) * 64 * 2


@needs_bf16
def test_inception_keeps_nan_and_inf(core: Any) -> None:
    # positive weights: a +inf / -inf / NaN input pixel makes its conv outputs +inf / -inf / NaN
    # in every channel; the bf16 Concat, Relu (NaN stays NaN, -inf becomes 0), MaxPool (NaN wins
    # a window, +inf beats every number) and AvgPool carry them as the f32 program does
    model = inception(positive=True, size=40)
    x = rand((1, 8, 40, 40), seed=7)
    x[0, :, 5, 5] = np.nan
    x[0, :, 33, 34] = np.inf
    x[0, :, 5, 34] = -np.inf
    x[0, :, 33, 5] = np.inf
    x[0, :, 34, 5] = -np.inf  # a window with both: the f32 convolution's inf - inf = NaN
    want, _ = run(core, model, x, "f32")
    got, rows = run(core, model, x, "bf16")
    assert np.isnan(want).any() and np.isposinf(want).any()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isposinf(got), np.isposinf(want))
    np.testing.assert_array_equal(np.isneginf(got), np.isneginf(want))
    finite = np.isfinite(want)
    assert_bf16_close(got[finite], want[finite])
    assert exec_types(rows, "Relu")["m0_relu"] == "loop:bf16"


@needs_bf16
@pytest.mark.parametrize("threads", [1, 2])
def test_dense_blocks_stay_bf16(core: Any, threads: int) -> None:
    model, x = dense(), rand((1, 8, 16, 16), seed=8)
    want, _ = run(core, model, x, "f32")
    got, rows = run(core, model, x, "bf16", threads)
    assert_bf16_close(got, want)
    bns = exec_types(rows, "BatchNormInference")
    # every pre-activation BN -> ReLU reads and writes bf16, the last one too: the global pooling
    # (a spatial ReduceMean) sums the bf16 values into f32 (bf16_se)
    assert bns and all(e == "scale_shift_relu:nhwc_bf16" for e in bns.values()), bns
    assert exec_types(rows, "ReduceMean")["gap"].endswith(":bf16")
    assert all("bf16" in e for e in exec_types(rows, "AvgPool").values())
    assert not any(r.node_type == "Reorder" and n != "output_reorder" for n, r in rows.items()), rows


@needs_bf16
def test_dense_block_keeps_nan(core: Any) -> None:
    # a NaN pixel spreads through the 3x3 convolutions and the concatenations; BN (+ ReLU, which
    # keeps NaN) in bf16 keeps it where f32 has it
    model, x = dense(blocks=1, pooled=False, stem_relu=False), rand((1, 8, 16, 16), seed=8)
    x[0, 2, 5, 5] = np.nan
    want, _ = run(core, model, x, "f32")
    got, _ = run(core, model, x, "bf16")
    assert np.isnan(want).any() and not np.isnan(want).all()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))


@needs_bf16
def test_fire_modules_stay_bf16(core: Any) -> None:
    model, x = fire(), rand((1, 8, 16, 16), seed=9)
    want, _ = run(core, model, x, "f32")
    got, rows = run(core, model, x, "bf16")
    assert_bf16_close(got, want)
    assert "bf16" in rows["f0_pool"].exec_type, rows["f0_pool"].exec_type
    assert not any(r.node_type == "Reorder" and n != "output_reorder" for n, r in rows.items()), rows


@needs_bf16
def test_bf16_max_pool_orders_specials_exactly(core: Any) -> None:
    # the bf16 channels-last MaxPool compares bf16 as integer keys: every special (+-0, +-inf,
    # NaN of either sign, the largest and smallest numbers) must land as the f32 comparison would.
    # 1x1 convolutions with one weight 1 per channel (a 0 weight would make inf * 0 = NaN): the
    # convolution writes the (bf16-exact) input unchanged, the pool pools it, the next one reads it.
    c = 32
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 3.3895314e38, -3.3895314e38,
                         1.1754944e-38, -1.1754944e-38, 1.0, -1.0, 0.5, -2.0], np.float32)
    rng = np.random.default_rng(3)
    x = rng.choice(specials, size=(1, c, 9, 9)).astype(np.float32)
    x[0, :, :3, :3] = -np.inf  # a window of -inf only
    xp = param("x", [1, c, 9, 9])
    ones = np.ones((c, 1, 1, 1, 1), np.float32)
    g = opforge.op("GroupConvolution", xp, const(ones), strides=[1, 1], pads_begin=[0, 0],
                   pads_end=[0, 0], dilations=[1, 1], name="identity")
    p = pool("MaxPool", g, 3, 1, "pool")
    y = opforge.op("GroupConvolution", p, const(ones), strides=[1, 1], pads_begin=[0, 0],
                   pads_end=[0, 0], dilations=[1, 1], name="identity2")
    model = Model([y], [xp], name="pool_specials")
    want, _ = run(core, model, x, "f32")
    got, rows = run(core, model, x, "bf16")
    assert "bf16" in rows["pool"].exec_type, rows["pool"].exec_type
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[~np.isnan(want)], want[~np.isnan(want)])  # (+0 == -0)


@needs_bf16
@pytest.mark.parametrize(("k", "stride", "pad", "exclude", "rounding"), [
    (3, 1, 1, False, "floor"),  # Inception's pooling branch (the padding counted)
    (3, 1, 1, True, "floor"),
    (2, 2, 0, False, "floor"),  # DenseNet's transition
    (3, 2, 1, True, "ceil"),
    (3, 2, 0, False, "ceil"),  # the padding counted past the explicit pads: oneDNN's pooling
])
def test_bf16_avg_pool_geometries(core: Any, k: int, stride: int, pad: int, exclude: bool, rounding: str) -> None:
    # a bf16 AvgPool between two bf16 convolutions agrees with the f32 program within bf16
    # rounding, NaN and inf where f32 has them (positive weights: a pixel's +inf stays +inf)
    xp = param("x", [1, 8, 15, 15])
    h = conv(xp, 8, 40, 1, 1, "in", relu=False, positive=True)
    p = opforge.op("AvgPool", h, strides=[stride, stride], pads_begin=[pad, pad], pads_end=[pad, pad],
                   kernel=[k, k], exclude_pad=exclude, rounding_type=rounding, auto_pad="explicit", name="pool")
    model = Model([conv(p, 40, 8, 1, 2, "out", relu=False, positive=True)], [xp], name="avg_pool")
    x = rand((1, 8, 15, 15), seed=4)
    x[0, :, 2, 3] = np.nan
    x[0, :, 11, 12] = np.inf
    want, _ = run(core, model, x, "f32")
    got, rows = run(core, model, x, "bf16")
    assert "bf16" in rows["pool"].exec_type, rows["pool"].exec_type
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isposinf(got), np.isposinf(want))
    finite = np.isfinite(want)
    assert_bf16_close(got[finite], want[finite])
