"""The frontend-extension API on ONNX: the seed examples (OpenVINO's OpExtension and
ConversionExtension pages, the Model Optimizer's extractor priority) as tests."""

from __future__ import annotations

import json
import pathlib
import types
from typing import Any

import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from opforge.errors import ConversionError, ExtensionError, UnsupportedOpError
from opforge.frontend import (
    ConversionExtension,
    FrontExtractorOp,
    NodeContext,
    OpExtension,
)
from opforge.frontend.convert import convert_model
from opforge.hookspecs import hookimpl
from opforge.plugins import default_plugins
from opforge.reference import evaluate_model
from opforge_onnx.testing.helpers import assert_matches_ort, make_model

X = np.array([[-2.0, -0.5, 0.0, 0.5, 1.5, 3.0]], np.float32)


def one_op(op_type: str, domain: str = "", **attrs: Any) -> bytes:
    node = h.make_node(op_type, ["x"], ["y"], domain=domain, **attrs)
    doms = {domain: 1} if domain else None
    return make_model([node], [h.make_tensor_value_info("x", T.FLOAT, [1, 6])],
                      [h.make_tensor_value_info("y", T.FLOAT, [1, 6])], domains=doms).SerializeToString()


def run(data: bytes, **kwargs: Any) -> np.ndarray:
    m = convert_model(data, framework="onnx", **kwargs)
    return evaluate_model(m, {"x": X})[0]


def types_of(data: bytes, **kwargs: Any) -> list[str]:
    return [n.type_name for n in convert_model(data, framework="onnx", **kwargs).get_ordered_ops()]


# ---------------------------------------------------------------------------- OpExtension
def test_my_relu_maps_to_standard_relu_by_type_name() -> None:
    data = one_op("MyRelu")
    with pytest.raises(UnsupportedOpError):
        run(data)
    y = run(data, extension=[OpExtension("Relu", "MyRelu")])
    np.testing.assert_array_equal(y, np.maximum(X, 0))
    assert "Relu" in types_of(data, extension=OpExtension("Relu", "MyRelu"))


def test_op_extension_to_a_custom_op_class() -> None:
    from opforge.op import InferContext, Op, OpAttrs, TensorSpec

    class ScaleAttrs(OpAttrs):
        factor: float

    class MyScale(Op):
        type_name = "MyScale"
        version = "my_ext"
        Attrs = ScaleAttrs

        @classmethod
        def infer(cls, ctx: InferContext) -> list[TensorSpec]:
            return [TensorSpec(ctx.input_type(0), ctx.input_shape(0))]

        @classmethod
        def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
            return [(inputs[0] * attrs.factor).astype(inputs[0].dtype)]

    # attributes copied by name automatically
    y = run(one_op("MyScale", factor=3.0), extension=[OpExtension(MyScale)])
    np.testing.assert_allclose(y, X * 3)


def test_attribute_rename_and_constant_value_mapping() -> None:
    # framework op "LeakyThing" with attribute "slope" -> Elu's alpha (rename)
    y = run(one_op("LeakyThing", slope=0.5), extension=[OpExtension("Elu", "LeakyThing", {"alpha": "slope"})])
    np.testing.assert_allclose(y, np.where(X > 0, X, 0.5 * (np.exp(X) - 1)), rtol=1e-6)
    # "Relu6ish": Clamp with min a constant and max renamed from "hi"
    ext = OpExtension("Clamp", "Relu6ish", attr_names_map={"max": "hi"}, attr_values_map={"min": 0.0})
    y = run(one_op("Relu6ish", hi=1.0), extension=[ext])
    np.testing.assert_allclose(y, np.clip(X, 0.0, 1.0))


def test_op_extension_fails_at_construction_for_unknown_or_incompatible_attributes() -> None:
    with pytest.raises(ExtensionError, match="has no attribute 'beta'"):
        OpExtension("Elu", "E", attr_names_map={"beta": "b"})
    with pytest.raises(ExtensionError, match="incompatible"):
        OpExtension("Clamp", "C", attr_values_map={"min": "low", "max": 1.0})
    with pytest.raises(ExtensionError, match="both renamed"):
        OpExtension("Elu", "E", attr_names_map={"alpha": "a"}, attr_values_map={"alpha": 1.0})


