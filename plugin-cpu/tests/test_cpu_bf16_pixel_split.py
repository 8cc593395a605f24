"""A 1x1 bf16 convolution at 2 threads runs as two pixel chunks, each a one-thread oneDNN
primitive, claimed by the threads from a shared counter (core/conv_pixel_split.cpp on
core/chunk_pool.cpp), instead of oneDNN's own static 2-thread split: the exec type says
``+pixels2``. A chunk of a channels-last tensor's pixels is a dense tensor of its own with the same
weights, bias and post-ops (ReLU, a residual summed in place or read as a binary post-op), so every
output is the same f32 sum of the same bf16 products as in the unsplit primitive: bit-exact against
the 1-thread program, and within bf16 rounding of ONNX Runtime's f32. Convolutions the split does
not take (strided, padded, 3x3, grouped, 7x7 maps: too few pixels a thread, and 1x1s ending in a
Swish, which ran slower split on Emerald Rapids: conv_pixel_split.cpp) keep oneDNN's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from opforge_cpu._loader import load_core

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from cpu_testing import bf16_in_child, check_bf16_split  # noqa: E402
from cpu_testing import bf16_run as run  # noqa: E402
from test_cpu_bf16_conv_rows import Graph as ConvGraph  # noqa: E402  (after onnx is known to be there)

needs_bf16 = pytest.mark.skipif(not bool(load_core().native_bf16()),
                                reason="this host has no bf16 arithmetic (AVX512_BF16/AMX)")


class Graph(ConvGraph):
    def relu(self, x: str) -> str:
        return self.node("Relu", [x])


def check(path: Path, x: np.ndarray) -> tuple[dict[str, str], dict[str, str]]:
    """Bit-exact at 2 threads (split) and 1 (unsplit); within bf16 rounding of ONNX Runtime f32."""
    return check_bf16_split(path, x, "+pixels")


def split_convs(types: dict[str, str]) -> list[str]:
    return sorted(n for n, t in types.items() if "+pixels" in t)


@needs_bf16
@pytest.mark.parametrize(("cin", "cout", "size", "batch"), [(64, 64, 20, 1), (48, 40, 33, 1), (144, 320, 14, 1),
                                                            (40, 24, 21, 2), (24, 56, 16, 3)])
def test_1x1_chain_splits_bit_exact(tmp_path: Path, cin: int, cout: int, size: int, batch: int) -> None:
    # three 1x1 convolutions with ReLU: bf16 in and out between them (odd channel counts, a pixel
    # count that is not a multiple of 16, batches whose pixels run on across images); each large
    # enough that the step runs on 2 threads at all (step_threads.cpp)
    g = Graph(cin + cout + size)
    h = g.relu(g.conv("x", cin, cout))
    h = g.relu(g.conv(h, cout, cin))
    out = g.conv(h, cin, cout)
    path = g.save(tmp_path / "m.onnx", (batch, cin, size, size), [out])
    x = g.rng.standard_normal((batch, cin, size, size)).astype(np.float32)
    _, types = check(path, x)
    if "amx" in "".join(types.values()):
        assert len(split_convs(types)) >= 2, types
        assert all("ref" not in t for t in types.values()), types


@needs_bf16
def test_residual_block_splits_bit_exact(tmp_path: Path) -> None:
    # ResNet's bottleneck: 1x1 -> 3x3 -> 1x1 + residual -> ReLU, twice: the last 1x1 adds the
    # residual (in place, or as a binary post-op when its type differs) over its chunk's pixels
    g = Graph(5)
    h = g.relu(g.conv("x", 32, 64))
    for _ in range(2):
        y = g.relu(g.conv(h, 64, 32))
        y = g.relu(g.conv(y, 32, 32, 3))
        h = g.relu(g.node("Add", [g.conv(y, 32, 64), h]))
    out = g.node("GlobalAveragePool", [h])
    path = g.save(tmp_path / "m.onnx", (1, 32, 24, 24), [out, h])
    x = np.random.default_rng(1).standard_normal((1, 32, 24, 24)).astype(np.float32)
    _, types = check(path, x)
    if "amx" in "".join(types.values()):
        assert len(split_convs(types)) >= 4, types  # the first and every block's 1x1s


@needs_bf16
def test_convolutions_the_split_does_not_take(tmp_path: Path) -> None:
    # strided and padded 1x1, 3x3, grouped 3x3 and a 1x1 on 6x6 (36 pixels: under 64 a thread)
    g = Graph(9)
    a = g.relu(g.conv("x", 32, 64, stride=2))          # 1x1 stride 2
    b = g.relu(g.conv(a, 64, 64, 3))                   # 3x3
    c = g.relu(g.conv(b, 64, 64, 3, group=4))          # grouped
    d = g.relu(g.conv(c, 64, 48, pads=[1] * 4))            # 1x1 with padding: 16x16 -> 18x18
    e = g.conv(g.node("MaxPool", [d], kernel_shape=[3, 3], strides=[3, 3]), 48, 64)  # 1x1 on 6x6
    f = g.conv(d, 48, 128)                             # 1x1 on 18x18: split
    path = g.save(tmp_path / "m.onnx", (1, 32, 32, 32), [e, f])
    x = np.random.default_rng(2).standard_normal((1, 32, 32, 32)).astype(np.float32)
    _, types = check(path, x)
    if "amx" in "".join(types.values()):
        assert len(split_convs(types)) == 1, types


@needs_bf16
def test_split_switch_off(tmp_path: Path) -> None:
    # OPFORGE_CPU_CONV_SPLIT=0 (read once a process) keeps oneDNN's 2-thread primitive: a child
    # process compares its outputs and exec types with this one's
    g = Graph(11)
    out = g.conv(g.relu(g.conv("x", 64, 96)), 96, 64)
    path = g.save(tmp_path / "m.onnx", (1, 64, 16, 16), [out])
    x = np.random.default_rng(3).standard_normal((1, 64, 16, 16)).astype(np.float32)
    got, types = run(path, x, 2)
    off, off_rows = bf16_in_child(tmp_path, path, x, 2, (), {"OPFORGE_CPU_CONV_SPLIT": "0"})
    assert not [e for _, e in off_rows if "+pixels" in e], off_rows
    np.testing.assert_allclose(got[0], off[0], rtol=1e-5, atol=1e-5 * float(np.abs(off[0]).max()))
    if "amx" in "".join(types.values()):
        assert len(split_convs(types)) == 2, types


@needs_bf16
def test_swish_keeps_onednn_split(tmp_path: Path) -> None:
    # 1x1 expansions as in EfficientNet / RexNet: x * Sigmoid(x) fused as oneDNN's eltwise_swish
    # stays whole (oneDNN's 2-thread primitive), the 1x1s around it with ReLU split; with
    # OPFORGE_CPU_CONV_SPLIT_SWISH=0 (a child process: read once) the Swish one splits as well,
    # and both settings give the outputs of the 1-thread program
    g = Graph(13)
    a = g.conv(g.relu(g.conv("x", 38, 38)), 38, 228)
    swish = g.node("Mul", [a, g.node("Sigmoid", [a])])
    swish_step = g.nodes[-1].name
    relu = g.relu(g.conv(swish, 228, 40))
    out = g.conv(relu, 40, 24)
    path = g.save(tmp_path / "m.onnx", (1, 38, 28, 28), [out])
    x = np.random.default_rng(4).standard_normal((1, 38, 28, 28)).astype(np.float32)
    _, types = check(path, x)
    if "amx" not in "".join(types.values()):
        pytest.skip("the pixel split is taken on AMX hosts only (chunk_splits_on_this_host)")
    at = {n.split("/")[0]: t for n, t in types.items()}
    assert "brgconv" in at[swish_step] and "+pixels" not in at[swish_step], types
    assert len(split_convs(types)) >= 2, types  # the first 1x1 and the ones after the Swish
    got, off_rows = bf16_in_child(tmp_path, path, x, 2, (), {"OPFORGE_CPU_CONV_SPLIT_SWISH": "0"})
    assert len([e for _, e in off_rows if "+pixels" in e]) == len(split_convs(types)) + 1, off_rows
    one_run, _ = run(path, x, 1)
    np.testing.assert_array_equal(got[0], one_run[0])
