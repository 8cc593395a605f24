"""Named-port extensions: OpExtension with named input/output maps, ConversionExtensions that
read ``get_input("X", i)`` and return outputs by name, priorities over the standard translators,
mapping files, and the one-error-lists-all behaviour for custom-named ops."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from opforge.errors import ConversionError, UnsupportedOpError
from opforge.frontend.convert import convert_model
from opforge.frontend.extensions import ConversionExtension, OpExtension
from opforge.reference import evaluate_model
from paddle_test_utils import SEED, assert_close, legacy_model, rename_legacy_op, rename_pir_op, save_both

RNG = np.random.default_rng(SEED)
X = RNG.standard_normal((2, 6, 4)).astype(np.float32)


def _legacy(paddle: Any, tmp_path: Path) -> tuple[Path, list[np.ndarray], list[np.ndarray]]:
    """relu -> scale(3, no bias) -> split into 2 along axis 1 -> both fetched."""

    def body(b: Any, d: dict[str, Any]) -> list[Any]:
        r = b.op("relu", {"X": d["x"]})
        s = b.op("scale", {"X": r}, {"scale": 3.0, "bias": 0.0, "bias_after_scale": True})
        return list(b.op("split", {"X": s}, {"num": 2, "axis": 1}, n_out={"Out": 2}))

    return legacy_model(paddle, tmp_path / "ext", {"x": X}, body)


def test_custom_named_op_lists_all_unsupported(paddle: Any, tmp_path: Path) -> None:
    path, _, _ = _legacy(paddle, tmp_path)
    rename_legacy_op(path, "relu", "my_relu")
    rename_legacy_op(path, "split", "my_split")
    with pytest.raises(UnsupportedOpError) as info:
        convert_model(path)
    msg = str(info.value)
    assert "2 op type(s)" in msg and "my_relu: 1 node(s)" in msg and "my_split: 1 node(s)" in msg
    assert str(path) in msg
    # allow_unsupported keeps placeholders, and the rest converts
    model = convert_model(path, allow_unsupported=True)
    assert [n.type_name for n in model.get_ordered_ops()].count("FrameworkNode") == 2


def test_op_extension_named_maps(paddle: Any, tmp_path: Path) -> None:
    """The part OpenVINO lacks: OpExtension maps Paddle's named ports explicitly."""
    path, inputs, ref = _legacy(paddle, tmp_path)
    rename_legacy_op(path, "relu", "my_relu")
    rename_legacy_op(path, "scale", "my_identity")
    from opforge_template_extension import TemplateIdentity

    model = convert_model(path, extension=[
        OpExtension("Relu", "my_relu", framework="paddle", inputs=["X"], outputs=["Out"]),
        # the template extension's custom op; its 'scale' attribute is copied from Paddle's by name
        OpExtension(TemplateIdentity, "my_identity", framework="paddle", inputs=["X"], outputs=["Out"]),
    ])
    assert any(n.type_name == "Identity" and n.version == "template_extension" for n in model.get_ordered_ops())
    assert_close(evaluate_model(model, inputs), ref, "named OpExtension")


def test_template_extension_plugin_maps_its_paddle_op_without_extension_arguments(
        paddle: Any, tmp_path: Path) -> None:
    """The installed template extension registers a named-port OpExtension for Paddle: a model
    with its custom-named op converts with no extension= at all."""
    pytest.importorskip("opforge_template_extension")
    path, inputs, ref = _legacy(paddle, tmp_path)
    rename_legacy_op(path, "scale", "template_identity")
    model = convert_model(path)
    custom = [n for n in model.get_ordered_ops() if n.version == "template_extension"]
    assert [n.type_name for n in custom] == ["Identity"]
    assert_close(evaluate_model(model, inputs), ref, "template extension Paddle mapping")


def test_op_extension_mapping_file(paddle: Any, tmp_path: Path) -> None:
    path, inputs, ref = _legacy(paddle, tmp_path)
    rename_legacy_op(path, "relu", "my_relu")
    mapping = tmp_path / "ops.json"
    mapping.write_text(json.dumps({"mappings": [
        {"framework": "paddle", "op_type": "my_relu", "target": "Relu", "inputs": ["X"], "outputs": ["Out"]}]}))
    assert_close(evaluate_model(convert_model(path, extension=str(mapping)), inputs), ref, "mapping file")


