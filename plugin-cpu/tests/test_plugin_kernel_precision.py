"""Plugin kernels get the f16/bf16 lowering standard ops get: a kernel that refuses a low
precision type (the template extension's compiled kernel takes only f32/f64 when scale != 1; a
NumPy kernel that declares ``element_types``) computes in f32 between converts, and the model
keeps its types."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import opforge
import opforge_template_extension.plugin as template_plugin
import pytest
from cpu_testing import make_plugins, param, rand
from opforge.graph import Model
from opforge.reference import evaluate_model
from opforge_template_extension.op import OPSET, TemplateIdentity


def identity_model(dtype: str) -> Model:
    x = param("x", [2, 8], dtype)
    y = opforge.Node.create(TemplateIdentity, [x], {"scale": 2.0}, name="ident")
    return Model([opforge.op("Relu", y, name="relu")], [x], name="custom_low")


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_compiled_plugin_kernel_runs_low_precision_models_in_f32(dtype: str) -> None:
    core = opforge.Core(make_plugins((template_plugin, "template_extension")))
    np_dtype = np.float16 if dtype == "f16" else ml_dtypes.bfloat16
    model = identity_model(dtype)
    x = rand([2, 8]).astype(np_dtype)
    compiled = core.compile_model(model, "CPU")
    got = compiled([x])[0]
    assert got.dtype == np_dtype  # the model's type, outside and between ops
    want = evaluate_model(model, [x])[0]
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=1e-2, atol=1e-2)
    [program] = compiled._executable.programs().values()
    assert program.abi_nodes == ["ident"]  # the plugin's own compiled kernel ran, not a fallback
    types_in_program = {s["type"] for s in program.program.steps()}
    assert "Convert" in types_in_program  # f16/bf16 <-> f32 around it


class RecordingKernel:
    """A NumPy kernel that takes f32 only (and says so), recording the dtypes it is given."""

    element_types = ("f32",)

    def __init__(self) -> None:
        self.seen: list[Any] = []

    def __call__(self, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        self.seen.append(inputs[0].dtype)
        return [inputs[0] * np.float32(attrs.scale)]


def numpy_plugin(kernel: Any) -> Any:
    class P:
        @opforge.hookimpl
        def opforge_register_ops(self, register: Any) -> None:
            register(TemplateIdentity)

        @opforge.hookimpl
        def opforge_register_kernels(self, register: Any) -> None:
            register("CPU", "Identity", kernel, version=OPSET)

    return P()


def test_numpy_kernel_that_declares_f32_gets_f32() -> None:
    kernel = RecordingKernel()
    core = opforge.Core(make_plugins((numpy_plugin(kernel), "numpy_identity")))
    x = rand([2, 8]).astype(np.float16)
    got = core.compile_model(identity_model("f16"), "CPU")([x])[0]
    assert kernel.seen == [np.dtype(np.float32)] and got.dtype == np.float16
    np.testing.assert_allclose(got, np.maximum(x.astype(np.float32) * 2, 0).astype(np.float16), rtol=1e-3)


def test_numpy_kernel_without_a_declaration_gets_the_arrays_as_they_are() -> None:
    seen: list[Any] = []

    def kernel(attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        seen.append(inputs[0].dtype)
        return [inputs[0] * inputs[0].dtype.type(attrs.scale)]

    core = opforge.Core(make_plugins((numpy_plugin(kernel), "numpy_identity")))
    x = rand([2, 8]).astype(np.float16)
    core.compile_model(identity_model("f16"), "CPU")([x])
    assert seen == [np.dtype(np.float16)]
