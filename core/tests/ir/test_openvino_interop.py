"""IR written by opforge loads in OpenVINO, and IR written by OpenVINO loads in opforge, with the
same outputs (OpenVINO's CPU plugin in f32 as the oracle)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from opforge.graph import Model
from opforge.ir import read_ir, save_model
from opforge.plugins import PluginSystem
from opforge.reference import evaluate_model

ov = pytest.importorskip("openvino")
ops = pytest.importorskip("openvino.opset13")

pytestmark = pytest.mark.openvino

F32 = {"INFERENCE_PRECISION_HINT": "f32"}
RNG = np.random.default_rng(1)


def f32(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def ov_run(path_or_model: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
    core = ov.Core()
    model = core.read_model(str(path_or_model)) if isinstance(path_or_model, Path) else path_or_model
    if any(p.get_partial_shape().rank.is_dynamic for p in model.get_parameters()):
        # The CPU plugin takes no dynamic-rank inputs: give every input its value's shape.
        model.reshape({i: ov.PartialShape(list(v.shape)) for i, v in enumerate(inputs)})
    compiled = core.compile_model(model, "CPU", F32)
    res = compiled(inputs)
    return [np.asarray(res[compiled.output(i)]) for i in range(len(compiled.outputs))]


def assert_outputs_close(want: list[np.ndarray], got: list[np.ndarray]) -> None:
    assert len(want) == len(got)
    for i, (w, g) in enumerate(zip(want, got)):
        assert w.shape == g.shape, f"output {i}: {w.shape} vs {g.shape}"
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=f"output {i}")


# ============================================================================ opforge -> OpenVINO
def opforge_model(kit) -> Model:
    x = kit.param("x", [1, 3, 8, 8])
    y = kit.param("y", [1, 3, 8, 8])
    h = kit.op("Relu", kit.op("Add", x, kit.const(f32(1, 3, 1, 1), "bias"), name="add_bias"), name="relu")
    h.output(0).set_names(["hidden", "with,comma"])
    outs: list[Any] = [h]
    if kit.has("Convolution"):
        outs.append(kit.op("Convolution", h, kit.const(f32(4, 3, 3, 3), "w"), name="conv", strides=[2, 1],
                           pads_begin=[1, 0], pads_end=[1, 1], dilations=[1, 1]))
    if kit.has("Multiply"):
        outs.append(kit.op("Multiply", x, y, name="mul"))
    if kit.has("PRelu"):
        outs.append(kit.op("PRelu", y, kit.const(np.float32([0.25]), "slope"), name="prelu"))
    if kit.has("Reshape"):
        outs.append(kit.op("Reshape", y, kit.const(np.array([1, -1], np.int64)), name="flat", special_zero=False))
    if kit.has("Concat"):
        outs.append(kit.op("Concat", x, y, name="cat", axis=1))
    if kit.has("Transpose"):
        outs.append(kit.op("Transpose", x, kit.const(np.array([0, 2, 3, 1], np.int64)), name="nhwc"))
    if kit.has("Split"):
        sp = kit.op("Split", y, kit.const(np.int64(3)), name="split", num_splits=2)
        outs += [sp.output(1), sp.output(0)]
    if kit.has("Clamp"):
        outs.append(kit.op("Clamp", x, name="clamp", min=-0.5, max=0.75))
    return kit.model(outs, [x, y], "from_opforge")


@pytest.mark.parametrize("compress", [False, True], ids=["f32", "fp16"])
def test_opforge_ir_loads_in_openvino_with_the_same_outputs(kit, tmp_path: Path, compress: bool) -> None:
    model = opforge_model(kit)
    save_model(model, tmp_path / "m.xml", compress_to_fp16=compress, plugins=kit.ps)
    inputs = [f32(1, 3, 8, 8), f32(1, 3, 8, 8)]
    # The oracle for the compressed file is opforge's reading of it (weights rounded to f16).
    ref = read_ir(tmp_path / "m.xml", None, kit.ps) if compress else model
    assert_outputs_close(evaluate_model(ref, inputs), ov_run(tmp_path / "m.xml", inputs))
    ov_model = ov.Core().read_model(str(tmp_path / "m.xml"))
    assert [p.get_friendly_name() for p in ov_model.get_parameters()] == ["x", "y"]
    assert ov_model.output(0).get_names() == {"hidden", "with,comma"}
    assert ov_model.get_rt_info(["opforge", "version"]).astype(str)


def test_dynamic_shapes_load_in_openvino(kit, tmp_path: Path) -> None:
    from opforge.shape import PartialShape

    x = kit.param("x", [None, 3, None])
    r = kit.param("r", PartialShape.dynamic())
    b = kit.const(f32(3, 1), "b")
    model = kit.model([kit.op("Add", x, b, name="ax"), kit.op("Relu", r, name="rr")], [x, r], "dyn")
    model.node("rr").rt_info["affinity"] = "CPU"
    save_model(model, tmp_path / "m.xml")
    ov_model = ov.Core().read_model(str(tmp_path / "m.xml"))
    assert ov_model.input(0).get_partial_shape() == ov.PartialShape([-1, 3, -1])
    assert ov_model.input(1).get_partial_shape().rank.is_dynamic
    inputs = [f32(2, 3, 5), f32(2, 2, 2, 2)]
    assert_outputs_close(evaluate_model(model, inputs), ov_run(tmp_path / "m.xml", inputs))


# ============================================================================ OpenVINO -> opforge
def openvino_model(kit) -> Any:
    """A model from openvino.opset13 ops that opforge also has."""
    x = ops.parameter([1, 3, 8, 8], np.float32, name="x")
    y = ops.parameter([1, 3, 8, 8], np.float32, name="y")
    h = ops.relu(ops.add(x, ops.constant(f32(1, 3, 1, 1))))
    h.output(0).set_names({"hidden", "a,b"})
    outs = [h]
    if kit.has("Convolution"):
        outs.append(ops.convolution(h, ops.constant(f32(4, 3, 3, 3)), [1, 2], [0, 1], [1, 1], [1, 1]))
    if kit.has("Multiply"):
        outs.append(ops.multiply(x, y))
    if kit.has("PRelu"):
        outs.append(ops.prelu(y, ops.constant(np.float32([0.1]))))
    if kit.has("Reshape"):
        outs.append(ops.reshape(y, ops.constant(np.array([0, -1], np.int64)), special_zero=True))
    if kit.has("Concat"):
        outs.append(ops.concat([x, y, h], 1))
    if kit.has("Transpose"):
        outs.append(ops.transpose(x, ops.constant(np.array([0, 2, 3, 1], np.int64))))
    if kit.has("Split"):
        outs += list(ops.split(y, ops.constant(np.int64(2)), 4).outputs())
    if kit.has("Clamp"):
        outs.append(ops.clamp(x, -0.25, 0.5))
    if kit.has("Gather"):
        outs.append(ops.gather(x, ops.constant(np.array([2, 0], np.int64)), ops.constant(np.int64(1))))
    ports = [o if isinstance(o, ov.Output) else o.output(0) for o in outs]
    return ov.Model(ports, [y, x], "from_openvino")  # inputs deliberately not in graph order


@pytest.mark.parametrize("compress", [False, True], ids=["f32", "fp16"])
def test_openvino_ir_loads_in_opforge_with_the_same_outputs(kit, tmp_path: Path, compress: bool) -> None:
    ov.save_model(openvino_model(kit), str(tmp_path / "m.xml"), compress_to_fp16=compress)
    model = read_ir(tmp_path / "m.xml", None, kit.ps)
    assert [p.name for p in model.parameters] == ["y", "x"]
    assert set(model.output(0).names) == {"hidden", "a,b"}
    inputs = [f32(1, 3, 8, 8), f32(1, 3, 8, 8)]
    assert_outputs_close(ov_run(tmp_path / "m.xml", inputs), evaluate_model(model, inputs))
    if compress and kit.has("Convert"):
        # With a Convert op the f16 weights stay f16, decompressed by a marked Convert;
        # without one the reader folds them into f32 constants (checked by the outputs above).
        assert any(n.type_name == "Convert" and "decompression" in n.rt_info for n in model.nodes())


def test_openvino_dynamic_shapes_and_ir_v10(kit, tmp_path: Path) -> None:
    x = ops.parameter(ov.PartialShape([-1, 3, -1]), np.float32, name="x")
    r = ops.parameter(ov.PartialShape.dynamic(), np.float32, name="r")
    m = ov.Model([ops.add(x, ops.constant(f32(3, 1))), ops.relu(r)], [x, r], "dyn")
    ov.save_model(m, str(tmp_path / "v11.xml"), compress_to_fp16=False)
    ov.serialize(m, str(tmp_path / "v10.xml"), str(tmp_path / "v10.bin"), version="IR_V10")
    inputs = [f32(2, 3, 4), f32(3, 1, 2)]
    want = ov_run(tmp_path / "v11.xml", inputs)
    for name in ("v11.xml", "v10.xml"):
        model = read_ir(tmp_path / name, None, kit.ps)
        assert model.input(0).partial_shape.dims == (None, 3, None)
        assert model.input(1).partial_shape.rank is None
        assert_outputs_close(want, evaluate_model(model, inputs))


def test_opforge_and_openvino_write_the_same_topology(kit, plugins: PluginSystem, tmp_path: Path) -> None:
    """OpenVINO re-saving opforge's file, and opforge reading that, changes nothing."""
    model = opforge_model(kit)
    save_model(model, tmp_path / "a.xml", plugins=kit.ps)
    ov.save_model(ov.Core().read_model(str(tmp_path / "a.xml")), str(tmp_path / "b.xml"), compress_to_fp16=False)
    again = read_ir(tmp_path / "b.xml", None, plugins)
    kit.assert_same(model, again)


