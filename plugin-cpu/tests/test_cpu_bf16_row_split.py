"""A bf16 MatMul with constant weights at 2 threads runs as chunks of rows, each a one-thread
oneDNN primitive on the whole MatMul's packed weights, claimed by the threads from a shared
counter (core/matmul_row_split.cpp on core/chunk_pool.cpp), instead of oneDNN's own static
2-thread split: the exec type says ``+rowsK``. A row of the source gives the same row of the result
with the same bias and post-ops (GELU, a residual added in place, a gated FFN's operand chunked
the same way), so every output is the same f32 sum of the same bf16 products as in the unsplit
primitive: bit-exact against the 1-thread program, and within bf16 rounding of ONNX Runtime's f32.
MatMuls the split does not take (too few rows, two run-time operands) keep oneDNN's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from opforge_cpu._loader import load_core

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from cpu_testing import bf16_run as run  # noqa: E402
from cpu_testing import check_bf16_split  # noqa: E402
from onnx_graph import OnnxGraph  # noqa: E402  (after onnx is known to be there)
from test_cpu_gated_ffn import gated_ffn  # noqa: E402

needs_bf16 = pytest.mark.skipif(not bool(load_core().native_bf16()),
                                reason="this host has no bf16 arithmetic (AVX512_BF16/AMX)")


class Graph(OnnxGraph):
    def linear(self, x: str, cin: int, cout: int, bias: bool = True) -> str:
        y = self.node("MatMul", [x, self.const(self.rng.standard_normal((cin, cout)) / np.sqrt(cin))])
        return self.node("Add", [y, self.const(self.rng.standard_normal(cout) * 0.1)]) if bias else y

    def gelu(self, x: str) -> str:
        # as torch exports nn.GELU: x * 0.5 * (1 + erf(x / sqrt(2)))
        e = self.node("Erf", [self.node("Div", [x, self.const(np.float32(np.sqrt(2.0)))])])
        return self.node("Mul", [self.node("Mul", [x, self.node("Add", [e, self.const(np.float32(1.0))])]),
                                 self.const(np.float32(0.5))])


def ffn(path: Path, shape: tuple[int, ...], hidden: int, ff: int) -> Path:
    """x -> (x W1 + b1, GELU) W2 + b2 + x -> (.) W3: a transformer FFN with its residual, then a
    projection without bias of the sum."""
    g = Graph(hidden + ff + shape[-2])
    h = g.gelu(g.linear("x", hidden, ff))
    y = g.node("Add", [g.linear(h, ff, hidden), "x"])
    out = g.linear(y, hidden, 3 * hidden, bias=False)
    return g.save(path, shape, [out, y])


def check(path: Path, x: np.ndarray) -> dict[str, str]:
    """Bit-exact at 2 threads (split) and 1 (unsplit); within bf16 rounding of ONNX Runtime f32.
    The 2-thread exec types."""
    return check_bf16_split(path, x, "+rows")[1]


def split_steps(types: dict[str, str]) -> list[str]:
    return sorted(t for t in types.values() if "+rows" in t)


def amx(types: dict[str, str]) -> bool:
    return "amx" in "".join(types.values())


@needs_bf16
@pytest.mark.parametrize(("shape", "hidden", "ff"), [((1, 197, 192), 192, 768), ((2, 50, 128), 128, 256),
                                                     ((77, 96), 96, 384), ((3, 29, 64), 64, 256)])
def test_ffn_splits_bit_exact(tmp_path: Path, shape: tuple[int, ...], hidden: int, ff: int) -> None:
    # rows not a multiple of 16 (197, 77, 87), batch dimensions taken as rows (2 x 50, 3 x 29)
    path = ffn(tmp_path / "m.onnx", shape, hidden, ff)
    x = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    types = check(path, x)
    if amx(types):
        # fc1 + GELU, fc2 + residual, the last projection
        assert len(split_steps(types)) == 3, types
        assert all("ref" not in t for t in types.values()), types
        assert all(t.rsplit("+rows", 1)[1].isdigit() for t in split_steps(types)), types


@needs_bf16
def test_gated_ffn_splits_bit_exact(tmp_path: Path) -> None:
    # the second projection's Multiply by the gate is a post-op whose operand is chunked by rows
    path = gated_ffn(tmp_path / "m.onnx", s=120, e=96, f=256)
    x = np.random.default_rng(7).standard_normal((1, 120, 96)).astype(np.float32)
    types = check(path, x)
    if amx(types):
        assert len(split_steps(types)) == 3, types


@needs_bf16
def test_matmuls_the_split_does_not_take(tmp_path: Path) -> None:
    # 48 rows (fewer than two chunks of 32) keep oneDNN's primitive; so does a product of two
    # run-time operands (x x^T: attention's scores)
    g = Graph(3)
    small = g.linear("x", 256, 512)
    scores = g.node("MatMul", ["x", g.node("Transpose", ["x"], perm=[0, 2, 1])])
    path = g.save(tmp_path / "m.onnx", (1, 48, 256), [small, scores])
    x = np.random.default_rng(2).standard_normal((1, 48, 256)).astype(np.float32)
    types = check(path, x)
    assert not split_steps(types), types
    # 1 MB of bf16 weights (512 x 1024): every chunk would stream them all, so oneDNN's split;
    # the 256 KB projection after it splits
    g = Graph(4)
    wide = g.linear(g.linear("x", 512, 1024), 1024, 128)
    path = g.save(tmp_path / "w.onnx", (1, 100, 512), [wide])
    types = check(path, np.random.default_rng(4).standard_normal((1, 100, 512)).astype(np.float32))
    if amx(types):
        assert len(split_steps(types)) == 1, types


@needs_bf16
def test_split_switch_off(tmp_path: Path) -> None:
    # OPFORGE_CPU_MATMUL_SPLIT=0 (read once a process) keeps oneDNN's 2-thread primitive: a child
    # process compares its outputs and exec types with this one's
    import os
    import subprocess
    import sys
    path = ffn(tmp_path / "m.onnx", (1, 100, 128), 128, 512)
    x = np.random.default_rng(3).standard_normal((1, 100, 128)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    got, types = run(path, x, 2)
    code = ("import sys, numpy as np; sys.path.insert(0, sys.argv[3]); from test_cpu_bf16_row_split import run; "
            "from pathlib import Path; g, t = run(Path(sys.argv[1]), np.load(sys.argv[2]), 2); "
            "np.save(sys.argv[2] + '.out.npy', g[0]); print(repr(sorted(t.values())))")
    env = dict(os.environ, OPFORGE_CPU_MATMUL_SPLIT="0")
    res = subprocess.run([sys.executable, "-c", code, str(path), str(tmp_path / "x.npy"), str(Path(__file__).parent)],
                         env=env, capture_output=True, text=True, timeout=120, check=True)
    assert "+rows" not in res.stdout, res.stdout
    off = np.load(str(tmp_path / "x.npy") + ".out.npy")
    # (oneDNN's 2-thread primitive may sum in another order than the 1-thread chunks)
    np.testing.assert_allclose(got[0], off, rtol=1e-5, atol=1e-5 * float(np.abs(off).max()))
    if amx(types):
        assert len(split_steps(types)) == 3, types


@needs_bf16
def test_odd_values_split_bit_exact(tmp_path: Path) -> None:
    # NaN, +-inf, f32 denormals, -0 and values at bf16 rounding ties in the source: the chunks give
    # the bytes of the 1-thread program (NaN rows and all)
    path = ffn(tmp_path / "m.onnx", (1, 130, 64), 64, 256)
    x = np.random.default_rng(9).standard_normal((1, 130, 64)).astype(np.float32)
    x[0, 3, :4] = [np.nan, np.inf, -np.inf, -0.0]
    x[0, 70, :3] = [1e-40, -3e-39, np.float32(1.0) + np.float32(2.0 ** -8)]  # denormals, a tie
    x[0, 129, 5] = np.float32(1.0) + np.float32(3 * 2.0 ** -9)  # just above a tie
    one, _ = run(path, x, 1)
    two, types = run(path, x, 2)
    for a, b in zip(one, two, strict=True):
        np.testing.assert_array_equal(b, a)
    if amx(types):
        assert len(split_steps(types)) == 3, types