def test_op_extension_fails_clearly_when_a_required_attribute_is_missing() -> None:
    with pytest.raises(ExtensionError, match="cannot initialise attribute 'alpha'"):
        run(one_op("NoAlpha"), extension=[OpExtension("Elu", "NoAlpha")])


def test_op_extension_with_named_ports_for_paddle_style_frameworks() -> None:
    ext = OpExtension("Relu", "relu", framework="paddle", inputs=["X"], outputs=["Out"])
    assert ext.key == ("paddle", "", "relu") and ext.inputs == ["X"]
    with pytest.raises(ExtensionError, match="named input"):
        OpExtension("Relu", "relu", framework="paddle", inputs=["X", "Y"], outputs=["Out"])


# ---------------------------------------------------------------------------- named outputs (core API)
def _named_ctx(**kw: Any) -> NodeContext:
    """A NodeContext of a framework with named ports, as the Paddle frontend builds them."""
    from opforge.frontend.node_context import GraphBuilder

    builder = GraphBuilder(default_plugins().ops)
    x = builder.op("Parameter", [], {"element_type": "f32", "shape": [2, 6]}, "x").output(0)
    return NodeContext(framework="paddle", op_type=kw.pop("op_type", "split"), domain="", name="n",
                       inputs=[x], attributes=kw.pop("attributes", {"num": 3}), builder=builder,
                       named_inputs={"X": [x]}, named_outputs=kw.pop("named_outputs", {"Out": ["a", "b", "c"]}),
                       source="m.pdmodel", **kw)


def _handler(ext: Any) -> Any:
    from opforge.frontend.extensions import Handler

    return Handler(ext, "test")


def test_node_context_named_outputs() -> None:
    ctx = _named_ctx(named_outputs={"Out": ["a", "b"], "XShape": [], "Mask": [""]})
    assert ctx.has_named_outputs and ctx.get_output_names() == ["Out", "XShape", "Mask"]
    assert ctx.get_output_size() == 3 and ctx.get_output_size("Out") == 2 and ctx.get_output_size("Nope") == 0
    assert ctx.has_output("Out") and not ctx.has_output("XShape") and not ctx.has_output("Mask")
    assert ctx.has_output(0) and not ctx.has_output(1) and not ctx.has_output(5)
    assert ctx.get_output_value_names("Out") == ["a", "b"]
    # no "domain ''" for frameworks without op domains
    assert ctx.label == "node 'n' (paddle split) in m.pdmodel"


def test_node_context_positional_outputs_keep_their_meaning() -> None:
    from opforge.frontend.node_context import GraphBuilder

    ctx = NodeContext(framework="onnx", op_type="Dropout", domain="", name="d", inputs=[], attributes={},
                      builder=GraphBuilder(default_plugins().ops), output_names=["y", ""])
    assert not ctx.has_named_outputs and ctx.get_output_size() == 2
    assert ctx.has_output(0) and not ctx.has_output(1) and ctx.has_output("y") and ctx.get_output_size("y") == 1
    assert ctx.label == "node 'd' (onnx Dropout, domain 'ai.onnx')"


def test_normalize_outputs_accepts_list_valued_named_outputs() -> None:
    from opforge.frontend.extensions import normalize_outputs

    ctx = _named_ctx(named_outputs={"Out": ["a", "b", "c"], "XShape": ["xs"]})
    parts = ctx.op("Split", ctx.get_input("X"), ctx.const(np.int64(1)), num_splits=3).outputs()
    h = _handler(ConversionExtension("split", lambda c: [], framework="paddle"))
    assert normalize_outputs({"Out": parts}, ctx, h) == [*parts, None]
    assert normalize_outputs({"Out": parts[:2]}, ctx, h) == [*parts[:2], None, None]  # c not produced
    assert normalize_outputs([parts, parts[0]], ctx, h) == [*parts, parts[0]]  # one entry per port
    with pytest.raises(ConversionError, match=r"returned output 'Y'.*output ports Out, XShape"):
        normalize_outputs({"Y": parts[0]}, ctx, h)
    with pytest.raises(ConversionError, match=r"4 values for output 'Out'.*binds to 3"):
        normalize_outputs({"Out": [*parts, parts[0]]}, ctx, h)
    single = _named_ctx()
    assert normalize_outputs(parts, single, h) == parts  # one port: a flat list is its values


