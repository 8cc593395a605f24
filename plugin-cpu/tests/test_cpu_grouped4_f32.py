"""Our f32 grouped convolution of 4 channels a group on AVX2 hosts (core/grouped4_conv_f32.cpp,
stop 22): under ONEDNN_MAX_CPU_ISA=AVX2 a GroupConvolution of 4 input and 4 output channels a
group whose source a convolution wrote channels-last runs ``grouped4:avx2_f32`` instead of oneDNN's
``gemm:jit``. onnx.helper models (1x1 convolution -> the grouped one -> a fused activation or none
-> 1x1 convolution) with seeded weights over sizes, strides, paddings (uneven ones too), kernel
shapes, channel counts, batches and 1 and 2 threads, each group of models in one child process
under the cap: within 1e-5 (relative to the output's largest magnitude) of ONNX Runtime and of the
path it replaces (``OPFORGE_CPU_GROUPED4_F32=0``: oneDNN's gemm:jit), the kernel's exec type where
it applies and not where it refuses (dilation, 8 channels a group, channels not a multiple of 8);
without the cap (this AVX-512 host) the kernel never runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx_graph import OnnxGraph  # noqa: E402  (after onnx is known to be there)

SWITCH = "OPFORGE_CPU_GROUPED4_F32"
EXEC = "grouped4:avx2_f32"

_CHILD = """
import json, sys
import numpy as np
import opforge
cases = json.loads(sys.argv[1])
core = opforge.Core()
report = {}
for name, path, xfile, threads in cases:
    x = np.load(xfile)
    compiled = core.compile_model(core.read_model(path), "CPU", {"INFERENCE_NUM_THREADS": threads,
                                  "INFERENCE_PRECISION_HINT": "f32", "ENABLE_PROFILING": True})
    req = compiled.create_infer_request()
    got = [np.asarray(r).copy() for r in req.infer({"x": x}).to_tuple()]
    req.infer({"x": x * 0.5})
    again = req.infer({"x": x}).to_tuple()
    for g, a in zip(got, again):
        np.testing.assert_array_equal(np.asarray(a), g)  # no stale state between runs
    np.savez(xfile + ".out.npz", *got)
    # (a fused activation's own row reads "fused")
    report[name] = [r.exec_type for r in req.get_profiling_info()
                    if r.node_type == "GroupConvolution" and r.exec_type != "fused"]
