"""The host rule for grouped convolutions of 4 or 8 channels a group (ResNeXt's layers 1 and 2;
core/nn.cpp ``grouped_small_nhwc_on_this_host``, stop 20; f32 on AMX hosts since stop 28): such a
convolution whose source a 1x1 convolution wrote channels-last runs oneDNN's JIT kernel on nhwc
(f32 ``jit:avx512_core`` / ``jit:avx2``, bf16 ``jit_bf16`` where there is no AMX; AMX hosts merge
bf16 groups instead) instead of nChw4c / nChw8c,
which cost a reorder of the source before it and one of its output inside the next 1x1
convolution. ``OPFORGE_CPU_GROUPED_SMALL_NHWC=0`` keeps oneDNN's layout.

onnx.helper models of ResNeXt bottlenecks (1x1 -> grouped 3x3, stride 1 and 2 -> 1x1 + residual)
with seeded weights, each run in a child process (the plugin reads a switch once a process) with
the rule on and off, at 1 and 2 threads: f32 within 1e-5 of ONNX Runtime and bit-identical between
the two layouts (the same kernel's sums), bf16 within bf16 rounding of ONNX Runtime f32. The
grouped convolutions' destination layout is read from the program's primitive list."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from opforge_cpu._loader import load_core

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from cpu_testing import ONEDNN_HAS_AMX  # noqa: E402
from onnx_graph import OnnxGraph  # noqa: E402  (after onnx is known to be there)

CORE = load_core()
NATIVE_BF16 = bool(CORE.native_bf16())
# the rule's hosts: no AMX, and an ISA with a JIT grouped kernel on nhwc (AVX-512, or AVX2 for 8
# channels a group; AVX2 gives groups of 4 a gemm convolution, which the rule does not take)
AVX512 = CORE.cpu_isa().startswith("avx512")
SWITCH = "OPFORGE_CPU_GROUPED_SMALL_NHWC"
# the other layout rules stay at their defaults in the children; the suite's conftest turns the
# bf16 regroup host rule off (merging everywhere), which would hide this rule in bf16
DROP = (SWITCH, "OPFORGE_CPU_REGROUP_HOST_RULE", "OPFORGE_CPU_GROUPED_BF16_NHWC")

_CHILD = """
import json, sys
import numpy as np
import opforge
path, xfile, threads, prec = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
x = np.load(xfile)
core = opforge.Core()
compiled = core.compile_model(core.read_model(path), "CPU", {"INFERENCE_NUM_THREADS": threads,
                                                            "INFERENCE_PRECISION_HINT": prec})
req = compiled.create_infer_request()
got = [np.asarray(r).copy() for r in req.infer({"x": x}).to_tuple()]
req.infer({"x": x * 0.5})
again = req.infer({"x": x}).to_tuple()
for g, a in zip(got, again):
    np.testing.assert_array_equal(np.asarray(a), g)  # no stale scratch between runs
np.savez(xfile + ".out.npz", *got)
rows = [r for r in compiled._executable.primitives() if r["node_type"] == "GroupConvolution"
        and r["kind"] == "convolution"]
