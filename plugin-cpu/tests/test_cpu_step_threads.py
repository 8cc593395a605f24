"""Small steps run on one thread (csrc/core/step_threads.cpp): which steps get one, and that the
thread count a step runs with never changes a result (1 vs 2 threads, vs the reference)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import opforge
import pytest
from cpu_testing import check, const, make_plugins, param, rand
from opforge.graph import Model

CONV = {"strides": [1, 1], "pads_begin": [1, 1], "pads_end": [1, 1], "dilations": [1, 1]}


def mixed_model() -> tuple[Model, list[np.ndarray]]:
    """A large convolution (~30 M multiply-adds) next to small ones, a small MatMul, pooling,
    a squeeze-and-excitation gate and a concat: steps of both sizes in one program."""
    x = param("x", [1, 32, 32, 32])
    big = opforge.op("Convolution", x, const(rand((64, 32, 3, 3), seed=1) * 0.1), name="big_conv", **CONV)
    big = opforge.op("Relu", big, name="big_relu")
    pool = opforge.op("MaxPool", big, strides=[4, 4], pads_begin=[0, 0], pads_end=[0, 0], kernel=[4, 4], dilations=[1, 1],
                      name="pool")  # 64 x 8 x 8
    small = opforge.op("Convolution", pool.output(0), const(rand((16, 64, 1, 1), seed=2) * 0.1), name="small_conv",
                       strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0], dilations=[1, 1])
    gate = opforge.op("ReduceMean", small, const([2, 3], np.int64), keep_dims=True, name="se_mean")
    gate = opforge.op("Sigmoid", gate, name="se_sigmoid")
    small = opforge.op("Multiply", small, gate, name="se_scale")
    cat = opforge.op("Concat", small, small, axis=1, name="cat")  # 32 x 8 x 8
    flat = opforge.op("Reshape", cat, const([1, 32 * 64], np.int64), special_zero=False, name="flat")
    fc = opforge.op("MatMul", flat, const(rand((32 * 64, 10), seed=3) * 0.05), name="fc")
    return Model([fc.output(0), big.output(0)], [x], name="mixed"), [rand((1, 32, 32, 32), seed=4)]


def step_threads(core: Any, model: Model, threads: int) -> dict[str, int]:
    compiled = core.compile_model(model, "CPU", {"INFERENCE_NUM_THREADS": threads})
    (plan,) = compiled._executable.programs().values()
    return {name: s["threads"] for s in plan.program.steps() for name in s["fused_names"] or [s["name"]]}


def test_small_steps_get_one_thread(core: Any) -> None:
    model, _ = mixed_model()
    at2 = step_threads(core, model, 2)
    assert at2["big_conv"] == 2
    for name in ("small_conv", "se_mean", "se_scale", "cat", "fc", "pool"):
        assert at2[name] == 1, (name, at2)
    assert set(step_threads(core, model, 1).values()) == {1}


def test_results_do_not_depend_on_threads(core: Any) -> None:
    model, feeds = mixed_model()
    outs = {}
    for n in (1, 2):
        outs[n] = check(core, model, feeds, rtol=1e-4, atol=1e-4, config={"INFERENCE_NUM_THREADS": n})
    for a, b in zip(outs[1], outs[2]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_two_streams_mix_serial_and_parallel_steps(core: Any) -> None:
    """Two requests at once, each setting its own thread's OpenMP count step by step."""
    model, feeds = mixed_model()
    compiled = core.compile_model(model, "CPU", {"INFERENCE_NUM_THREADS": 2, "NUM_STREAMS": 2})
    want = [np.asarray(o) for o in compiled(feeds).to_tuple()]
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            req = compiled.create_infer_request()
            for _ in range(20):
                for g, w in zip(req.infer(feeds).to_tuple(), want):
                    np.testing.assert_array_equal(g, w)
        except BaseException as err:  # noqa: BLE001 - reported by the main thread
            errors.append(err)

    workers = [threading.Thread(target=worker) for _ in range(2)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    assert not errors, errors[0]


def lone_model() -> Model:
    """A small MaxPool between two large convolutions."""
    x = param("x", [1, 32, 32, 32])
    a = opforge.op("Convolution", x, const(rand((64, 32, 3, 3), seed=1) * 0.1), name="conv_a", **CONV)
    pool = opforge.op("MaxPool", a, strides=[4, 4], pads_begin=[0, 0], pads_end=[0, 0], kernel=[4, 4],
                      dilations=[1, 1], name="pool")
    b = opforge.op("Convolution", pool.output(0), const(rand((64, 64, 3, 3), seed=2) * 0.1), name="conv_b", **CONV)
    return Model([b], [x], name="lone")


def test_a_lone_small_step_between_parallel_ones_keeps_every_thread(core: Any) -> None:
    """Pooling between two large convolutions: on one thread the worker would fall asleep after
    the first and the second would pay its wake-up; the same pooling followed by small steps
    (mixed_model) runs on one."""
    model = lone_model()
    at2 = step_threads(core, model, 2)
    assert at2["conv_a"] == 2 and at2["conv_b"] == 2 and at2["pool"] == 2, at2
    feeds = [rand((1, 32, 32, 32), seed=4)]
    outs = [check(core, model, feeds, rtol=1e-4, atol=1e-4, config={"INFERENCE_NUM_THREADS": n}) for n in (1, 2)]
    np.testing.assert_allclose(outs[0][0], outs[1][0], rtol=1e-5, atol=1e-6)


def test_lone_step_switch_keeps_it_on_one_thread(tmp_path: Path) -> None:
    """OPFORGE_CPU_LONE_STEP=0 (read once a process, so in a child): the lone pooling stays on
    one thread, the convolutions keep both, and the output is the same bytes as here."""
    model, feeds = lone_model(), [rand((1, 32, 32, 32), seed=4)]
    core = opforge.Core(make_plugins())
    compiled = core.compile_model(model, "CPU", {"INFERENCE_NUM_THREADS": 2})
    want = np.asarray(compiled(feeds).to_tuple()[0])
    code = ("import sys, json, numpy as np; sys.path.insert(0, sys.argv[1]); import opforge; "
            "from cpu_testing import make_plugins, rand; from test_cpu_step_threads import lone_model, step_threads; "
            "core = opforge.Core(make_plugins()); m = lone_model(); "
            "y = core.compile_model(m, 'CPU', {'INFERENCE_NUM_THREADS': 2})([rand((1, 32, 32, 32), seed=4)]); "
            "np.save(sys.argv[2], np.asarray(y.to_tuple()[0])); print(json.dumps(step_threads(core, m, 2)))")
    env = dict(os.environ, OPFORGE_CPU_LONE_STEP="0")
    res = subprocess.run([sys.executable, "-c", code, str(Path(__file__).parent), str(tmp_path / "y.npy")], env=env,
                         capture_output=True, text=True, timeout=120, check=True)
    threads = json.loads(res.stdout.strip().splitlines()[-1])
    assert threads["pool"] == 1 and threads["conv_a"] == 2 and threads["conv_b"] == 2, threads
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), want)


