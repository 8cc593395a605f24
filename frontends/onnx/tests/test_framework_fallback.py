"""CustomLayersMapping.xml framework fallback for ONNX: ONNX Runtime contrib ops opforge has no
converter for are listed in the file, become FrameworkNodes whose types and shapes ONNX Runtime
computes, and run on the CPU device through ONNX Runtime (HETERO:GPU,CPU places them on CPU)."""

from __future__ import annotations

import builtins
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import opforge
import pytest
from onnx import TensorProto, helper, numpy_helper
from opforge.errors import ExtensionError, ModelFormatError, UnsupportedOpError
from opforge.frontend import FrameworkNode, OpExtension
from opforge.frontend.convert import convert_model
from opforge.reference import evaluate_model

ort = pytest.importorskip("onnxruntime")

H = 16
SEED = 0

MAPPING = """<?xml version="1.0"?>
<!-- the seeds' format; ONNX NativeTypes carry their domain -->
<CustomLayersMapping>
  <CustomLayer NativeType="com.microsoft::FastGelu" hasParam="false" protoParamName=""/>
  <CustomLayer NativeType="com.microsoft::SkipLayerNormalization" hasParam="true" protoParamName=""/>
  <CustomLayer NativeType="com.microsoft::BiasGelu" hasParam="false"/>
</CustomLayersMapping>
"""


def contrib_model(batch: int | str = 2) -> onnx.ModelProto:
    """x -> MatMul -> FastGelu(+bias) -> SkipLayerNormalization(skip = x) -> Relu -> MatMul
    -> BiasGelu -> Add(x): standard ops around three com.microsoft contrib ops."""
    rng = np.random.default_rng(SEED)
    w1 = (rng.standard_normal((H, H)) * 0.3).astype(np.float32)
    w2 = (rng.standard_normal((H, H)) * 0.3).astype(np.float32)
    init = {"W1": w1, "W2": w2, "fg_bias": rng.standard_normal(H).astype(np.float32),
            "gamma": rng.uniform(0.5, 1.5, H).astype(np.float32), "beta": rng.standard_normal(H).astype(np.float32),
            "bg_bias": rng.standard_normal(H).astype(np.float32)}
    nodes = [
        helper.make_node("MatMul", ["x", "W1"], ["mm1"], name="mm1"),
        helper.make_node("FastGelu", ["mm1", "fg_bias"], ["fg"], name="fast_gelu", domain="com.microsoft"),
        helper.make_node("SkipLayerNormalization", ["fg", "x", "gamma", "beta"], ["sln"], name="skip_ln",
                         domain="com.microsoft", epsilon=1e-3),
        helper.make_node("Relu", ["sln"], ["relu"], name="relu"),
        helper.make_node("MatMul", ["relu", "W2"], ["mm2"], name="mm2"),
        helper.make_node("BiasGelu", ["mm2", "bg_bias"], ["bg"], name="bias_gelu", domain="com.microsoft"),
        helper.make_node("Add", ["bg", "x"], ["y"], name="add"),
    ]
    graph = helper.make_graph(
        nodes, "contrib", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 4, H])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 4, H])],
        [numpy_helper.from_array(v, k) for k, v in init.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                   helper.make_opsetid("com.microsoft", 1)])


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    model = tmp_path / "contrib.onnx"
    model.write_bytes(contrib_model().SerializeToString())
    mapping = tmp_path / "CustomLayersMapping.xml"
    mapping.write_text(MAPPING, encoding="utf-8")
    return model, mapping


def _x(batch: int = 2) -> np.ndarray:
    return np.random.default_rng(SEED + 1).standard_normal((batch, 4, H)).astype(np.float32)


