"""The TBB build's loaded mode (csrc/core/tbb_contention.hpp): libtbb's sched_yield is redirected
at the first 2-thread run, the caller looks at the workers' schedstat, and while one waits for a
CPU TBB's waiting threads spin instead of yielding. Checked here: the redirect and the looks in
the TBB build (none in the OpenMP build, none with ``OPFORGE_CPU_TBB_LOADED_SPIN=0``), loaded
mode entered under busy loops on every CPU, spun yields with ``=always``, and the same bytes in
every setting (within 1e-4 of NumPy)."""

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
sys.path.insert(0, str(Path(__file__).parent))
from onnx_graph import OnnxGraph  # noqa: E402

#: 2-thread runs of the model, with argv[4] busy loops (one Python process each) running for the
#: second half of them; prints the counters and whether every run gave the first run's bytes
CHILD = r"""
import json, subprocess, sys, time
import numpy as np, opforge
from opforge_cpu._loader import load_core

core = opforge.Core()
cm = core.compile_model(core.read_model(sys.argv[1]), "CPU", {"INFERENCE_NUM_THREADS": 2})
x = np.load(sys.argv[2])
req = cm.create_infer_request()
first = np.asarray(req.infer({"x": x})[0]).copy()
equal = True
for _ in range(30):
    equal = equal and bool(np.array_equal(np.asarray(req.infer({"x": x})[0]), first))
hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(int(sys.argv[4]))]
try:
    time.sleep(0.2)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 1.5:
        equal = equal and bool(np.array_equal(np.asarray(req.infer({"x": x})[0]), first))
finally:
    for h in hogs:
        h.kill()
        h.wait()
np.save(sys.argv[3], first)
c = load_core()
print(json.dumps({"runtime": c.threading_runtime(), **c.tbb_contention_stats(), "equal": equal}))
"""


def conv_model(path: Path) -> Path:
    g = OnnxGraph(seed=11)
    h = "x"
    for cin, cout in ((16, 32), (32, 32), (32, 32), (32, 16)):
        h = g.relu(g.conv(h, cin, cout, k=3))
    return g.save(path, (1, 16, 48, 48), [h])  # type: ignore[no-any-return]


def reference(model: Path, x: np.ndarray) -> np.ndarray:
    """The model in NumPy (im2col convolutions, ReLU), from the ONNX initializers."""
    m = onnx.load(str(model))
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in m.graph.initializer}
    h = x[0].astype(np.float64)
    for node in m.graph.node:
        if node.op_type == "Relu":
            h = np.maximum(h, 0.0)
            continue
        w, b = inits[node.input[1]].astype(np.float64), inits[node.input[2]].astype(np.float64)
        cout, cin, k, _ = w.shape
        p = np.pad(h, ((0, 0), (k // 2, k // 2), (k // 2, k // 2)))
        hh, ww = h.shape[1], h.shape[2]
        cols = np.stack([p[:, i:i + hh, j:j + ww] for i in range(k) for j in range(k)], axis=1)
        h = np.einsum("oc,chw->ohw", w.reshape(cout, cin * k * k), cols.reshape(cin * k * k, hh, ww))
        h = h + b[:, None, None]
    return h[None].astype(np.float32)


def run_child(tmp_path: Path, env: dict[str, str], hogs: int) -> tuple[dict[str, Any], np.ndarray, np.ndarray]:
    model = conv_model(tmp_path / "m.onnx")
    x = np.random.default_rng(5).standard_normal((1, 16, 48, 48)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / f"y{len(env)}{hogs}.npy"
    res = subprocess.run([sys.executable, "-c", CHILD, str(model), str(tmp_path / "x.npy"), str(out), str(hogs)],
                         env=dict(os.environ, **env), capture_output=True, text=True, timeout=240, check=True)
    info: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
    return info, np.load(out), reference(model, x)


CPUS = len(os.sched_getaffinity(0))


@pytest.mark.skipif(not 2 <= CPUS <= 4, reason="loads every CPU with a busy loop: 2 to 4 CPUs")
def test_busy_loops_on_every_cpu_start_loaded_mode(tmp_path: Path) -> None:
    info, y, ref = run_child(tmp_path, {}, hogs=CPUS)
    assert info["equal"], info
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)
    if info["runtime"] == "tbb":
        assert info["enabled"] and info["redirected"], info
        assert info["workers"] >= 1 and info["checks"] >= 1, info
        # with every CPU busy the worker and the caller both wait for their turns (a yielding
        # worker nearly all the time): a look every 20 ms of steps sees it within 1.5 s of runs
        assert info["loaded_modes"] >= 1 and info["spun_yields"] >= 1, info
    else:
        assert not info["enabled"] and not info["redirected"] and info["checks"] == 0, info


def test_the_switch_and_always_give_the_same_bytes(tmp_path: Path) -> None:
    on, y_on, ref = run_child(tmp_path, {}, hogs=0)
    off, y_off, _ = run_child(tmp_path, {"OPFORGE_CPU_TBB_LOADED_SPIN": "0"}, hogs=0)
    always, y_always, _ = run_child(tmp_path, {"OPFORGE_CPU_TBB_LOADED_SPIN": "always"}, hogs=0)
    assert on["equal"] and off["equal"] and always["equal"], (on, off, always)
    np.testing.assert_array_equal(y_on, y_off)
    np.testing.assert_array_equal(y_always, y_off)
    np.testing.assert_allclose(y_off, ref, rtol=1e-4, atol=1e-4)
    assert not off["enabled"] and not off["redirected"] and off["checks"] == 0 and off["workers"] == 0, off
    assert off["spun_yields"] == 0, off
    if always["runtime"] == "tbb":
        # always loaded: nothing to look at, every TBB yield spun
        assert always["redirected"] and always["checks"] == 0 and always["spun_yields"] >= 1, always
    else:
        assert not always["redirected"] and always["spun_yields"] == 0, always