# ============================================================================ inf and NaN attributes
def test_infinite_and_nan_float_attributes_are_written_as_openvino_writes_them(kit, plugins: PluginSystem,
                                                                                tmp_path: Path) -> None:
    # A Clip with only a max converts to Clamp min=-inf; saving it used to raise OverflowError.
    x = kit.param("x", [4])
    clamp = kit.op("Clamp", x, name="clamp", min=float("-inf"), max=2.0)
    upper = kit.op("Clamp", x, name="upper", min=-1.0, max=float("inf"))
    outs: list[Any] = [clamp, upper]
    if kit.has("Elu"):
        outs.append(kit.op("Elu", x, name="elu", alpha=float("nan")))
    save_model(kit.model(outs, [x]), tmp_path / "m.xml", plugins=plugins)
    xml = (tmp_path / "m.xml").read_text()
    assert '<data min="-inf" max="2.0" />' in xml and '<data min="-1.0" max="inf" />' in xml
    # What OpenVINO itself writes for the same attributes.
    ox = ops.parameter([4], np.float32, name="x")
    ov.save_model(ov.Model([ops.clamp(ox, -np.inf, 2.0).output(0), ops.elu(ox, float("nan")).output(0)], [ox]),
                  str(tmp_path / "ov.xml"))
    ov_xml = (tmp_path / "ov.xml").read_text()
    assert '<data min="-inf" max="2" />' in ov_xml and '<data alpha="nan" />' in ov_xml
    if kit.has("Elu"):
        assert '<data alpha="nan" />' in xml
    # Both readers read ours back.
    back = read_ir(tmp_path / "m.xml", None, plugins)
    assert back.node("clamp").attrs.min == float("-inf") and back.node("upper").attrs.max == float("inf")
    v = np.float32([-1e30, -0.5, 1.5, 1e30])
    want = [np.float32([-1e30, -0.5, 1.5, 2.0]), np.float32([-1.0, -0.5, 1.5, 1e30])]
    assert_outputs_close(want, evaluate_model(back, [v])[:2])
    assert_outputs_close(want, ov_run(tmp_path / "m.xml", [v])[:2])
    if kit.has("Elu"):
        assert np.isnan(back.node("elu").attrs.alpha)