def test_transposed_convolutions_keep_every_thread(tmp_path: Any) -> None:
    """A transposed convolution's work is not in proportion to its tensors (each input element
    scatters a whole kernel), so the small-step rule leaves it all threads, the int8 one
    (QuantizedConvolutionBackpropData, a UNet decoder's upsampling in a QDQ model) included."""
    pytest.importorskip("onnxruntime.quantization")
    from int8_testing import quantize, save_model
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(7)
    inits = [numpy_helper.from_array((rng.standard_normal(s) * 0.2).astype(np.float32), n)
             for n, s in {"w0": (8, 4, 3, 3), "wt": (8, 8, 2, 2), "w1": (4, 8, 1, 1)}.items()]
    nodes = [helper.make_node("Conv", ["x", "w0"], ["c0"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c0"], ["a"]),
             helper.make_node("ConvTranspose", ["a", "wt"], ["t"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["t", "w1"], ["y"])]
    src = save_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 5, 5])],
                     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 10, 10])], inits,
                     tmp_path / "f32.onnx")
    q = quantize(src, tmp_path / "q.onnx", (1, 4, 5, 5), True, "u8")
    core = opforge.Core()  # with the installed frontends: these are ONNX files
    for path, kind in ((src, "ConvolutionBackpropData"), (q, "QuantizedConvolutionBackpropData")):
        compiled = core.compile_model(core.read_model(str(path)), "CPU", {"INFERENCE_NUM_THREADS": 2})
        (plan,) = compiled._executable.programs().values()
        threads = [s["threads"] for s in plan.program.steps() if s["type"] == kind]
        assert threads == [2], (kind, [(s["type"], s["threads"]) for s in plan.program.steps()])
