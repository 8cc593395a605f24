"""Device enumeration, properties, availability, query_model and the program cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import opforge
import pytest
from gpu_util import param, rand
from opforge.errors import DeviceNotFoundError, PropertyError, UnsupportedOpError
from opforge.graph import Model, Node


def test_enumeration_and_names(core: opforge.Core) -> None:
    gpus = [d for d in core.available_devices if d.startswith("GPU")]
    assert gpus and gpus[0] == "GPU.0"
    assert gpus == [f"GPU.{i}" for i in range(len(gpus))]
    name = core.get_property("GPU.0", "FULL_DEVICE_NAME")
    assert "(" in name and "OpenCL" in name
    assert "CONFIG_FILE" in core.get_property("GPU", "SUPPORTED_PROPERTIES")
    with pytest.raises(DeviceNotFoundError, match=r"GPU\.99"):
        core.compile_model(Model([opforge.op("Relu", param([2]))]), "GPU.99")


def test_device_selection_properties(core: opforge.Core) -> None:
    x = param([3])
    m = Model([opforge.op("Relu", x)], [x])
    cpu_like = opforge.Core()
    cpu_like.set_property("GPU", {"OPENCL_DEVICE_TYPE": "cpu", "DEVICE_ID": ""})
    found = [d for d in core.available_devices if d.startswith("GPU")]
    types = {core.get_property(d, "FULL_DEVICE_NAME").split(", ")[1] for d in found}
    if "CPU" in types:
        assert cpu_like.compile_model(m, "GPU")([np.array([-1, 0, 2], np.float32)])[0].tolist() == [0, 0, 2]
    nowhere = opforge.Core()
    nowhere.set_property("GPU", {"OPENCL_PLATFORM": "no such platform"})
    with pytest.raises(DeviceNotFoundError, match="OPENCL_PLATFORM"):
        nowhere.compile_model(m, "GPU")
    with pytest.raises(PropertyError):
        nowhere.set_property("GPU", {"OPENCL_DEVICE_TYPE": "TPU"})


def _run(code: str, env: dict[str, str]) -> dict:
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env}, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_unavailable_without_platforms(tmp_path: Path) -> None:
    """OCL_ICD_VENDORS pointing at an empty folder: no platform, and availability says why."""
    code = ("import json, opforge\nc = opforge.Core()\n"
            "print(json.dumps({'avail': c.available_devices, 'why': c.unavailable_devices().get('GPU', '')}))")
    res = _run(code, {"OCL_ICD_VENDORS": str(tmp_path)})
    assert not any(d.startswith("GPU") for d in res["avail"])
    assert "no OpenCL platform" in res["why"] and str(tmp_path) in res["why"]


def test_import_does_not_touch_opencl() -> None:
    code = ("import json, sys, opforge\nc = opforge.Core()\nimport opforge_gpu.plugin\n"
            "print(json.dumps({'cl': 'pyopencl' in sys.modules, 'gpu': 'GPU' in c.device_plugins()}))")
    res = _run(code, {})
    assert res == {"cl": False, "gpu": True}


class NoKernel(opforge.Op):
    """A test-only custom op (a copy) with no GPU kernel anywhere."""

    type_name = "NoKernel"
    version = "gpu_test"

    @classmethod
    def infer(cls, ctx: opforge.InferContext) -> list[opforge.TensorSpec]:
        return [opforge.TensorSpec(ctx.input_type(0), ctx.input_shape(0))]

    @classmethod
    def evaluate(cls, attrs: object, inputs: list[np.ndarray]) -> list[np.ndarray]:
        return [inputs[0].copy()]


def test_query_model_is_exact_and_compile_lists_unsupported(core: opforge.Core) -> None:
    x = param([2, 3])
    nk = Node.create(NoKernel, [x], {}, "nokernel")
    y = opforge.op("Relu", nk, name="relu")
    m = Model([y], [x])
    supported = core.query_model(m, "GPU")
    assert "relu" in supported and "nokernel" not in supported
    with pytest.raises(UnsupportedOpError, match=r"'nokernel' \(NoKernel-gpu_test"):
        core.compile_model(m, "GPU")


def test_program_cache_on_disk(core: opforge.Core, tmp_path: Path) -> None:
    from opforge_gpu import opencl

    x = param([5])
    m = Model([opforge.op("Sinh", x)], [x])
    c = opforge.Core()
    c.set_property("GPU", {"CACHE_DIR": str(tmp_path)})
    data = rand([5])
    for ctx in opencl._contexts.values():
        ctx._programs.clear()  # earlier tests may have built this program in-process already
    first = c.compile_model(m, "GPU")([data])[0]
    files = list(tmp_path.glob("*.bin"))
    assert files
    for ctx in opencl._contexts.values():
        ctx._programs.clear()  # forget the in-process table: the next build must come from disk
    mtimes = {f: f.stat().st_mtime_ns for f in files}
    np.testing.assert_allclose(c.compile_model(m, "GPU")([data])[0], first)
    assert {f: f.stat().st_mtime_ns for f in tmp_path.glob("*.bin")} == mtimes


def test_dynamic_batch_builds_a_plan_per_shape(core: opforge.Core) -> None:
    x = opforge.op("Parameter", element_type="f32", shape=[-1, 4], name="x")
    y = opforge.op("Softmax", x, axis=1)
    compiled = core.compile_model(Model([y], [x]), "GPU")
    for n in (1, 3):
        a = rand([n, 4])
        e = np.exp(a - a.max(1, keepdims=True))
        np.testing.assert_allclose(compiled([a])[0], e / e.sum(1, keepdims=True), rtol=1e-5)
    assert compiled.get_property("GPU_PLANS") == 2


def test_plans_and_request_memory_are_bounded_and_folded_constants_stay_right(core: opforge.Core) -> None:
    """More shapes than the plan cache keeps (PLAN_CACHE_SIZE): old plans are dropped, with the
    request memory they used. Each plan folds a constant its shape decides (Range(0, width)):
    the device copy of a dropped plan's constant must never serve a later plan whose constant
    happens to reuse the freed array's id."""
    from opforge.planning import PLAN_CACHE_SIZE

    x = opforge.op("Parameter", element_type="f32", shape=[2, -1], name="x")
    width = opforge.op("Gather", opforge.op("ShapeOf", x, output_type="i64"),
                       opforge.op("Constant", value=np.array(1, np.int64)),
                       opforge.op("Constant", value=np.array(0, np.int64)))
    ramp = opforge.op("Range", opforge.op("Constant", value=np.array(0.0, np.float32)),
                      opforge.op("Convert", width, destination_type="f32"),
                      opforge.op("Constant", value=np.array(1.0, np.float32)), output_type="f32")
    compiled = core.compile_model(Model([opforge.op("Add", x, ramp)], [x]), "GPU")
    req = compiled.create_infer_request()
    widths = list(range(1, PLAN_CACHE_SIZE + 6)) * 2
    for w in widths:
        a = rand([2, w], seed=w)
        np.testing.assert_allclose(req.infer([a])[0], a + np.arange(w, dtype=np.float32), rtol=1e-6)
    exe = compiled._executable  # type: ignore[attr-defined]
    assert compiled.get_property("GPU_PLANS") == PLAN_CACHE_SIZE
    assert exe.plans.built == len(widths) and exe.plans.evicted == len(widths) - PLAN_CACHE_SIZE
    assert len(req._state.memory) == PLAN_CACHE_SIZE  # type: ignore[attr-defined]


def test_threads_each_get_their_own_request(core: opforge.Core) -> None:
    from concurrent.futures import ThreadPoolExecutor

    x = param([64])
    compiled = core.compile_model(Model([opforge.op("Tanh", x)], [x]), "GPU")
    data = [rand([64], seed=i) for i in range(8)]
    with ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(lambda a: compiled.infer_new_request([a])[0], data))
    for a, o in zip(data, outs):
        np.testing.assert_allclose(o, np.tanh(a), rtol=1e-5, atol=1e-6)