def test_op_extension_deals_op_outputs_to_a_list_valued_named_output() -> None:
    from opforge.frontend.extensions import normalize_outputs

    ctx = _named_ctx(op_type="my_split")
    axis = ctx.const(np.int64(1))
    ctx = NodeContext(framework="paddle", op_type="my_split", domain="", name="n", inputs=[ctx.get_input("X"), axis],
                      attributes={"num": 3}, builder=ctx.builder,
                      named_inputs={"X": [ctx.get_input("X")], "Axis": [axis]},
                      named_outputs={"Out": ["a", "b", "c"]})
    ext = OpExtension("Split", "my_split", {"num_splits": "num"}, framework="paddle", inputs=["X", "Axis"],
                      outputs=["Out"])
    result = ext.convert(ctx)
    assert isinstance(result, dict) and list(result) == ["Out"] and len(result["Out"]) == 3
    outs = normalize_outputs(result, ctx, _handler(ext))
    assert [o.partial_shape.to_tuple() for o in outs if o is not None] == [(2, 2)] * 3
    too_many = NodeContext(framework="paddle", op_type="my_split", domain="", name="n",
                           inputs=ctx.get_inputs(), attributes={"num": 2}, builder=ctx.builder,
                           named_inputs={"X": [ctx.get_input("X")], "Axis": [axis]},
                           named_outputs={"Out": ["a", "b", "c"]})
    with pytest.raises(ExtensionError, match="binds 3 value\\(s\\) to output 'Out' but 'Split' has only 2"):
        ext.convert(too_many)


# ---------------------------------------------------------------------------- ConversionExtension
def thresholded_relu(ctx: NodeContext) -> list[Any]:
    """OpenVINO's example: ThresholdedRelu(x, alpha) -> Multiply(x, Convert(Greater(x, alpha)))."""
    x = ctx.get_input(0)
    alpha = ctx.const(ctx.get_attribute("alpha", 1.0, dtype=float), x.element_type)
    calls.append(ctx.get_name())
    mask = ctx.op("Convert", ctx.op("Greater", x, alpha), destination_type=x.element_type)
    return [ctx.op("Multiply", x, mask)]


calls: list[str] = []


def test_thresholded_relu_conversion_extension_overrides_the_builtin_translator() -> None:
    calls.clear()
    data = one_op("ThresholdedRelu", alpha=0.4)
    y = run(data, extension=[ConversionExtension("ThresholdedRelu", thresholded_relu, framework="onnx")])
    assert calls  # the user's function ran, not the built-in translator
    np.testing.assert_allclose(y, np.where(X > 0.4, X, 0))
    model = make_model([h.make_node("ThresholdedRelu", ["x"], ["y"], alpha=0.4)],
                       [h.make_tensor_value_info("x", T.FLOAT, [1, 6])], [h.make_tensor_value_info("y", T.FLOAT, [1, 6])])
    assert_matches_ort(model, {"x": X},
                       extension=[ConversionExtension("ThresholdedRelu", thresholded_relu, framework="onnx")])


def test_node_context_api() -> None:
    seen: dict[str, Any] = {}

    def probe(ctx: NodeContext) -> list[Any]:
        seen.update(op=ctx.get_op_type(), dom=ctx.get_domain(), name=ctx.get_name(), n=ctx.get_input_size(),
                    has=ctx.has_attribute("k"), k=ctx.get_attribute("k", dtype=int),
                    missing=ctx.get_attribute("nope", 7), opset=ctx.get_opset_version())
        return [ctx.op("Relu", ctx.get_input(0))]

    run(one_op("Probe", domain="com.example", k=3),
        extension=[ConversionExtension("Probe", probe, framework="onnx", domain="com.example")])
    assert seen == {"op": "Probe", "dom": "com.example", "name": "y", "n": 1, "has": True, "k": 3,
                    "missing": 7, "opset": 1}


def test_extensions_are_domain_aware() -> None:
    data = one_op("Swish", domain="com.example")
    default_domain_ext = ConversionExtension("Swish", lambda ctx: [ctx.op("Relu", ctx.get_input(0))], framework="onnx")
    with pytest.raises(UnsupportedOpError, match=r"com\.example::Swish"):
        run(data, extension=[default_domain_ext])
    ext = ConversionExtension("Swish", lambda ctx: [ctx.op("Sigmoid", ctx.get_input(0))], framework="onnx",
                              domain="com.example")
    np.testing.assert_allclose(run(data, extension=[default_domain_ext, ext]), 1 / (1 + np.exp(-X)), rtol=1e-6)
    # "ai.onnx" and "" are the same default domain
    assert ConversionExtension("Relu", thresholded_relu, framework="onnx", domain="ai.onnx").domain == ""


