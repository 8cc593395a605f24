"""The f32 channels-last MaxPool row walk's AVX2 build (kernels/max_pool.cpp row_max_nhwc_avx2,
exec type ``max_nhwc_rows:avx2``, stop 22): under ONEDNN_MAX_CPU_ISA=AVX2 a convolution's nhwc
output is pooled by it instead of oneDNN's jit:avx2 pooling and the NaN scan after it
(``OPFORGE_CPU_POOL_AVX2=0``). onnx.helper graphs (3x3 Conv (+ Relu) -> MaxPool -> 3x3 Conv, and the
pool's output itself): SqueezeNet's 3x3/2 ceil mode, ResNet's 3x3/2 pad 1, UNet's 2x2/2, 3x3/1,
dilation 2, asymmetric pads, 3 to 100 channels (whole, partial and lone tail vectors), batch 2,
NaN and +-inf in the input. Each configuration runs in child processes under the cap at 1 and 2
threads with the switch on and off: the same bytes both ways (NaN where a window holds one; a
window of -inf alone is -inf here, as in the AVX-512 walks, and -FLT_MAX in oneDNN's pooling),
within 1e-5 of ONNX Runtime where the input is finite; natively the kernel never runs."""

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

SWITCH = "OPFORGE_CPU_POOL_AVX2"
EXEC = "max_nhwc_rows:avx2"

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
    np.savez(xfile + f".{threads}.out.npz", *got)
    report[name] = [r.exec_type for r in req.get_profiling_info() if r.node_type == "MaxPool"]
print(json.dumps(report))
"""

# name: (channels, H, W, batch, MaxPool attributes)
CASES: dict[str, tuple[int, int, int, int, dict[str, Any]]] = {
    "squeezenet_3x3s2_ceil": (64, 27, 27, 1, {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
    "resnet_3x3s2_pad1": (20, 14, 13, 2, {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    "unet_2x2s2": (16, 12, 10, 1, {"kernel_shape": [2, 2], "strides": [2, 2]}),
    "3x3s1_pad1": (100, 9, 11, 1, {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
    "dilation2": (24, 13, 13, 1, {"kernel_shape": [3, 3], "dilations": [2, 2], "pads": [2, 2, 2, 2]}),
    "asymmetric_pads": (33, 10, 9, 1, {"kernel_shape": [3, 2], "strides": [2, 1], "pads": [0, 1, 2, 0]}),
    "three_channels": (3, 8, 8, 1, {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
}


def build(tmp_path: Path, name: str, special: bool) -> tuple[Path, np.ndarray]:
    c, h, w, batch, pool = CASES[name]
    g = OnnxGraph(sum(map(ord, name)))
    wt = g.rng.standard_normal((c, 8, 3, 3)) * (2.0 / 72) ** 0.5
    x = g.node("Conv", ["x", g.const(wt), g.const(g.rng.standard_normal(c) * 0.1)], pads=[1, 1, 1, 1])
    p = g.node("MaxPool", [x], **pool)
    w2 = g.rng.standard_normal((8, c, 3, 3)) * (1.0 / (c * 9)) ** 0.5
    y = g.node("Conv", [p, g.const(w2), g.const(np.zeros(8))], pads=[1, 1, 1, 1])
    path = g.save(tmp_path / f"{name}.onnx", (batch, 8, h, w), [y, p])
    xv = np.random.default_rng(len(name)).standard_normal((batch, 8, h, w)).astype(np.float32)
    if special:  # a NaN, +inf and -inf in the image: windows over their convolution outputs
        xv[0, 1, 2, 3] = np.nan
        xv[0, 4, h - 2, 1] = np.inf
        xv[-1, 6, h // 2, w - 1] = -np.inf
    return path, xv


def run_child(tmp_path: Path, names: list[str], special: bool, threads: int,
              env_extra: dict[str, str], cap: bool) -> tuple[dict[str, list[np.ndarray]], dict[str, list[str]]]:
    cases = []
    for name in names:
        path, x = build(tmp_path, name, special)
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
        data = np.load(str(tmp_path / f"{name}.x.npy") + f".{threads}.out.npz")
        outs[name] = [data[f"arr_{i}"] for i in range(len(data.files))]
    return outs, json.loads(res.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("special", [False, True])
@pytest.mark.parametrize("threads", [1, 2])
def test_avx2_row_walk_under_the_cap(tmp_path: Path, threads: int, special: bool) -> None:
    names = list(CASES)
    on, types_on = run_child(tmp_path, names, special, threads, {}, cap=True)
    off, types_off = run_child(tmp_path, names, special, threads, {SWITCH: "0"}, cap=True)
    for name in names:
        assert types_on[name] == [EXEC], (name, types_on[name])
        assert EXEC not in types_off[name], (name, types_off[name])
        pooled = on[name][1]
        if special:
            assert np.isnan(pooled).any() and np.isinf(pooled).any(), name
            # oneDNN's pooling starts each window at lowest(), ours (as the AVX-512 walks) at
            # -inf: a window of -inf alone is -inf here and -FLT_MAX there; the same otherwise
            lowest = np.finfo(np.float32).min
            assert np.all(off[name][1][pooled == -np.inf] == lowest), name
            np.testing.assert_array_equal(np.where(pooled == -np.inf, lowest, pooled), off[name][1])
            continue
        for a, b in zip(on[name], off[name], strict=True):
            np.testing.assert_array_equal(a, b)  # oneDNN's pooling + the NaN scan: the same bytes
        feed = np.load(tmp_path / f"{name}.x.npy")
        want = ort.InferenceSession(str(tmp_path / f"{name}.onnx"), providers=["CPUExecutionProvider"]).run(
            None, {"x": feed})
        for g, w in zip(on[name], want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5 * max(1.0, float(np.abs(w).max())))


def test_not_on_avx512_hosts(tmp_path: Path) -> None:
    from opforge_cpu._loader import load_core

    if not load_core().cpu_isa().startswith("avx512"):
        pytest.skip("this host's oneDNN ISA is not AVX-512: nothing to check natively")
    _, types = run_child(tmp_path, ["squeezenet_3x3s2_ceil"], False, 1, {}, cap=False)
    assert EXEC not in types["squeezenet_3x3s2_ceil"], types
