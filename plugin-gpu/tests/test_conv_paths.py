"""The convolution paths (``library/conv_fast.py``): Winograd F(2x2, 3x3), split-K of the implicit
GEMM, and the GPU tiles (float4 local reads with 4x4, 4x8, 8x8 accumulators), forced on whatever
device runs the tests, each against the reference within 1e-4 relative."""

from __future__ import annotations

from typing import Any

import numpy as np
import opforge
import pytest
from gpu_util import const, param, rand
from opforge.graph import Model
from opforge.reference import evaluate_model
from opforge_gpu.library import conv_fast
from opforge_gpu.library.nn import TILE_LARGE, TILE_WIDE, TILE_XL


def _conv_block(n: int, cin: int, cout: int, size: tuple[int, int], k: int = 3, stride: int = 1,
                residual: bool = True, pad: int = 1) -> tuple[Model, list[np.ndarray]]:
    """Convolution + BatchNorm (folded into the filters) [+ residual Add] + Relu."""
    x = param([n, cin, *size])
    w = rand([cout, cin, k, k], seed=1) * np.float32(np.sqrt(2.0 / (cin * k * k)))
    y: Any = opforge.op("Convolution", x, const(w), strides=[stride, stride], pads_begin=[pad, pad],
                        pads_end=[pad, pad], dilations=[1, 1])
    bn = [const(rand([cout], seed=s, low=lo, high=hi)) for s, lo, hi in ((2, 0.5, 1), (3, -0.2, 0.2),
                                                                        (4, -0.2, 0.2), (5, 0.5, 1.5))]
    y = opforge.op("BatchNormInference", y, *bn, epsilon=1e-5)
    params = [x]
    feeds = [rand([n, cin, *size], seed=6)]
    if residual:
        shape = tuple(y.output(0).shape)
        r = param(shape, name="r")
        y = opforge.op("Add", y, r)
        params.append(r)
        feeds.append(rand(shape, seed=7))
    return Model([opforge.op("Relu", y)], params), feeds


def _run(core: opforge.Core, model: Model, feeds: list[np.ndarray], path: str,
         tile: tuple[int, int, int, int, int] | None = None, config: dict[str, Any] | None = None,
         rtol: float = 1e-4) -> set[str]:
    with conv_fast.forced(path, tile):
        compiled = core.compile_model(model, "GPU", config or {})
    got = compiled(feeds)[0]
    want = evaluate_model(model, feeds)[0]
    err = float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))
    assert err <= rtol, f"{path} {tile}: max error {err:.2e} relative to the largest output"
    plan = next(iter(compiled._executable.plans.values()))  # type: ignore[attr-defined]
    return {launch.kernel for launch in plan.launches}


@pytest.mark.parametrize(("n", "cin", "cout", "size"), [(1, 16, 24, (9, 9)), (2, 40, 130, (7, 10)),
                                                         (1, 64, 16, (1, 5))])
def test_winograd_matches_the_reference(core: opforge.Core, n: int, cin: int, cout: int,
                                        size: tuple[int, int]) -> None:
    kernels = _run(core, *_conv_block(n, cin, cout, size), "winograd")
    assert {"wino_input", "matmul", "wino_output"} <= kernels


def test_winograd_without_padding_or_epilogue(core: opforge.Core) -> None:
    x = param([2, 8, 6, 7])
    w = rand([5, 8, 3, 3], seed=2)
    m = Model([opforge.op("Convolution", x, const(w), strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0],
                          dilations=[1, 1])], [x])
    assert "wino_output" in _run(core, m, [rand([2, 8, 6, 7])], "winograd")


def test_winograd_is_the_default_for_wide_3x3_convolutions_only(core: opforge.Core) -> None:
    # 28x28 at 64 channels: Winograd wins on every tile choice (PoCL's CPU tile, GPUs of 8-132
    # compute units); at 8x8 a 132-unit GPU's wide tiles pad Winograd's 16 small GEMMs past the
    # direct one's cost, so the plugin rightly keeps the direct GEMM there (seen on an H100)
    assert "wino_input" in _run(core, *_conv_block(1, 64, 64, (28, 28)), "default")
    assert "wino_input" not in _run(core, *_conv_block(1, 32, 32, (8, 8), stride=2, residual=False), "default")
    assert "wino_input" not in _run(core, *_conv_block(1, 4, 32, (8, 8)), "default")


def test_winograd_with_half_storage(core: opforge.Core) -> None:
    model, feeds = _conv_block(1, 24, 16, (6, 6))
    _run(core, model, feeds, "winograd", config={"INFERENCE_PRECISION_HINT": "f16"}, rtol=2e-2)


@pytest.mark.parametrize(("k", "stride", "pad", "residual"), [(3, 1, 1, True), (3, 2, 1, False), (1, 2, 0, False)])
def test_split_k_matches_the_reference(core: opforge.Core, k: int, stride: int, pad: int, residual: bool) -> None:
    # K = 144 * k * k: at least two slices of 4 K-steps for every tile (a GPU's tiles step 16 at a
    # time, PoCL's 8), so the forced split happens on any device
    model, feeds = _conv_block(1, 144, 40, (7, 7), k=k, stride=stride, pad=pad, residual=residual)
    assert "splitk_reduce" in _run(core, model, feeds, "splitk")


@pytest.mark.parametrize(("tile", "paths"), [(TILE_XL, ("gemm", "winograd")), (TILE_WIDE, ("splitk", "matmul")),
                                            (TILE_LARGE, ("gemm", "matmul"))], ids=["xl", "wide", "large"])
def test_gpu_tiles(core: opforge.Core, tile: tuple[int, int, int, int, int], paths: tuple[str, ...]) -> None:
    # the GPU tiles (float4 local reads: 8x8, 4x8, 4x4 accumulators) on any device, through the
    # convolution paths (Winograd's is the batched matmul kernel) and a plain MatMul
    model, feeds = _conv_block(2, 40, 130, (7, 9))
    for path in paths:
        if path == "matmul":
            a, b = param([3, 70, 33], name="a"), param([33, 150], name="b")
            mm = Model([opforge.op("MatMul", a, b, transpose_a=False, transpose_b=False)], [a, b])
            _run(core, mm, [rand([3, 70, 33]), rand([33, 150], seed=1)], "default", tile)
        else:
            _run(core, model, feeds, path, tile)
