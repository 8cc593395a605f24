"""The template extension end to end: its op in models, IR files, frontends and device kernels."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import opforge
import pytest
from opforge.errors import UnsupportedOpError
from opforge.plugins import PluginSystem
from opforge.reference import evaluate_model
from opforge_template_extension import TemplateIdentity


def _model(scale: float = 2.0) -> opforge.Model:
    x = opforge.op("Parameter", element_type="f32", shape=[2, 3, 4, 5], name="x")
    x.output(0).set_names(["x"])
    r = opforge.op("Relu", x, name="relu")
    y = opforge.Node.create(TemplateIdentity, [r], {"scale": scale}, name="ident")
    y.output(0).set_names(["y"])
    return opforge.Model([y], [x], name="with_custom_op")


X = np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype(np.float32)


def test_plugin_is_found_through_its_entry_point() -> None:
    ps = PluginSystem()
    rec = ps.records["template_extension"]
    assert rec.status == "loaded" and rec.info.distribution == "opforge-template-extension"
    provides = ps.provides("template_extension")
    assert provides["ops"] == ["Identity/template_extension"]
    assert "onnx/org.opforge.template/Identity" in provides["conversion_extensions"]
    assert "paddle/template_identity" in provides["conversion_extensions"]


def test_saved_to_ir_and_read_back_with_the_plugin(tmp_path: Path) -> None:
    model = _model()
    opforge.save_model(model, tmp_path / "m.xml")
    text = (tmp_path / "m.xml").read_text()
    assert 'type="Identity" version="template_extension"' in text and 'scale="2.0"' in text
    back = opforge.Core().read_model(tmp_path / "m.xml")
    np.testing.assert_array_equal(evaluate_model(back, [X])[0], evaluate_model(model, [X])[0])


def test_reading_without_the_plugin_names_the_missing_opset_and_distribution(tmp_path: Path) -> None:
    opforge.save_model(_model(), tmp_path / "m.xml")
    without = PluginSystem(autoload=False)
    with pytest.raises(UnsupportedOpError, match=r"template_extension.*opforge-template-extension"):
        opforge.Core(without).read_model(tmp_path / "m.xml")


def test_scale_needs_a_float_input() -> None:
    x = opforge.op("Parameter", element_type="i32", shape=[2], name="xi")
    with pytest.raises(opforge.errors.ShapeInferenceError, match=r"scale=3\.0 needs a floating-point input"):
        opforge.Node.create(TemplateIdentity, [x], {"scale": 3.0})


def _fp16(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float16).astype(np.float32)


@pytest.mark.parametrize("device", ["CPU", "GPU", "VPU"])
def test_kernel_on_device(device: str) -> None:
    core = opforge.Core()
    if device not in core.device_plugins() or not any(d.split(".")[0] == device for d in core.available_devices):
        pytest.skip(f"no {device} device here")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = core.compile_model(_model(), device)
    # the VPU stores every tensor in FP16: x, relu(x) and y are each rounded to half
    want = _fp16(np.maximum(_fp16(X), 0) * 2) if device == "VPU" else np.maximum(X, 0) * 2
    np.testing.assert_allclose(compiled([X])["y"], want, rtol=1e-6)


@pytest.mark.parametrize("device", ["CPU", "GPU", "VPU"])
@pytest.mark.parametrize("shape", [(), (7,), (3, 5), (2, 3, 4), (2, 3, 4, 5), (2, 3, 2, 4, 5), (2, 1, 3, 2, 4, 3),
                                   (1, 2, 1, 2, 3, 2, 2)])
def test_kernel_on_every_rank(device: str, shape: tuple[int, ...]) -> None:
    """The GPU kernel once assumed 4-D (x*y, f, b work-items): a 5-D input wrote out of bounds
    (NaN in the output, then ``double free or corruption``)."""
    core = opforge.Core()
    if device not in core.device_plugins() or not any(d.split(".")[0] == device for d in core.available_devices):
        pytest.skip(f"no {device} device here")
    x = opforge.op("Parameter", element_type="f32", shape=list(shape), name="x")
    y = opforge.Node.create(TemplateIdentity, [x], {"scale": 3.0}, name="ident")
    data = np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = core.compile_model(opforge.Model([y], [x], name=f"rank{len(shape)}"), device)
    for _ in range(3):  # an out-of-bounds write shows up as corruption on a later run
        want = _fp16(_fp16(data) * np.float32(3.0)) if device == "VPU" else data * np.float32(3.0)
        np.testing.assert_array_equal(compiled([data])[0], want)


def test_opcheck_passes_on_every_available_device() -> None:
    # every kernel of the plugin against the op's reference (types, ranks 0-6, dynamic shapes,
    # attributes through IR) and proof that each device ran this plugin's kernel, in child processes
    from opforge.testing.opcheck import check_op

    check_op("template_extension")
