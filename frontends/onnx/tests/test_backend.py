"""opforge_onnx.backend: the onnx.backend.base.Backend API over opforge devices and the
REFERENCE oracle."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from opforge.errors import DeviceNotFoundError
from opforge_onnx import backend
from opforge_onnx.backend import REFERENCE, BackendError, OpforgeBackend, OpforgeBackendRep


def model() -> onnx.ModelProto:
    nodes = [h.make_node("Add", ["x", "b"], ["s"]), h.make_node("Relu", ["s"], ["y"]),
             h.make_node("Neg", ["s"], ["z"])]
    graph = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [3])],
                         [h.make_tensor_value_info("y", T.FLOAT, [3]), h.make_tensor_value_info("z", T.FLOAT, [3])],
                         [onnx.numpy_helper.from_array(np.array([1, -1, 0], np.float32), "b")])
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])


X = np.array([-2.0, 0.5, 3.0], np.float32)


def test_prepare_and_run_on_reference() -> None:
    rep = OpforgeBackend.prepare(model(), REFERENCE)
    assert isinstance(rep, OpforgeBackendRep)
    assert rep.input_names == ["x"]  # the initializer is not an input
    y, z = rep.run([X])
    np.testing.assert_array_equal(y, [0, 0, 3])
    np.testing.assert_array_equal(z, [1, 0.5, -3])
    by_name: Any = rep.run({"x": X})
    np.testing.assert_array_equal(by_name["y"], y)
    single: Any = rep.run(X)
    np.testing.assert_array_equal(single.z, z)


def test_module_level_functions_and_case_insensitive_reference() -> None:
    (y, _) = backend.run_model(model(), [X], device="reference")
    np.testing.assert_array_equal(y, [0, 0, 3])
    assert backend.supports_device(REFERENCE)


def test_run_node_with_and_without_outputs_info() -> None:
    node = h.make_node("Gemm", ["a", "b"], ["c"], transB=1)
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.ones((4, 3), np.float32)
    (c,) = OpforgeBackend.run_node(node, [a, b], REFERENCE)
    np.testing.assert_allclose(c, a @ b.T)
    (c2,) = OpforgeBackend.run_node(node, {"a": a, "b": b}, REFERENCE, outputs_info=[(np.dtype(np.float32), (2, 4))])
    np.testing.assert_allclose(c2, c)
    (d,) = OpforgeBackend.run_node(h.make_node("Softmax", ["x"], ["y"], axis=1), [a], REFERENCE, opset_version=11)
    np.testing.assert_allclose(d.sum(axis=1), 1, rtol=1e-6)


def test_bad_inputs_are_refused_clearly() -> None:
    rep = OpforgeBackend.prepare(model(), REFERENCE)
    with pytest.raises(BackendError, match="takes 1"):
        rep.run([X, X])
    with pytest.raises(BackendError, match="unknown input"):
        rep.run({"nope": X})


def test_unknown_devices() -> None:
    assert not OpforgeBackend.supports_device("NO_SUCH_DEVICE")
    with pytest.raises(DeviceNotFoundError, match="REFERENCE"):
        OpforgeBackend.prepare(model(), "NO_SUCH_DEVICE")


def test_a_real_device_compiles_when_available() -> None:
    import opforge

    devices = [d for d in opforge.Core().available_devices if d.split(".")[0] not in ("HETERO", "AUTO", "MULTI", "BATCH")]
    if not devices:
        pytest.skip("no opforge device is available here")
    try:
        rep = OpforgeBackend.prepare(model(), devices[0])
        y, _ = rep.run([X])
    except opforge.errors.OpforgeError as err:
        pytest.skip(f"device {devices[0]} cannot run this model yet: {err}")
    np.testing.assert_allclose(y, [0, 0, 3])


class _Core:
    """Stands for a Core whose devices have these default precisions (None: no such property)."""

    def __init__(self, defaults: dict[str, str | None]) -> None:
        self.defaults = defaults

    def get_property(self, device: str, name: str) -> str:
        from opforge.errors import PropertyError

        value = self.defaults[device]
        if value is None:
            raise PropertyError(f"device {device} has no property '{name}'")
        return value


def test_onnx_semantics_pin_f32_only_over_a_bf16_default() -> None:
    from opforge_onnx.backend import onnx_semantics_config

    core = _Core({"CPU": "bf16", "GPU.0": "f32", "VPU.0": "f16", "HETERO:GPU,CPU": None})
    assert onnx_semantics_config(core, "CPU") == {"INFERENCE_PRECISION_HINT": "f32"}
    assert onnx_semantics_config(core, "CPU", {"NUM_STREAMS": 2}) == {"NUM_STREAMS": 2, "INFERENCE_PRECISION_HINT": "f32"}
    # the caller's precision wins, whatever its spelling
    assert onnx_semantics_config(core, "CPU", {"inference_precision_hint": "bf16"}) == {"inference_precision_hint": "bf16"}
    assert onnx_semantics_config(core, "GPU.0") is None
    assert onnx_semantics_config(core, "VPU.0") is None  # f16 is what the VPU computes in
    assert onnx_semantics_config(core, "HETERO:GPU,CPU") is None


def test_the_cpu_backend_runs_f32_on_a_bf16_host_and_says_so() -> None:
    import os
    import subprocess
    import sys
    import textwrap

    import opforge

    if "CPU" not in opforge.Core().available_devices:
        pytest.skip("no CPU device here")
    # the host's own default (the suite pins f32): a subprocess without the pin
    script = textwrap.dedent("""
        import opforge
        from opforge_onnx.backend import OpforgeBackend
        from test_backend import model
        default = opforge.Core().get_property("CPU", "INFERENCE_PRECISION_HINT")
        print(default, OpforgeBackend.prepare(model(), "CPU").precision,
              OpforgeBackend.prepare(model(), "CPU", config={"INFERENCE_PRECISION_HINT": default}).precision)
    """)
    env = {k: v for k, v in os.environ.items() if k != "OPFORGE_CPU_DEFAULT_PRECISION"}
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(__file__), env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    default, ran, asked = out.stdout.split()
    # f32 without a hint even where the default is bf16; the default itself when asked for
    assert default in ("bf16", "f32") and (ran, asked) == ("f32", default), out.stdout
    assert OpforgeBackend.prepare(model(), REFERENCE).precision == "f32"
