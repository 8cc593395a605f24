"""Bad and unsupported input: one error listing every unsupported op, placeholders with
allow_unsupported, external data confined to the model's folder, malformed bytes."""

from __future__ import annotations

import os
import pathlib

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh
from opforge.errors import ExternalDataError, ModelFormatError, UnsupportedOpError
from opforge.frontend import FrameworkNode
from opforge.frontend.convert import convert_model
from opforge.reference import evaluate_model
from opforge_onnx.testing.helpers import make_model


def unsupported_model() -> onnx.ModelProto:
    nodes = [
        h.make_node("Relu", ["x"], ["a"], name="relu"),
        h.make_node("FancyOp", ["a"], ["b"], name="fancy1", domain="com.example"),
        h.make_node("FancyOp", ["b"], ["c"], name="fancy2", domain="com.example"),
        h.make_node("Whatever", ["c"], ["d"], name="what"),
        h.make_node("Sigmoid", ["x"], ["e"], name="sig"),
    ]
    return make_model(nodes, [h.make_tensor_value_info("x", T.FLOAT, [2, 3])],
                      [h.make_tensor_value_info("d", T.FLOAT, [2, 3]), h.make_tensor_value_info("e", T.FLOAT, [2, 3])],
                      domains={"com.example": 1}, opset=17)


def test_one_error_lists_every_unsupported_op() -> None:
    with pytest.raises(UnsupportedOpError) as info:
        convert_model(unsupported_model().SerializeToString(), framework="onnx")
    msg = str(info.value)
    assert "2 op type(s)" in msg
    assert "com.example::FancyOp (domain 'com.example', opset 1): 2 node(s): 'fancy1', 'fancy2'" in msg
    assert "Whatever (domain 'ai.onnx', opset 17): 1 node(s): 'what'" in msg
    assert "ConversionExtension" in msg and "allow_unsupported" in msg


def test_allow_unsupported_keeps_placeholders() -> None:
    m = convert_model(unsupported_model().SerializeToString(), framework="onnx", allow_unsupported=True)
    placeholders = [n for n in m.get_ordered_ops() if n.op is FrameworkNode]
    assert sorted(n.attrs.op_type for n in placeholders) == ["FancyOp", "FancyOp", "Whatever"]
    assert placeholders[0].attrs.domain in ("com.example", "")
    # the rest is inspectable: the Sigmoid output keeps its type and shape
    assert m.output(1).partial_shape.dims == (2, 3)
    with pytest.raises(UnsupportedOpError, match="placeholder"):
        evaluate_model(m, {"x": np.zeros((2, 3), np.float32)})


# ---------------------------------------------------------------------------- external data
def external_model(location: str, offset: int = 0, length: int | None = None) -> onnx.ModelProto:
    t = onnx.TensorProto()
    t.name = "W"
    t.data_type = T.FLOAT
    t.dims.extend([2, 3])
    t.data_location = onnx.TensorProto.EXTERNAL
    for k, v in [("location", location), ("offset", str(offset))] + ([("length", str(length))] if length else []):
        e = t.external_data.add()
        e.key, e.value = k, v
    return make_model([h.make_node("Add", ["x", "W"], ["y"])], [h.make_tensor_value_info("x", T.FLOAT, [2, 3])],
                      [h.make_tensor_value_info("y", T.FLOAT, [2, 3])], [t])


W = np.arange(6, dtype=np.float32).reshape(2, 3)


def save(tmp: pathlib.Path, model: onnx.ModelProto) -> pathlib.Path:
    d = tmp / "model"
    d.mkdir(exist_ok=True)
    p = d / "m.onnx"
    p.write_bytes(model.SerializeToString())
    return p


def test_external_data_inside_the_folder_is_read(tmp_path: pathlib.Path) -> None:
    p = save(tmp_path, external_model("weights/w.bin", offset=8, length=24))
    (p.parent / "weights").mkdir()
    (p.parent / "weights" / "w.bin").write_bytes(b"\0" * 8 + W.tobytes())
    m = convert_model(p)
    np.testing.assert_array_equal(evaluate_model(m, {"x": np.zeros((2, 3), np.float32)})[0], W)


