"""Writing a model as IR v11 and reading it back gives the same model."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from opforge.builtins.ir_frontend import IrFrontend
from opforge.element_type import Type
from opforge.errors import ModelValidationError
from opforge.frontend.base import ConversionOptions, ModelSource
from opforge.graph import Model
from opforge.ir import read_ir, save_model, serialize
from opforge.op import InferContext, Op, OpAttrs, TensorSpec
from opforge.plugins import PluginInfo
from opforge.reference import evaluate_model
from opforge.shape import PartialShape

RNG = np.random.default_rng(0)


def f32(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def rich_model(kit) -> tuple[Model, list[np.ndarray]]:
    """Parameter, Constant, Add, Relu, plus every other op of this list the opset has."""
    x = kit.param("x", [1, 3, 8, 8])
    y = kit.param("y", [1, 3, 8, 8])
    h = kit.op("Relu", kit.op("Add", x, kit.const(f32(1, 3, 1, 1), "bias"), name="add_bias"), name="relu")
    h.output(0).set_names(["hidden", "with,comma"])
    outs: list = [h]
    if kit.has("Convolution"):
        conv = kit.op("Convolution", h, kit.const(f32(4, 3, 3, 3), "w"), name="conv", strides=[1, 1],
                      pads_begin=[1, 1], pads_end=[1, 1], dilations=[1, 1])
        outs.append(conv)
    if kit.has("Multiply"):
        outs.append(kit.op("Multiply", x, y, name="mul"))
    if kit.has("PRelu"):  # written under its IR name "PReLU"
        outs.append(kit.op("PRelu", y, kit.const(np.float32([0.25]), "slope"), name="prelu"))
    if kit.has("Reshape"):
        shape = kit.const(np.array([1, -1], dtype=np.int64), "target")
        outs.append(kit.op("Reshape", y, shape, name="flatten", special_zero=False))
    if kit.has("Concat"):
        outs.append(kit.op("Concat", x, y, h, name="cat", axis=1))
    if kit.has("Transpose"):
        outs.append(kit.op("Transpose", x, kit.const(np.array([0, 2, 3, 1], np.int64)), name="nhwc"))
    if kit.has("Split"):
        split = kit.op("Split", y, kit.const(np.int64(2), "split_axis"), name="split", num_splits=2)
        outs += [split.output(1), split.output(0)]
    if kit.has("Clamp"):
        outs.append(kit.op("Clamp", x, name="clamp", min=-0.5, max=0.75))
    model = kit.model(outs, [x, y], "rich")
    return model, [f32(1, 3, 8, 8), f32(1, 3, 8, 8)]


def test_roundtrip_structure_attributes_names_and_outputs(kit, tmp_path: Path) -> None:
    model, inputs = rich_model(kit)
    back = kit.roundtrip(model, tmp_path)
    kit.assert_same(model, back)
    assert back.node("relu").output(0).names == ["hidden", "with,comma"]
    assert back.input("x").names == ["x"]
    for want, got in zip(evaluate_model(model, inputs), evaluate_model(back, inputs)):
        np.testing.assert_array_equal(want, got)


def test_layer_ids_ports_and_type_names_follow_openvino(kit, tmp_path: Path) -> None:
    model, _ = rich_model(kit)
    save_model(model, tmp_path / "m.xml", plugins=kit.ps)
    xml = (tmp_path / "m.xml").read_text()
    assert xml.startswith('<?xml version="1.0"?>\n<net name="rich" version="11">')
    # The constant is a "Const" layer; inputs are ports 0..n-1, outputs continue at n.
    assert re.search(r'<layer id="\d+" name="bias" type="Const" version="opset1">\s*'
                     r'<data element_type="f32" shape="1,3,1,1" offset="\d+" size="12" />', xml)
    assert '<port id="1" precision="FP32" names="hidden,with\\,comma">' in xml
    assert re.search(r'name="add_bias" type="Add" version="opset1">\s*<data auto_broadcast="numpy" />'
                     r'\s*<input>\s*<port id="0"[^>]*>(\s*<dim>\d+</dim>)+\s*</port>\s*<port id="1"', xml)
    assert 'type="ReLU"' in xml
    if kit.has("PRelu"):
        assert 'name="prelu" type="PReLU"' in xml
    assert "<edges>" in xml and "<rt_info>" in xml


def test_dynamic_dims_and_dynamic_rank_roundtrip(kit, tmp_path: Path) -> None:
    x = kit.param("x", [None, 3, None])
    r = kit.param("r", PartialShape.dynamic())
    model = kit.model([kit.op("Relu", x), kit.op("Relu", r)], [x, r], "dyn")
    xml, _ = serialize(model)
    text = xml.decode()
    assert 'shape="?,3,?"' in text and "<dim>-1</dim>" in text
    assert 'shape="..."' in text
    # A dynamic rank is a port with no <dim> children, as OpenVINO writes it.
    assert '<port id="0" precision="FP32" names="r" />' in text
    back = kit.roundtrip(model, tmp_path)
    kit.assert_same(model, back)
    assert back.input("x").partial_shape == PartialShape([None, 3, None])
    assert back.input("r").partial_shape.rank is None
    x_val = f32(2, 3, 5)
    r_val = f32(4, 1, 2, 3)
    for want, got in zip(evaluate_model(model, [x_val, r_val]), evaluate_model(back, [x_val, r_val])):
        np.testing.assert_array_equal(want, got)


def test_parameter_and_result_order_is_kept(kit, tmp_path: Path) -> None:
    a = kit.param("a", [2])
    b_ = kit.param("b", [2])
    s = kit.op("Add", a, b_, name="s")
    r1 = kit.op("Result", kit.op("Relu", b_, name="rb"), name="out_rb")
    r0 = kit.op("Result", s, name="out_s")
    # Inputs in the reverse of the order the graph reaches them; outputs likewise.
    model = Model([r1, r0], [b_, a], "order")
    back = kit.roundtrip(model, tmp_path)
    assert [p.name for p in back.parameters] == ["b", "a"]
    assert [r.name for r in back.results] == ["out_rb", "out_s"]


def test_identical_constants_are_stored_once(kit, tmp_path: Path) -> None:
    w = f32(64, 64)
    x = kit.param("x", [64, 64])
    s = kit.op("Add", kit.op("Add", x, kit.const(w, "w1")), kit.const(w.copy(), "w2"))
    # Same bytes, different type: stored once too (aligned for both).
    i = kit.param("i", [64 * 64], "i32")
    u = kit.op("Add", i, kit.const(w.reshape(-1).view(np.int32), "w3"))
    model = kit.model([s, u], [x, i], "dedup")
    xml_b, bin_b = serialize(model)
    assert len(bin_b) == w.nbytes
    offsets = re.findall(r'offset="(\d+)" size="16384"', xml_b.decode())
    assert offsets == ["0", "0", "0"]
    back = kit.roundtrip(model, tmp_path)
    np.testing.assert_array_equal(back.node("w2").constant_value(), w)


def test_constants_are_read_only_zero_copy_views_of_the_weights(kit, tmp_path: Path) -> None:
    x = kit.param("x", [4, 4])
    model = kit.model([kit.op("Add", x, kit.const(f32(4, 4), "w"))], [x])
    back = kit.roundtrip(model, tmp_path)
    v = back.node("w").constant_value()
    assert v is not None
    assert not v.flags.writeable and not v.flags.owndata and v.flags.aligned
    with pytest.raises(ValueError, match="read-only"):
        v[0, 0] = 1.0


@pytest.mark.parametrize("t", [t for t in Type if t is not Type.dynamic], ids=lambda t: t.ir)
def test_every_element_type_roundtrips_bit_exactly(kit, tmp_path: Path, t: Type) -> None:
    if t is Type.boolean:
        value = np.array([True, False, True])
    elif t is Type.bf16:
        value = np.array([1.5, -2.25, 3.0e38], dtype=ml_dtypes.bfloat16)
    else:
        value = (np.arange(5) * 3 + 1).astype(t.np)
    x = kit.param("x", [value.size], t.ir)
    c = kit.const(value, "c")
    model = kit.model([c, x], [x], "types")
    back = kit.roundtrip(model, tmp_path)
    got = back.node("c").constant_value()
    assert got is not None and got.dtype == value.dtype
    assert got.tobytes() == value.tobytes()
    assert back.input("x").element_type is t


def test_compress_to_fp16_writes_const_f16_and_decompression_convert(kit, tmp_path: Path) -> None:
    x = kit.param("x", [3])
    small = np.float32([0.1, 2.0, -3.5])
    huge = np.float32([1e6, 1.0, 2.0])  # not representable in f16: kept in f32
    s = kit.op("Add", kit.op("Add", x, kit.const(small, "w")), kit.const(huge, "big"))
    s.output(0).set_names(["y"])
    model = kit.model([s], [x], "fp16")
    xml_b, bin_b = serialize(model, compress_to_fp16=True)
    xml = xml_b.decode()
    assert re.search(r'name="w_compressed" type="Const" version="opset1">\s*<data element_type="f16" '
                     r'shape="3" offset="0" size="6" />', xml)
    assert re.search(r'name="w" type="Convert" version="opset1">\s*<data destination_type="f32" />\s*'
                     r'<rt_info>\s*<attribute name="decompression" version="0" />', xml)
    assert re.search(r'name="big" type="Const" version="opset1">\s*<data element_type="f32"', xml)
    assert len(bin_b) == 8 + 12  # 6 bytes of f16, 2 bytes of padding, 12 bytes of f32
    save_model(model, tmp_path / "m.xml", compress_to_fp16=True)
    back = read_ir(tmp_path / "m.xml", None, kit.ps)
    xv = f32(3)
    want = xv + small.astype(np.float16).astype(np.float32) + huge
    np.testing.assert_array_equal(evaluate_model(back, [xv])[0], want)
    assert back.output(0).names == ["y"]


def test_model_and_node_rt_info_roundtrip(kit, tmp_path: Path) -> None:
    x = kit.param("x", [2])
    r = kit.op("Relu", x, name="r")
    r.rt_info["affinity"] = "CPU"
    r.rt_info["fused_names"] = "a,b"
    r.rt_info["primitives"] = {"version": "1", "priority": "cpu:jit"}
    r.rt_info["callback"] = print  # runtime-only: not written
    model = kit.model([r], [x])
    model.rt_info = {"framework": {"name": "torch", "ver sion": "2.1"}, "1st": "x", "flag": True}
    back = kit.roundtrip(model, tmp_path)
    assert back.node("r").rt_info == {"affinity": "CPU", "fused_names": "a,b",
                                      "primitives": {"version": "1", "priority": "cpu:jit"}}
    rt = dict(back.rt_info)
    own = rt.pop("opforge")
    assert own["version"]
    assert rt == {"framework": {"name": "torch", "ver sion": "2.1"}, "1st": "x", "flag": "YES"}


def test_bytes_in_bytes_out(kit) -> None:
    x = kit.param("x", [2, 2])
    model = kit.model([kit.op("Add", x, kit.const(f32(2, 2), "w"))], [x], "mem")
    xml, weights = serialize(model)
    back = read_ir(xml, weights, kit.ps)
    kit.assert_same(model, back)


def test_ir_v10_files_are_read(kit) -> None:
    x = kit.param("x", [2])
    model = kit.model([kit.op("Relu", x, name="r")], [x], "old")
    xml, weights = serialize(model)
    v10 = re.sub(r' (names|output_names)="[^"]*"', "", xml.decode()).replace('version="11"', 'version="10"')
    back = read_ir(v10.encode(), weights, kit.ps)
    assert [n.type_name for n in back.get_ordered_ops()] == ["Parameter", "Relu", "Result"]
    assert back.input(0).names == []


def test_save_replaces_files_atomically_and_leaves_no_temporaries(kit, tmp_path: Path) -> None:
    x = kit.param("x", [2])
    m1 = kit.model([kit.op("Add", x, kit.const(np.float32([1, 2]), "w"))], [x], "one")
    save_model(m1, tmp_path / "m.xml")
    x2 = kit.param("x", [3])
    m2 = kit.model([kit.op("Add", x2, kit.const(np.float32([1, 2, 3]), "w"))], [x2], "two")
    save_model(m2, tmp_path / "m.xml")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.bin", "m.xml"]
    assert read_ir(tmp_path / "m.xml", None, kit.ps).name == "two"
    save_model(m2, tmp_path / "a.xml", tmp_path / "other.weights")
    assert read_ir(tmp_path / "a.xml", tmp_path / "other.weights", kit.ps).name == "two"


def test_frontend_detects_and_reads_paths_and_bytes(kit, tmp_path: Path) -> None:
    x = kit.param("x", [2])
    model = kit.model([kit.op("Add", x, kit.const(np.float32([1, 2]), "w"))], [x], "fe")
    save_model(model, tmp_path / "m.xml")
    fe = IrFrontend()
    src = ModelSource.of(tmp_path / "m.xml")
    assert fe.supports(src)
    kit.assert_same(model, fe.read(src, kit.ps, ConversionOptions()))
    xml, weights = serialize(model)
    src_b = ModelSource.of(xml, weights)
    assert fe.supports(src_b)
    kit.assert_same(model, fe.read(src_b, kit.ps, ConversionOptions()))
    assert fe.supports(ModelSource.of(b"\xef\xbb\xbf  <net name='a' version='11'/>"))
    assert not fe.supports(ModelSource.of(b"\x08\x07ONNX..."))
    (tmp_path / "w.onnx").write_bytes(b"x")
    assert not fe.supports(ModelSource.of(tmp_path / "w.onnx"))
    reshaped = fe.read(src, kit.ps, ConversionOptions(input_shapes={"x": [2]}))
    assert reshaped.input(0).partial_shape == PartialShape([2])


def test_frontend_is_registered_by_the_builtin_plugin() -> None:
    from opforge.builtins import ir_frontend

    found: list[object] = []
    ir_frontend.opforge_register_frontends(register=lambda fe, **_: found.append(fe))
    assert len(found) == 1 and isinstance(found[0], IrFrontend) and found[0].name == "ir"


class _StandInConvertAttrs(OpAttrs):
    destination_type: Type


class _StandInConvert(Op):
    """Convert-1, for when the opset has none yet (the reader then folds compressed weights)."""

    type_name = "Convert"
    version = "opset1"
    Attrs = _StandInConvertAttrs

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        return [TensorSpec(ctx.attrs.destination_type, ctx.input_shape(0))]  # type: ignore[attr-defined]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        return [inputs[0].astype(attrs.destination_type.np)]


def test_compressed_weights_read_as_marked_convert_when_convert_exists(kit, tmp_path: Path) -> None:
    ps = kit.ps
    if not kit.has("Convert"):
        ps = kit.ps.copy()
        ps.ops.add(_StandInConvert.key(), _StandInConvert, PluginInfo("test"))
    x = kit.param("x", [3])
    w = np.float32([0.1, 2.0, -3.5])
    model = kit.model([kit.op("Add", x, kit.const(w, "w"), name="add")], [x], "fp16")
    save_model(model, tmp_path / "m.xml", compress_to_fp16=True)
    back = read_ir(tmp_path / "m.xml", None, ps)
    conv = back.node("w")
    assert conv.type_name == "Convert" and conv.rt_info == {"decompression": ""}
    const = back.node("w_compressed")
    value = const.constant_value()
    assert value is not None and value.dtype == np.float16
    xv = f32(3)
    np.testing.assert_array_equal(evaluate_model(back, [xv])[0], xv + w.astype(np.float16).astype(np.float32))
    # Saved again, the f16 weights and their Convert are written as they are.
    save_model(back, tmp_path / "again.xml", compress_to_fp16=True)
    text = (tmp_path / "again.xml").read_text()
    assert text.count('type="Convert"') == 1 and 'name="w_compressed_compressed"' not in text


def test_names_xml_cannot_carry_are_refused(kit) -> None:
    x = kit.param("x", [2])
    model = kit.model([kit.op("Relu", x, name="bad\x01name")], [x])
    with pytest.raises(ModelValidationError, match=r"node 'bad\\x01name'.*U\+0001, which XML cannot represent"):
        serialize(model)
    # Markup characters are fine: they are escaped.
    model = kit.model([kit.op("Relu", x, name='a<b>&"c"')], [x])
    assert read_ir(*serialize(model), kit.ps).results[0].inputs[0].node.name == 'a<b>&"c"'


def test_read_model_through_core_uses_the_ir_frontend(tmp_path: Path) -> None:
    import opforge

    x = opforge.op("Parameter", name="x", element_type="f32", shape=[2])
    model = Model([opforge.op("Relu", opforge.op("Add", x, opforge.op("Constant", value=np.float32([1, -5]))))],
                  [x], "core")
    opforge.save_model(model, tmp_path / "m.xml")
    back = opforge.Core().read_model(tmp_path / "m.xml")
    np.testing.assert_array_equal(evaluate_model(back, [np.float32([1, 1])])[0], np.float32([2, 0]))
    from_bytes = opforge.read_model((tmp_path / "m.xml").read_bytes(), (tmp_path / "m.bin").read_bytes())
    assert [n.type_name for n in from_bytes.get_ordered_ops()] == \
        [n.type_name for n in model.get_ordered_ops()]


def test_a_failed_save_leaves_the_previous_files_alone(kit, tmp_path: Path) -> None:
    x = kit.param("x", [2])
    good = kit.model([kit.op("Add", x, kit.const(np.float32([1, 2]), "w"))], [x], "good")
    save_model(good, tmp_path / "m.xml")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    bad = kit.model([kit.op("Add", x, kit.const(np.float32([3, 4, 5])[:2], "w\x02"))], [x], "bad")
    with pytest.raises(ModelValidationError, match="XML cannot represent"):
        save_model(bad, tmp_path / "m.xml")
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