def _ort(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    return np.asarray(ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
                      .run(None, {"x": x})[0])


def _fallbacks(model: opforge.Model) -> dict[str, Any]:
    return {n.attrs.op_type: n for n in model.get_ordered_ops() if n.op is FrameworkNode}


def test_without_the_mapping_one_error_names_every_contrib_op(files: tuple[Path, Path]) -> None:
    with pytest.raises(UnsupportedOpError) as info:
        convert_model(files[0])
    msg = str(info.value)
    assert "3 op type(s) have no converter" in msg
    for op, node in (("FastGelu", "fast_gelu"), ("SkipLayerNormalization", "skip_ln"), ("BiasGelu", "bias_gelu")):
        assert f"com.microsoft::{op}" in msg and repr(node) in msg
    assert '<CustomLayer NativeType="com.microsoft::BiasGelu" hasParam="true"/>' in msg


def test_listed_contrib_ops_convert_with_framework_shapes_and_match_onnx_runtime(files: tuple[Path, Path]) -> None:
    model = convert_model(files[0], extension=str(files[1]))
    fb = _fallbacks(model)
    assert sorted(fb) == ["BiasGelu", "FastGelu", "SkipLayerNormalization"]
    for n in fb.values():
        assert n.attrs.domain == "com.microsoft" and n.attrs.payload
        assert [(s.type, s.shape) for s in n.output_specs] == [(opforge.Type.f32, opforge.PartialShape([2, 4, H]))]
    # hasParam: SkipLayerNormalization carries epsilon (1e-3, not the 1e-12 default), the others none
    assert fb["SkipLayerNormalization"].attrs.has_param and fb["SkipLayerNormalization"].attrs.attributes == {
        "epsilon": pytest.approx(1e-3)}
    assert not fb["FastGelu"].attrs.has_param
    assert "mapping file" in model.rt_info["conversion_providers"]["com.microsoft::FastGelu"]
    x = _x()
    ref = _ort(contrib_model(), x)
    np.testing.assert_allclose(evaluate_model(model, {"x": x})[0], ref, rtol=1e-6, atol=1e-6)
    compiled = opforge.Core().compile_model(model, "CPU")
    np.testing.assert_allclose(compiled([x])[0], ref, rtol=1e-5, atol=1e-5)


def test_has_param_false_drops_the_attributes(tmp_path: Path, files: tuple[Path, Path]) -> None:
    """SkipLayerNormalization listed with hasParam="false" runs with ONNX Runtime's default
    epsilon, so its output differs from the model's (epsilon 1e-3) by a measurable amount."""
    mapping = tmp_path / "no_params.xml"
    mapping.write_text(MAPPING.replace('SkipLayerNormalization" hasParam="true"',
                                       'SkipLayerNormalization" hasParam="false"'), encoding="utf-8")
    model = convert_model(files[0], extension=mapping)
    assert _fallbacks(model)["SkipLayerNormalization"].attrs.attributes == {}
    proto = contrib_model()
    for n in proto.graph.node:
        if n.op_type == "SkipLayerNormalization":
            del n.attribute[:]
    x = _x()
    np.testing.assert_allclose(evaluate_model(model, {"x": x})[0], _ort(proto, x), rtol=1e-6, atol=1e-6)
    assert not np.allclose(_ort(proto, x), _ort(contrib_model(), x), rtol=1e-6, atol=1e-6)


def test_hetero_gpu_cpu_places_fallback_nodes_on_cpu(files: tuple[Path, Path]) -> None:
    core = opforge.Core()
    if not any(d.startswith("GPU") for d in core.available_devices):
        pytest.skip(f"no GPU device (OpenCL) here: {core.available_devices}")
    model = convert_model(files[0], extension=files[1])
    fb_names = {n.name for n in _fallbacks(model).values()}
    gpu = core.query_model(model, "GPU")
    assert not fb_names & set(gpu) and gpu  # the standard ops are on GPU, the fallbacks are not
    cpu = core.query_model(model, "CPU")
    assert all(cpu[n] == "CPU" for n in fb_names)
    placement = core.query_model(model, "HETERO:GPU,CPU")
    assert {placement[n] for n in fb_names} == {"CPU"}
    assert placement[next(n.name for n in model.get_ordered_ops() if n.type_name == "MatMul")].startswith("GPU")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = core.compile_model(model, "HETERO:GPU,CPU")
    x = _x()
    np.testing.assert_allclose(compiled([x])[0], _ort(contrib_model(), x), rtol=1e-4, atol=1e-4)
    report = compiled.get_property("HETERO_PLACEMENT")
    assert all(report.nodes[n].device == "CPU" for n in fb_names)


def test_ir_round_trip_keeps_the_framework_node_and_runs(files: tuple[Path, Path], tmp_path: Path) -> None:
    model = convert_model(files[0], extension=files[1])
    xml = tmp_path / "ir" / "contrib.xml"
    xml.parent.mkdir()
    opforge.save_model(model, xml)
    text = xml.read_text(encoding="utf-8")
    assert 'type="FrameworkNode"' in text and 'op_type="SkipLayerNormalization"' in text and "payload=" in text
    back = opforge.read_model(xml)
    fb = _fallbacks(back)
    assert fb["SkipLayerNormalization"].attrs.has_param and not fb["FastGelu"].attrs.has_param
    x = _x()
    got = opforge.Core().compile_model(back, "CPU")([x])[0]
    np.testing.assert_allclose(got, _ort(contrib_model(), x), rtol=1e-5, atol=1e-5)


def test_dynamic_batch_reshapes_and_runs_other_shapes(tmp_path: Path, files: tuple[Path, Path]) -> None:
    path = tmp_path / "dyn.onnx"
    path.write_bytes(contrib_model("N").SerializeToString())
    model = convert_model(path, extension=files[1])
    assert str(_fallbacks(model)["FastGelu"].output_specs[0].shape) == "[?,4,16]"
    compiled = opforge.Core().compile_model(model, "CPU")
    for batch in (1, 3):
        x = _x(batch)
        np.testing.assert_allclose(compiled([x])[0], _ort(contrib_model("N"), x), rtol=1e-5, atol=1e-5)


def test_core_add_extension_and_cli_take_the_mapping(files: tuple[Path, Path], tmp_path: Path) -> None:
    core = opforge.Core()
    core.add_extension(str(files[1]))
    model = core.read_model(files[0])
    assert sorted(_fallbacks(model)) == ["BiasGelu", "FastGelu", "SkipLayerNormalization"]
    from opforge.cli import main

    out = tmp_path / "cli_m.xml"
    assert main(["convert", str(files[0]), "--extension", str(files[1]), "-o", str(out)]) in (0, None)
    assert 'type="FrameworkNode"' in out.read_text(encoding="utf-8")


def test_mapping_file_beats_extensions_and_standard_translators(files: tuple[Path, Path], tmp_path: Path) -> None:
    """Priority as in the seeds: mapping file > extensions > standard translators. Relu has a
    standard translator and here also a user extension; listed in the file, it is a fallback."""
    mapping = tmp_path / "relu.xml"
    mapping.write_text(MAPPING.replace("</CustomLayersMapping>",
                                       '<CustomLayer NativeType="Relu" hasParam="false"/></CustomLayersMapping>'),
                       encoding="utf-8")
    model = convert_model(files[0], extension=[OpExtension("Sigmoid", "Relu", framework="onnx"), mapping])
    assert "Relu" in _fallbacks(model)
    assert not any(n.type_name == "Sigmoid" for n in model.get_ordered_ops())
    x = _x()
    np.testing.assert_allclose(evaluate_model(model, {"x": x})[0], _ort(contrib_model(), x), rtol=1e-6, atol=1e-6)
    # without the file, the user extension wins over the standard translator
    model = convert_model(files[0], extension=[OpExtension("Sigmoid", "Relu", framework="onnx"),
                                               files[1]])
    assert any(n.type_name == "Sigmoid" for n in model.get_ordered_ops())


def test_without_onnxruntime_the_error_names_the_extra(files: tuple[Path, Path], monkeypatch: Any) -> None:
    model = convert_model(files[0], extension=files[1])
    from opforge_onnx import fallback

    real_import = builtins.__import__

    def no_ort(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "onnxruntime" or name.startswith("onnxruntime."):
            raise ImportError("No module named 'onnxruntime'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ort)
    runtime = fallback.OnnxFallbackRuntime()  # a fresh one: no cached sessions
    monkeypatch.setattr("opforge_onnx.frontend._runtime", lambda: runtime)
    with pytest.raises(UnsupportedOpError, match=r"pip install 'opforge-onnx\[fallback\]'"):
        evaluate_model(model, {"x": _x()})
    with pytest.raises(UnsupportedOpError, match=r"pip install 'opforge-onnx\[fallback\]'"):
        convert_model(files[0], extension=files[1])


@pytest.mark.parametrize(("text", "error", "match"), [
    ("<CustomLayersMapping>\n  <CustomLayer NativeType='A'>\n</CustomLayersMapping>", ModelFormatError,
     r"bad\.xml', line 3: not well-formed"),
    ("<Mapping/>", ExtensionError, r"line 1: the root element is <Mapping>"),
    ("<CustomLayersMapping>\n\n  <CustomLayer hasParam='true'/>\n</CustomLayersMapping>", ExtensionError,
     r"line 3: <CustomLayer> needs NativeType"),
    ("<CustomLayersMapping>\n  <CustomLayer NativeType='A' hasParam='yes'/>\n</CustomLayersMapping>",
     ExtensionError, r"line 2: hasParam must be \"true\" or \"false\""),
    ("<CustomLayersMapping>\n  <CustomLayer NativeType='A' Param='1'/>\n</CustomLayersMapping>",
     ExtensionError, r"line 2: unknown attribute\(s\) Param"),
    ("<CustomLayersMapping><CustomLayer NativeType='A'/>\n<CustomLayer NativeType='A'/></CustomLayersMapping>",
     ExtensionError, r"line 2: NativeType 'A' is listed twice \(first on line 1\)"),
    ('<!DOCTYPE x [<!ENTITY a "aaaa">]><CustomLayersMapping/>', ModelFormatError, r"refused"),
])
def test_bad_mapping_files_name_file_and_line(tmp_path: Path, files: tuple[Path, Path], text: str,
                                              error: type[Exception], match: str) -> None:
    bad = tmp_path / "bad.xml"
    bad.write_text(text, encoding="utf-8")
    with pytest.raises(error, match=match):
        convert_model(files[0], extension=bad)


def test_a_data_dependent_output_dimension_stays_dynamic(tmp_path: Path) -> None:
    """NonZero's count depends on the data: the runs on zeros and ones differ, so that dimension is
    dynamic; the reference runs it, the CPU device (static shapes) refuses it naming the node."""
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("NonZero", ["r"], ["y"], name="nz")], "nz",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, None)])
    path = tmp_path / "nz.onnx"
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    mapping = tmp_path / "nz.xml"
    mapping.write_text('<CustomLayersMapping><CustomLayer NativeType="NonZero"/></CustomLayersMapping>')
    model = convert_model(path, extension=mapping)
    assert str(_fallbacks(model)["NonZero"].output_specs[0].shape) == "[2,?]"
    x = np.array([[1, -1, 2], [0, 3, 1]], np.float32)
    np.testing.assert_array_equal(evaluate_model(model, {"x": x})[0], np.stack(np.nonzero(np.maximum(x, 0))))
    with pytest.raises(UnsupportedOpError, match=r"nz.*not known at compile time"):
        opforge.Core().compile_model(model, "CPU")
