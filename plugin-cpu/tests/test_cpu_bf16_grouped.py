"""bf16 grouped convolutions with few channels a group (ResNeXt's 32 groups of 4, 8 and 16) run
as fewer groups of 32 channels with block-diagonal weights on oneDNN's AMX brgconv (core/nn.cpp
``regroup_bf16``): the same bf16 products summed in f32 as the original groups, and a source
holding an inf or NaN runs the exact grouped primitive, so no inf/NaN spills across groups."""

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


def to_bf16(a: np.ndarray) -> np.ndarray:
    """f32 -> nearest bf16 (ties to even), as f32: oneDNN's f32 -> bf16 reorder."""
    bits = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32)


def group_conv(x: np.ndarray, w: np.ndarray, b: np.ndarray, stride: int) -> np.ndarray:
    """3x3, pad 1 grouped convolution in f64 (the exact sums of the given operands);
    w is [G, O/G, I/G, 3, 3]."""
    g, ocg, icg = w.shape[:3]
    n, _, h, wd = x.shape
    oh, ow = (h - 1) // stride + 1, (wd - 1) // stride + 1
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    y = np.zeros((n, g * ocg, oh, ow))
    for k in range(g):
        xs = xp[:, k * icg:(k + 1) * icg]
        for i in range(3):
            for j in range(3):
                win = xs[:, :, i:i + stride * (oh - 1) + 1:stride, j:j + stride * (ow - 1) + 1:stride]
                y[:, k * ocg:(k + 1) * ocg] += np.einsum("nchw,oc->nohw", win, w[k, :, :, i, j].astype(np.float64))
    return y + b.reshape(1, -1, 1, 1)


def grouped_model(channels: int, groups: int, stride: int, seed: int,
                  relu: bool = True) -> tuple[Model, np.ndarray, np.ndarray]:
    cpg = channels // groups
    x = param("x", [1, channels, 14, 14])
    w = rand((groups, cpg, cpg, 3, 3), seed=seed) * (1.0 / (9 * cpg)) ** 0.5
    b = rand((channels,), seed=seed + 1) * 0.1
    y = opforge.op("GroupConvolution", x, const(w), strides=[stride, stride], pads_begin=[1, 1], pads_end=[1, 1],
                   dilations=[1, 1], name="gconv")
    y = opforge.op("Add", y, const(b.reshape(1, -1, 1, 1)), name="bias" if relu else "out")
    return Model([opforge.op("Relu", y, name="out") if relu else y], [x], name="grouped"), w, b


def run(core: Any, model: Model, x: np.ndarray, precision: str, threads: int = 1) -> tuple[np.ndarray, dict[str, Any]]:
    compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": precision, "ENABLE_PROFILING": True,
                                                 "INFERENCE_NUM_THREADS": threads})
    request = compiled.create_infer_request()
    got = np.asarray(request.infer([x])[0])
    rows = {r.node_name: r for r in request.get_profiling_info() if r.status == "EXECUTED"}
    return got, rows


@needs_bf16
@pytest.mark.parametrize(("channels", "groups", "stride"), [(128, 32, 1), (128, 32, 2), (256, 32, 1),
                                                             (512, 32, 1), (48, 4, 1), (96, 8, 2)])
def test_bf16_grouped_conv_is_exact_on_bf16_operands(core: Any, channels: int, groups: int, stride: int) -> None:
    model, w, b = grouped_model(channels, groups, stride, seed=channels + groups + stride)
    x = rand((1, channels, 14, 14), seed=7)
    got, rows = run(core, model, x, "bf16")
    want_bf16 = np.maximum(group_conv(to_bf16(x), to_bf16(w), b, stride), 0)
    want_f32 = np.maximum(group_conv(x, w, b, stride), 0)
    scale = np.abs(want_f32).max()
    # the merged groups' zero weights add exact zeros: the result is the f32 sum of the bf16
    # products of each original group (~1e-6), nothing of the neighbouring groups
    assert np.abs(got - want_bf16).max() / scale < 2e-5
    assert np.abs(got - want_f32).max() / scale < 2e-2
    exec_type = rows["out"].exec_type
    assert "ref" not in exec_type, exec_type
    if "amx" in exec_type:
        # (on AMX hosts: oneDNN 3.2's brgconv, not jit_bf16, for every group width)
        assert exec_type.startswith("brgconv"), exec_type


@needs_bf16
@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_bf16_grouped_conv_keeps_non_finite_inputs_in_their_group(core: Any, bad: float) -> None:
    # an inf/NaN in group 0's channels reaches group 0's outputs only, as in f32: the merged
    # groups' zero weights would make it NaN in the 7 groups merged with it (0 * inf)
    # (no Relu: oneDNN's ReLU post-op makes NaN 0, in f32 as well)
    model, w, b = grouped_model(128, 32, 1, seed=3, relu=False)
    x = rand((1, 128, 14, 14), seed=8)
    x[0, 1, 5, 6] = bad
    got, _ = run(core, model, x, "bf16")
    want, _ = run(core, model, x, "f32")
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(np.isinf(got), np.isinf(want))
    assert not np.isfinite(got[0, :4]).all()  # group 0 did see it
    assert np.isfinite(got[0, 4:]).all()
    fin = np.isfinite(want)
    assert np.abs(got[fin] - want[fin]).max() / np.abs(want[fin]).max() < 2e-2
    # and the next finite input takes the fast path again, with the right numbers
    x2 = rand((1, 128, 14, 14), seed=9)
    got2, _ = run(core, model, x2, "bf16", threads=2)
    want2 = group_conv(to_bf16(x2), to_bf16(w), b, 1)
    assert np.abs(got2 - want2).max() / np.abs(want2).max() < 2e-5


@needs_bf16
@pytest.mark.parametrize("threads", [1, 2])
def test_bf16_resnext_block_matches_f32(core: Any, threads: int) -> None:
    # 1x1 -> grouped 3x3 (bf16 in, bf16 out) -> 1x1 + residual: the grouped convolution between
    # two bf16 ones, within the bf16 tolerance of the f32 program
    x = param("x", [1, 64, 16, 16])

    def conv(v: Any, w: np.ndarray, name: str, op: str = "Convolution", pad: int = 0) -> Any:
        y = opforge.op(op, v, const(w), strides=[1, 1], pads_begin=[pad, pad], pads_end=[pad, pad],
                       dilations=[1, 1], name=name)
        return opforge.op("Relu", y, name=f"{name}_relu")

    a = conv(x, rand((128, 64, 1, 1), seed=1) * 0.125, "reduce")
    g = conv(a, rand((32, 4, 4, 3, 3), seed=2) * (1 / 36) ** 0.5, "group", "GroupConvolution", 1)
    e = opforge.op("Convolution", g, const(rand((64, 128, 1, 1), seed=3) * (1 / 128) ** 0.5), strides=[1, 1],
                   pads_begin=[0, 0], pads_end=[0, 0], dilations=[1, 1], name="expand")
    y = opforge.op("Relu", opforge.op("Add", e, x, name="res"), name="out")
    model = Model([y], [x], name="resnext_block")
    feeds = rand((1, 64, 16, 16), seed=4)
    want, _ = run(core, model, feeds, "f32")
    got, _ = run(core, model, feeds, "bf16", threads)
    rel = np.abs(got.astype(np.float64) - want).max() / np.abs(want).max()
    assert 1e-4 < rel < 3e-2, rel