def test_conversion_extension_named_outputs(paddle: Any, tmp_path: Path) -> None:
    """A ConversionExtension reads named inputs and returns a list-valued named output."""
    path, inputs, ref = _legacy(paddle, tmp_path)
    rename_legacy_op(path, "split", "my_split")
    seen: dict[str, Any] = {}

    def my_split(ctx: Any) -> Any:
        # the legacy split lists its optional tensor ports too, empty
        seen["in"] = (ctx.get_input_size("X"), "X" in ctx.get_input_names(), ctx.get_input_size("AxisTensor"))
        seen["out"] = (ctx.get_output_names(), ctx.get_output_size("Out"), ctx.has_output("Out"))
        x = ctx.get_input("X", 0)
        parts = ctx.op("Split", x, ctx.const(np.int64(ctx.get_attribute("axis"))),
                       num_splits=ctx.get_output_size("Out"))
        return {"Out": parts.outputs()}

    model = convert_model(path, extension=ConversionExtension("my_split", my_split, framework="paddle"))
    assert seen == {"in": (1, True, 0), "out": (["Out"], 2, True)}
    assert_close(evaluate_model(model, inputs), ref, "named-output ConversionExtension")


def test_user_extension_overrides_standard_translator(paddle: Any, tmp_path: Path) -> None:
    path, inputs, _ = _legacy(paddle, tmp_path)

    def relu_as_sigmoid(ctx: Any) -> Any:
        return {"Out": ctx.op("Sigmoid", ctx.get_input("X"))}

    model = convert_model(path, extension=ConversionExtension("relu", relu_as_sigmoid, framework="paddle"))
    sig = 1 / (1 + np.exp(-X.astype(np.float64)))
    assert_close(evaluate_model(model, inputs), [a.astype(np.float32) for a in np.split(sig * 3, 2, axis=1)],
                 "override")
    assert "user extension" in model.rt_info["conversion_providers"]["relu"]


def test_conversion_extension_wrong_output_name(paddle: Any, tmp_path: Path) -> None:
    path, _, _ = _legacy(paddle, tmp_path)

    def bad(ctx: Any) -> Any:
        return {"Y": ctx.get_input("X")}

    with pytest.raises(ConversionError, match=r"returned output 'Y'.*output ports Out"):
        convert_model(path, extension=ConversionExtension("relu", bad, framework="paddle"))


def test_pir_custom_op(paddle: Any, tmp_path: Path) -> None:
    """A custom_op-dialect op in a PIR program: ports are positional (in0 / out0), so a
    positional OpExtension or a ConversionExtension using get_input(0) maps it."""

    class Net(paddle.nn.Layer):
        def forward(self, x: Any) -> Any:
            return paddle.nn.functional.relu(x) * 2.0

    net = Net()
    with paddle.no_grad():
        ref = [net(paddle.to_tensor(X)).numpy()]
    paths = save_both(paddle, net, [paddle.static.InputSpec(list(X.shape), "float32", "x")], tmp_path / "c")
    path = rename_pir_op(paths["pir"], "1.relu", "3.my_relu")
    with pytest.raises(UnsupportedOpError, match="my_relu: 1 node"):
        convert_model(path)
    model = convert_model(path, extension=OpExtension("Relu", "my_relu", framework="paddle"))
    assert_close(evaluate_model(model, [X]), ref, "PIR custom op")
    model = convert_model(path, extension=ConversionExtension(
        "my_relu", lambda ctx: {"out0": ctx.op("Relu", ctx.get_input(0))}, framework="paddle"))
    assert_close(evaluate_model(model, [X]), ref, "PIR custom op (ConversionExtension)")


def test_op_extension_maps_a_list_valued_output(paddle: Any, tmp_path: Path) -> None:
    """OpExtension(outputs=["Out"]) on a split: Split's outputs are dealt to Out's variables."""

    def body(b: Any, d: dict[str, Any]) -> list[Any]:
        axis = b.op("fill_constant", {}, {"shape": [], "dtype": 3, "value": 1.0}, dtype="int64")
        return list(b.op("split", {"X": d["x"], "AxisTensor": axis}, {"num": 3, "axis": 0}, n_out={"Out": 3}))

    path, inputs, ref = legacy_model(paddle, tmp_path / "split3", {"x": X}, body)
    rename_legacy_op(path, "split", "my_split")
    model = convert_model(path, extension=OpExtension(
        "Split", "my_split", {"num_splits": "num"}, framework="paddle", inputs=["X", "AxisTensor"], outputs=["Out"]))
    assert_close(evaluate_model(model, inputs), ref, "OpExtension with a list-valued output")
    assert [n.type_name for n in model.get_ordered_ops()].count("Split") == 1


def test_errors_name_paddle_nodes_without_a_domain(paddle: Any, tmp_path: Path) -> None:
    path, _, _ = _legacy(paddle, tmp_path)

    def broken(ctx: Any) -> Any:
        raise ctx.error("no way")

    with pytest.raises(ConversionError) as info:
        convert_model(path, extension=ConversionExtension("relu", broken, framework="paddle"))
    assert "(paddle relu)" in str(info.value) and "domain" not in str(info.value)