print(json.dumps(report))
"""


class Graph(OnnxGraph):
    def grouped(self, x: str, c: int, cpg: int, k: tuple[int, int], stride: tuple[int, int], pads: list[int],
                bias: bool, dilation: int = 1) -> str:
        w = self.rng.standard_normal((c, cpg, *k)) * (2.0 / (cpg * k[0] * k[1])) ** 0.5
        ins = [x, self.const(w)] + ([self.const(self.rng.standard_normal(c) * 0.1)] if bias else [])
        return self.node("Conv", ins, group=c // cpg, kernel_shape=list(k), strides=list(stride), pads=pads,
                         dilations=[dilation, dilation])


# name: (channels, channels a group, H, W, kernel, stride, pads [top, left, bottom, right], bias,
#        activation, batch, dilation)
CASES: dict[str, tuple[Any, ...]] = {
    "resnext_layer1": (128, 4, 28, 28, (3, 3), (1, 1), [1, 1, 1, 1], True, "relu", 1, 1),
    "stride2": (64, 4, 15, 15, (3, 3), (2, 2), [1, 1, 1, 1], True, "relu", 1, 1),
    "uneven_pads": (16, 4, 9, 11, (3, 3), (1, 1), [0, 1, 2, 0], False, None, 1, 1),
    "k5_clip_batch2": (8, 4, 7, 7, (5, 5), (1, 1), [2, 2, 2, 2], True, "clip", 2, 1),
    "k1": (24, 4, 6, 5, (1, 1), (1, 1), [0, 0, 0, 0], True, "relu", 1, 1),
    "k3x1_stride21": (32, 4, 10, 10, (3, 1), (2, 1), [1, 0, 1, 0], True, None, 1, 1),
    "map2x2": (16, 4, 2, 2, (3, 3), (1, 1), [1, 1, 1, 1], True, "relu", 1, 1),
    "narrow_w3": (40, 4, 30, 3, (3, 3), (1, 1), [1, 1, 1, 1], True, "relu", 3, 1),
    # (a 1x1 map has one layout, plain: not taken; one row of 3 is nhwc)
    "map1x3_pad2": (8, 4, 1, 3, (3, 3), (1, 1), [2, 2, 2, 2], False, None, 1, 1),
    "wide_w13_s2_k7": (16, 4, 17, 13, (7, 7), (2, 2), [3, 3, 3, 3], True, "relu", 1, 1),
    # refused: dilation, groups of 8, 12 channels (3 groups)
    "dilated": (16, 4, 12, 12, (3, 3), (1, 1), [2, 2, 2, 2], True, "relu", 1, 2),
    "groups_of_8": (32, 8, 12, 12, (3, 3), (1, 1), [1, 1, 1, 1], True, "relu", 1, 1),
    "c12": (12, 4, 12, 12, (3, 3), (1, 1), [1, 1, 1, 1], True, "relu", 1, 1),
}
REFUSED = {"dilated", "groups_of_8", "c12"}


def build(tmp_path: Path, name: str) -> tuple[Path, np.ndarray]:
    c, cpg, h, w, k, stride, pads, bias, act, batch, dil = CASES[name]
    g = Graph(sum(map(ord, name)))
    x = g.relu(g.conv("x", 8, c))  # a 1x1 convolution writes the grouped one's source channels-last
    y = g.grouped(x, c, cpg, k, stride, pads, bias, dil)
    if act == "relu":
        y = g.relu(y)
    elif act == "clip":
        y = g.node("Clip", [y, g.const(0.0), g.const(6.0)])
    out = g.conv(y, c, 8)
    path = g.save(tmp_path / f"{name}.onnx", (batch, 8, h, w), [out, y])
    xv = np.random.default_rng(len(name)).standard_normal((batch, 8, h, w)).astype(np.float32)
    return path, xv


def run_child(tmp_path: Path, names: list[str], threads: int, env_extra: dict[str, str],
              cap: bool) -> tuple[dict[str, list[np.ndarray]], dict[str, list[str]]]:
    cases = []
    for name in names:
        path, x = build(tmp_path, name)
        xfile = tmp_path / f"{name}.x.npy"
        np.save(xfile, x)
        cases.append([name, str(path), str(xfile), threads])
    env = {k: v for k, v in os.environ.items() if k not in (SWITCH, "ONEDNN_MAX_CPU_ISA")}
    if cap:
        env["ONEDNN_MAX_CPU_ISA"] = "AVX2"
    env.update(env_extra)
    res = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(cases)], env=env, capture_output=True,
                         text=True, timeout=300, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    outs = {}
    for name in names:
        data = np.load(str(tmp_path / f"{name}.x.npy") + ".out.npz")
        outs[name] = [data[f"arr_{i}"] for i in range(len(data.files))]
    return outs, json.loads(res.stdout.strip().splitlines()[-1])


def check_close(got: list[np.ndarray], want: list[np.ndarray]) -> None:
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5 * max(1.0, float(np.abs(w).max())))


@pytest.mark.parametrize("threads", [1, 2])
def test_grouped4_under_the_avx2_cap(tmp_path: Path, threads: int) -> None:
    names = list(CASES)
    on, types_on = run_child(tmp_path, names, threads, {}, cap=True)
    off, types_off = run_child(tmp_path, names, threads, {SWITCH: "0"}, cap=True)
    for name in names:
        feed = np.load(tmp_path / f"{name}.x.npy")
        want = ort.InferenceSession(str(tmp_path / f"{name}.onnx"), providers=["CPUExecutionProvider"]).run(
            None, {"x": feed})
        check_close(on[name], want)
        check_close(off[name], want)
        check_close(on[name], off[name])  # against the path it replaces
        assert EXEC not in types_off[name], (name, types_off[name])
        if name in REFUSED:
            assert EXEC not in types_on[name], (name, types_on[name])
        else:
            assert types_on[name] == [EXEC], (name, types_on[name])
        assert not any("avx512" in t for t in types_on[name]), (name, types_on[name])


def test_grouped4_not_on_avx512_hosts(tmp_path: Path) -> None:
    from opforge_cpu._loader import load_core

    if not load_core().cpu_isa().startswith("avx512"):
        pytest.skip("this host's oneDNN ISA is not AVX-512: nothing to check natively")
    names = ["resnext_layer1", "stride2"]
    native, types = run_child(tmp_path, names, 1, {}, cap=False)
    for name in names:
        assert EXEC not in types[name], (name, types[name])
        feed = np.load(tmp_path / f"{name}.x.npy")
        want = ort.InferenceSession(str(tmp_path / f"{name}.onnx"), providers=["CPUExecutionProvider"]).run(
            None, {"x": feed})
        check_close(native[name], want)
