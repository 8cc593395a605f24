"""The threading runtime the CPU plugin was built on (CMake OPFORGE_CPU_THREADING: omp or tbb,
csrc/core/threading.hpp): the build reports it, and a program on 2 threads gives the same bytes
as on 1, through every kind of parallel loop of ours (the NaN screens of Softmax, Interpolate's
per-slot row buffers, element-wise loops, the bidirectional LSTM's one direction a thread) and
oneDNN's own, against ONNX Runtime."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import opforge
import pytest
from onnx_graph import TP, OnnxGraph, helper
from opforge_cpu._loader import load_core

HERE = Path(__file__).parent


def test_the_build_reports_its_threading_runtime() -> None:
    core = load_core()
    runtime = core.threading_runtime()
    assert runtime in ("omp", "tbb")
    # the runtime's library is loaded with the module (libgomp is _core's own dependency in the
    # OpenMP build, libtbb in the TBB one)
    maps = Path("/proc/self/maps").read_text()
    assert ("libtbb.so.12" if runtime == "tbb" else "libgomp") in maps
    assert f"{runtime} threads" in opforge.Core().get_property("CPU", "FULL_DEVICE_NAME")


def conv_resize_softmax(tmp_path: Path) -> tuple[Path, dict[str, np.ndarray]]:
    """A 3x3 convolution (oneDNN, 2 threads), a bilinear 2x upsampling to 32 x 128 x 128
    (the plane resampler, one row buffer a slot), a Softmax over its rows (oneDNN, then our NaN
    screen over 524288 elements) and a broadcast Add of the upsampled tensor (our element-wise
    loop)."""
    g = OnnxGraph(seed=11)
    c = g.relu(g.conv("x", 16, 32, k=3))
    r = g.node("Resize", [c, "", g.const([1, 1, 2, 2])], mode="linear")
    s = g.node("Softmax", [r], axis=-1)
    a = g.node("Add", [r, g.const(g.rng.standard_normal((32, 1, 128)))])
    path = g.save(tmp_path / "crs.onnx", (1, 16, 64, 64), [s, a], opset=13)
    x = np.random.default_rng(12).standard_normal((1, 16, 64, 64)).astype(np.float32)
    return path, {"x": x}


def bilstm(tmp_path: Path) -> tuple[Path, dict[str, np.ndarray]]:
    """A bidirectional LSTM: at 2 threads each direction runs on its own thread."""
    g = OnnxGraph(seed=13)
    seq, batch, inp, hid = 24, 4, 48, 64
    w = g.const(g.rng.standard_normal((2, 4 * hid, inp)) * 0.1)
    r = g.const(g.rng.standard_normal((2, 4 * hid, hid)) * 0.1)
    b = g.const(g.rng.standard_normal((2, 8 * hid)) * 0.1)
    y = g.node_outs("LSTM", ["x", w, r, b], 3, hidden_size=hid, direction="bidirectional")
    path = g.save_model(tmp_path / "bilstm.onnx", [helper.make_tensor_value_info("x", TP.FLOAT, (seq, batch, inp))],
                        y, opset=14)
    x = np.random.default_rng(14).standard_normal((seq, batch, inp)).astype(np.float32)
    return path, {"x": x}


def run(path: Path, feeds: dict[str, np.ndarray], threads: int) -> list[np.ndarray]:
    core = opforge.Core()
    compiled = core.compile_model(core.read_model(str(path)), "CPU",
                                  {"INFERENCE_NUM_THREADS": threads, "INFERENCE_PRECISION_HINT": "f32"})
    req = compiled.create_infer_request()
    first = [np.asarray(o).copy() for o in req.infer(feeds).to_tuple()]
    again = [np.asarray(o) for o in req.infer(feeds).to_tuple()]
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    return first


@pytest.mark.parametrize("build", [conv_resize_softmax, bilstm])
def test_two_threads_give_the_bytes_of_one(tmp_path: Path, build: Any) -> None:
    ort = pytest.importorskip("onnxruntime")
    path, feeds = build(tmp_path)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)
    one, two = run(path, feeds, 1), run(path, feeds, 2)
    for w, a, b in zip(want, one, two):
        np.testing.assert_allclose(a, w, rtol=1e-4, atol=1e-5)
        np.testing.assert_array_equal(b, a)


CHILD = """
import json, os, sys
import numpy as np, opforge
def tasks():
    return len(os.listdir("/proc/self/task"))