@pytest.mark.parametrize("location", ["../w.bin", "a/../../w.bin", "ok/../../w.bin"])
def test_external_data_dotdot_is_refused(tmp_path: pathlib.Path, location: str) -> None:
    (tmp_path / "w.bin").write_bytes(W.tobytes())
    with pytest.raises(ExternalDataError, match="escapes the model's folder"):
        convert_model(save(tmp_path, external_model(location)))


@pytest.mark.parametrize("location", ["ABS", "C:\\w.bin", "\\\\host\\share\\w.bin"])
def test_external_data_absolute_path_is_refused(tmp_path: pathlib.Path, location: str) -> None:
    target = tmp_path / "w.bin"
    target.write_bytes(W.tobytes())
    loc = str(target) if location == "ABS" else location
    with pytest.raises(ExternalDataError, match="absolute"):
        convert_model(save(tmp_path, external_model(loc)))


def test_external_data_symlink_out_of_the_folder_is_refused(tmp_path: pathlib.Path) -> None:
    outside = tmp_path / "secret.bin"
    outside.write_bytes(W.tobytes())
    p = save(tmp_path, external_model("w.bin"))
    os.symlink(outside, p.parent / "w.bin")
    with pytest.raises(ExternalDataError, match="symlink"):
        convert_model(p)
    os.symlink(tmp_path, p.parent / "dirlink")
    p2 = save(tmp_path, external_model("dirlink/secret.bin"))
    with pytest.raises(ExternalDataError, match="symlink"):
        convert_model(p2)


def test_external_data_offsets_are_bounds_checked(tmp_path: pathlib.Path) -> None:
    p = save(tmp_path, external_model("w.bin", offset=16, length=24))
    (p.parent / "w.bin").write_bytes(W.tobytes())  # 24 bytes: 16 + 24 is past the end
    with pytest.raises(ExternalDataError, match="offset=16, length=24 exceed"):
        convert_model(p)
    p = save(tmp_path, external_model("w.bin", length=2**62))
    with pytest.raises(ExternalDataError, match="exceed"):
        convert_model(p)


def test_external_data_from_bytes_is_refused() -> None:
    with pytest.raises(ExternalDataError, match="given as bytes"):
        convert_model(external_model("w.bin").SerializeToString(), framework="onnx")


# ---------------------------------------------------------------------------- bad bytes
@pytest.mark.parametrize("kind", ["random", "truncated", "empty", "png"])
def test_bad_bytes_raise_model_format_error_naming_the_file(tmp_path: pathlib.Path, kind: str) -> None:
    good = make_model([h.make_node("Relu", ["x"], ["y"])], [h.make_tensor_value_info("x", T.FLOAT, [2])],
                      [h.make_tensor_value_info("y", T.FLOAT, [2])],
                      [nh.from_array(np.zeros(1000, np.float32), "unused")]).SerializeToString()
    data = {
        "random": np.random.default_rng(1).integers(0, 256, 4096, dtype=np.uint8).tobytes(),
        "truncated": good[: len(good) // 2],
        "empty": b"",
        "png": b"\x89PNG\r\n\x1a\n" + b"\0" * 64,
    }[kind]
    p = tmp_path / "model.onnx"
    p.write_bytes(data)
    with pytest.raises(ModelFormatError, match=r"model\.onnx"):
        convert_model(p)


def test_raw_data_size_mismatch_is_refused() -> None:
    t = nh.from_array(np.zeros(6, np.float32), "W")
    t.raw_data = t.raw_data[:8]
    model = make_model([h.make_node("Add", ["x", "W"], ["y"])], [h.make_tensor_value_info("x", T.FLOAT, [6])],
                       [h.make_tensor_value_info("y", T.FLOAT, [6])], [t])
    with pytest.raises(ModelFormatError, match="raw_data holds 8 bytes"):
        convert_model(model.SerializeToString(), framework="onnx")


def test_dangling_input_names_node_and_value() -> None:
    model = make_model([h.make_node("Relu", ["nowhere"], ["y"], name="r")], [h.make_tensor_value_info("x", T.FLOAT, [2])],
                       [h.make_tensor_value_info("y", T.FLOAT, [2])])
    with pytest.raises(Exception, match="node 'r' \\(Relu\\) input 0 reads 'nowhere'"):
        convert_model(model.SerializeToString(), framework="onnx")