# ---------------------------------------------------------------------------- extractors and priority
class MyReluExtractor(FrontExtractorOp):
    op = "MyRelu"
    framework = "onnx"

    @classmethod
    def extract(cls, node: NodeContext) -> tuple[str, dict[str, Any]]:
        return "Sigmoid", {}


def plugin_module(**hooks: Any) -> types.ModuleType:
    mod = types.ModuleType("test_plugin_mod")
    for k, v in hooks.items():
        setattr(mod, k, hookimpl(v))
    return mod


def test_extractor_registered_through_the_hook() -> None:
    plugins = default_plugins().copy()

    def opforge_register_extractors(register: Any) -> None:
        register("onnx", "MyRelu", MyReluExtractor)

    plugins.add_plugin_object(plugin_module(opforge_register_extractors=opforge_register_extractors), "extr")
    y = run(one_op("MyRelu"), plugins=plugins)
    np.testing.assert_allclose(y, 1 / (1 + np.exp(-X)), rtol=1e-6)


def test_priority_mapping_file_then_extensions_then_extractors_then_standard(tmp_path: pathlib.Path) -> None:
    plugins = default_plugins().copy()

    def opforge_register_extractors(register: Any) -> None:
        register("onnx", "Relu", MyReluExtractor)  # overrides the standard Relu translator

    def opforge_register_conversion_extensions(register: Any) -> None:
        register(ConversionExtension("Relu", lambda ctx: [ctx.op("Abs", ctx.get_input(0))], framework="onnx"))

    data = one_op("Relu")
    np.testing.assert_array_equal(run(data), np.maximum(X, 0))  # standard translator
    plugins.add_plugin_object(plugin_module(opforge_register_extractors=opforge_register_extractors), "p1")
    np.testing.assert_allclose(run(data, plugins=plugins), 1 / (1 + np.exp(-X)), rtol=1e-6)  # extractor
    plugins.add_plugin_object(
        plugin_module(opforge_register_conversion_extensions=opforge_register_conversion_extensions), "p2")
    np.testing.assert_array_equal(run(data, plugins=plugins), np.abs(X))  # plugin extension
    user = ConversionExtension("Relu", lambda ctx: [ctx.op("Negative", ctx.get_input(0))], framework="onnx")
    np.testing.assert_array_equal(run(data, plugins=plugins, extension=[user]), -X)  # user extension
    mapping = tmp_path / "ops.json"
    mapping.write_text(json.dumps({"mappings": [{"framework": "onnx", "op_type": "Relu", "target": "Exp"}]}))
    np.testing.assert_allclose(run(data, plugins=plugins, extension=[user, str(mapping)]), np.exp(X), rtol=1e-6)


def test_mapping_file_domain_and_errors(tmp_path: pathlib.Path) -> None:
    mapping = tmp_path / "ops.json"
    mapping.write_text(json.dumps({"mappings": [
        {"framework": "onnx", "domain": "com.example", "op_type": "MyRelu", "target": "Relu"}]}))
    np.testing.assert_array_equal(run(one_op("MyRelu", domain="com.example"), extension=str(mapping)),
                                  np.maximum(X, 0))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"mappings": [{"op_type": "A", "target": "Elu", "attr_names_map": {"zzz": "a"}}]}))
    with pytest.raises(ExtensionError, match="has no attribute 'zzz'"):
        run(one_op("A"), extension=str(bad))


def test_extension_given_as_a_module_path(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "my_onnx_ext.py").write_text(
        "from opforge.frontend import OpExtension\nEXTENSIONS = [OpExtension('Relu', 'MyRelu')]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    np.testing.assert_array_equal(run(one_op("MyRelu"), extension="my_onnx_ext"), np.maximum(X, 0))


def test_bad_extension_objects_are_refused() -> None:
    with pytest.raises(ExtensionError):
        ConversionExtension("X", "not callable")  # type: ignore[arg-type]
    with pytest.raises(ExtensionError):
        run(one_op("Relu"), extension=[42])