core = opforge.Core()
small = core.compile_model(core.read_model(sys.argv[1]), "CPU", {"INFERENCE_NUM_THREADS": 2})
x = np.ones((1, 4, 8, 8), np.float32)
small([x])
(plan,) = small._executable.programs().values()
steps = sorted({s["threads"] for s in plan.program.steps()})
before = tasks()
for _ in range(50):
    small([x])
after_small = tasks()
big = core.compile_model(core.read_model(sys.argv[2]), "CPU", {"INFERENCE_NUM_THREADS": 2,
                         "INFERENCE_PRECISION_HINT": "f32"})
for _ in range(3):
    big([np.load(sys.argv[3])])
print(json.dumps([steps, before, after_small, tasks()]))
"""


def test_one_thread_steps_wake_no_worker(tmp_path: Path) -> None:
    """A program of 2 threads whose steps are all small (step_threads.cpp puts them on one)
    creates and runs their primitives in one thread's scope (OpenMP: a count of 1; TBB: a
    one-slot arena), so no worker thread is ever started for them; a large convolution of the
    same 2-thread setting starts one. Counted in a child (the runtime's workers live as long as
    the process), without the keep-warm spinners (threads of their own)."""
    g = OnnxGraph(seed=15)
    small = g.save(tmp_path / "small.onnx", (1, 4, 8, 8), [g.relu(g.conv("x", 4, 8, k=3))])
    big, feeds = conv_resize_softmax(tmp_path)
    np.save(tmp_path / "x.npy", feeds["x"])
    env = dict(os.environ, OPFORGE_CPU_KEEP_WARM="0")
    res = subprocess.run([sys.executable, "-c", CHILD, str(small), str(big), str(tmp_path / "x.npy")], env=env,
                         capture_output=True, text=True, timeout=120, check=True)
    steps, before, after_small, after_big = json.loads(res.stdout.strip().splitlines()[-1])
    assert steps == [1], steps
    assert after_small == before, (before, after_small)
    assert after_big > after_small, (after_small, after_big)


MISSING_TBB_CHILD = r"""
import sys
sys.path.insert(0, sys.argv[1])
from opforge_cpu._loader import load_core
try:
    load_core()
except ImportError as err:
    print("ImportError:", err)
else:
    print("loaded")
"""


def test_a_missing_tbb_wheel_is_named(tmp_path: Path) -> None:
    """A TBB build whose libtbb.so.12 is out of reach (the tbb wheel not installed, or installed
    with ``pip install --target``, which leaves its library outside the RUNPATH) fails to import
    with an ImportError that says which wheel to install, not an OSError from loading oneDNN by
    path (stop 24). The child runs a copy of the package with ``python -S`` (no site-packages, so
    no tbb distribution to preload from)."""
    if load_core().threading_runtime() != "tbb":
        pytest.skip("the OpenMP build needs no tbb wheel")
    if "libtbb.so.12" in subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout:
        pytest.skip("this system has a libtbb.so.12 of its own, so nothing is missing")
    import opforge_cpu

    copy = tmp_path / "opforge_cpu"
    copy.mkdir()
    # an editable install keeps the Python files in the checkout and the compiled ones in
    # site-packages: the copy takes both
    for folder in {Path(opforge_cpu.__file__).parent, Path(load_core().__file__).parent}:
        for item in folder.iterdir():
            if item.is_file() and (item.suffix in (".py", ".so") or ".so." in item.name):
                shutil.copy2(item, copy / item.name)
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD", "PYTHONPATH")}
    res = subprocess.run([sys.executable, "-S", "-c", MISSING_TBB_CHILD, str(tmp_path)], env=env,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr[-2000:]
    out = res.stdout.strip()
    assert out.startswith("ImportError:"), out
    assert "pip install 'tbb==2021.13.1'" in out and "libtbb.so.12 (wheel tbb)" in out, out