print(json.dumps([[r["impl"], r["src"], r["dst"]] for r in rows]))
"""


class Graph(OnnxGraph):
    def resnext_block(self, x: str, cin: int, width: int, cout: int, cpg: int, stride: int) -> str:
        """1x1 -> grouped 3x3 of `cpg` channels a group (stride) -> 1x1, + (projected) residual."""
        h = self.relu(self.conv(x, cin, width))
        h = self.relu(self.conv(h, width, width, 3, group=width // cpg, stride=stride))
        y = self.conv(h, width, cout)
        short = x if stride == 1 and cin == cout else self.conv(x, cin, cout, stride=stride)
        return self.relu(self.node("Add", [y, short]))


def in_child(tmp_path: Path, path: Path, x: np.ndarray, threads: int, prec: str,
             rule_on: bool) -> tuple[list[np.ndarray], list[list[str]]]:
    np.save(tmp_path / "x.npy", x)
    env = {k: v for k, v in os.environ.items() if k not in DROP}
    if not rule_on:
        env[SWITCH] = "0"
    res = subprocess.run([sys.executable, "-c", _CHILD, str(path), str(tmp_path / "x.npy"), str(threads), prec],
                         env=env, capture_output=True, text=True, timeout=180, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    out = np.load(str(tmp_path / "x.npy") + ".out.npz")
    return [out[f"arr_{i}"] for i in range(len(out.files))], json.loads(res.stdout.strip().splitlines()[-1])


def model(tmp_path: Path, cpg: int, size: int) -> tuple[Path, np.ndarray]:
    g = Graph(cpg * 10 + size)
    h = g.relu(g.conv("x", 8, 64, 3))
    h = g.resnext_block(h, 64, 64, 64, cpg, 1)
    h = g.resnext_block(h, 64, 128, 128, cpg, 2)  # strided, projected residual
    out = g.node("GlobalAveragePool", [h])
    path = g.save(tmp_path / "m.onnx", (1, 8, size, size), [out, h])
    x = np.random.default_rng(size).standard_normal((1, 8, size, size)).astype(np.float32)
    return path, x


def nhwc_expected(cpg: int, prec: str) -> bool:
    """Whether the rule makes both grouped convolutions nhwc on this host."""
    if prec == "bf16":
        # jit_bf16 on AVX512_BF16 hosts without AMX; AMX hosts merge the groups instead
        return not ONEDNN_HAS_AMX
    # f32 has no AMX kernel: AVX-512 (AMX hosts too, since stop 28) runs the JIT kernel nhwc;
    # AVX2 has a JIT kernel for groups of 8, gemm for groups of 4
    return AVX512 or cpg == 8


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("cpg", [4, 8])
@pytest.mark.parametrize("size", [28, 15])
def test_f32_small_groups_over_nhwc(tmp_path: Path, threads: int, cpg: int, size: int) -> None:
    path, x = model(tmp_path, cpg, size)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    results = {}
    for rule_on in (True, False):
        got, rows = in_child(tmp_path, path, x, threads, "f32", rule_on)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5 * float(np.abs(w).max()))
        assert len(rows) == 2, rows
        blocked = [dst.endswith(":blocked") for _impl, _src, dst in rows]
        if rule_on and nhwc_expected(cpg, "f32"):
            assert not any(blocked) and all(impl.startswith("jit") for impl, _s, _d in rows), rows
        if not rule_on and AVX512:
            assert all(blocked), rows  # oneDNN's nChw4c / nChw8c
        results[rule_on] = got
    if nhwc_expected(cpg, "f32"):
        # the same JIT kernel in either layout: the same sums, bit for bit
        for a, b in zip(results[True], results[False], strict=True):
            np.testing.assert_array_equal(a, b)


@pytest.mark.skipif(not NATIVE_BF16, reason="this host has no bf16 arithmetic (AVX512_BF16/AMX)")
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("cpg", [4, 8])
def test_bf16_small_groups_over_nhwc(tmp_path: Path, threads: int, cpg: int) -> None:
    path, x = model(tmp_path, cpg, 28)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    results = {}
    for rule_on in (True, False):
        got, rows = in_child(tmp_path, path, x, threads, "bf16", rule_on)
        for g, w in zip(got, want, strict=True):
            scale = float(np.abs(w).max())
            assert np.abs(g - w).max() / scale < 3e-2, np.abs(g - w).max() / scale
        if ONEDNN_HAS_AMX:
            # AMX hosts merge the small groups into groups of 32 (regroup_bf16: AMX brgconv on
            # block-diagonal weights) and keep each node's exact twin on the original groups for
            # sources with inf or NaN, so each convolution lists two primitives, the merged first
            impls = [impl for impl, _s, _d in rows]
            assert len(rows) == 4 and impls[0::2] == ["brgconv:avx512_core_amx"] * 2, rows
        else:
            assert len(rows) == 2, rows
            assert all(impl.startswith("jit_bf16") for impl, _s, _d in rows), rows
            blocked = [dst.endswith(":blocked") for _impl, _src, dst in rows]
            assert (not any(blocked)) if rule_on else all(blocked), rows
        results[rule_on] = got
    if nhwc_expected(cpg, "bf16"):
        # the same jit_bf16 kernel in either layout: f32 sums of the same bf16 products
        for a, b in zip(results[True], results[False], strict=True):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-5 * float(np.abs(b).max()))


def test_depthwise_and_wide_groups_are_not_taken(tmp_path: Path) -> None:
    # groups of 1 (depthwise: their own kernels), 2 and 16 are outside the rule: whatever the
    # program chose before, and the numbers still right
    g = Graph(3)
    h = g.relu(g.conv("x", 8, 32, 3))
    h = g.relu(g.conv(h, 32, 32, 3, group=32))
    h = g.relu(g.conv(h, 32, 32, 3, group=16))
    h = g.relu(g.conv(h, 32, 32, 3, group=2))
    path = g.save(tmp_path / "m.onnx", (1, 8, 14, 14), [g.conv(h, 32, 8)])
    x = np.random.default_rng(4).standard_normal((1, 8, 14, 14)).astype(np.float32)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    on, rows_on = in_child(tmp_path, path, x, 1, "f32", True)
    off, rows_off = in_child(tmp_path, path, x, 1, "f32", False)
    np.testing.assert_allclose(on[0], want[0], rtol=1e-5, atol=1e-5 * float(np.abs(want[0]).max()))
    np.testing.assert_array_equal(on[0], off[0])
    assert rows_on == rows_off
