"""Untrusted ONNX files: no hang on special files, SSA and opset checks as onnx.checker makes
them, and declared sizes checked against opforge.limits before anything is allocated."""

from __future__ import annotations

import os
import pathlib
import re
import threading

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from opforge import Core
from opforge.errors import (
    ExternalDataError,
    ModelFormatError,
    ModelValidationError,
    ResourceLimitError,
    UnsupportedOpError,
)
from opforge.frontend.convert import convert_model
from opforge.limits import Limits, using
from opforge.reference import evaluate_model
from opforge_onnx.testing.helpers import make_model
from opforge_onnx.validation import supported_opsets

X = h.make_tensor_value_info("x", T.FLOAT, [2])
Y = h.make_tensor_value_info("y", T.FLOAT, [2])


def relu_model(**kw: object) -> onnx.ModelProto:
    return make_model([h.make_node("Relu", ["x"], ["y"], name="r")], [X], [Y], opset=17, **kw)  # type: ignore[arg-type]


def read_in_thread(fn: object, timeout: float = 10.0) -> BaseException | None:
    """Run ``fn`` in a daemon thread; a hang fails the test instead of blocking the suite."""
    box: list[BaseException | None] = []

    def run() -> None:
        try:
            fn()  # type: ignore[operator]
            box.append(None)
        except BaseException as err:  # noqa: BLE001 - the test inspects it
            box.append(err)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout)
    assert box, f"the read blocked for {timeout} s"
    return box[0]


# ---------------------------------------------------------------------------- special files
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("name", ["m.onnx", "m.bin", "model"])
def test_fifo_named_like_a_model_is_refused_without_blocking(tmp_path: pathlib.Path, name: str) -> None:
    fifo = tmp_path / name
    os.mkfifo(fifo)
    for read in (lambda: Core().read_model(fifo), lambda: convert_model(str(fifo), framework="onnx")):
        err = read_in_thread(read)
        assert isinstance(err, ModelFormatError), err
        assert str(fifo) in str(err) and "FIFO" in str(err) and "not a regular file" in str(err)


def test_directory_and_device_named_like_a_model(tmp_path: pathlib.Path) -> None:
    d = tmp_path / "dir.onnx"
    d.mkdir()
    with pytest.raises(ModelFormatError, match=r"dir\.onnx' is not a regular file but a directory"):
        Core().read_model(d)
    if os.path.exists("/dev/zero"):
        err = read_in_thread(lambda: Core().read_model("/dev/zero"))
        assert isinstance(err, ModelFormatError) and "character device" in str(err)


# ---------------------------------------------------------------------------- SSA
def test_two_producers_of_one_tensor() -> None:
    nodes = [h.make_node("Relu", ["x"], ["y"], name="first"), h.make_node("Neg", ["x"], ["y"], name="second")]
    m = make_model(nodes, [X], [Y], opset=17)
    with pytest.raises(onnx.checker.ValidationError):
        onnx.checker.check_model(m)  # the oracle refuses it too
    with pytest.raises(ModelValidationError,
                       match=r"tensor 'y' is produced twice: by node 'first' \(Relu\) and by node 'second' \(Neg\)"):
        convert_model(m.SerializeToString(), framework="onnx")


def test_two_graph_inputs_of_one_name() -> None:
    m = make_model([h.make_node("Relu", ["x"], ["y"], name="r")], [X, X], [Y], opset=17)
    with pytest.raises(ModelValidationError, match=r"graph input 'x' is declared twice"):
        convert_model(m.SerializeToString(), framework="onnx")


def test_node_output_clashing_with_an_initializer() -> None:
    w = h.make_tensor("w", T.FLOAT, [2], [1.0, 2.0])
    nodes = [h.make_node("Relu", ["x"], ["w"], name="r"), h.make_node("Add", ["x", "w"], ["y"], name="add")]
    m = make_model(nodes, [X], [Y], opset=17, initializers=[w])
    with pytest.raises(ModelValidationError, match=r"tensor 'w' is produced twice: by initializer and by node 'r'"):
        convert_model(m.SerializeToString(), framework="onnx")
    dup = make_model([h.make_node("Add", ["x", "w"], ["y"], name="add")], [X], [Y], opset=17,
                     initializers=[w, h.make_tensor("w", T.FLOAT, [2], [3.0, 4.0])])
    with pytest.raises(ModelValidationError, match=r"initializer name 'w' is not unique"):
        convert_model(dup.SerializeToString(), framework="onnx")


def test_initializer_listed_as_graph_input_is_still_allowed() -> None:
    # ONNX IR < 4 requires it, later versions allow it (the initializer is the input's default).
    w = h.make_tensor("w", T.FLOAT, [2], [1.0, 2.0])
    m = make_model([h.make_node("Add", ["x", "w"], ["y"], name="add")],
                   [X, h.make_tensor_value_info("w", T.FLOAT, [2])], [Y], opset=17, initializers=[w])
    out = evaluate_model(convert_model(m.SerializeToString(), framework="onnx"), {"x": np.ones(2, np.float32)})
    np.testing.assert_array_equal(out[0], [2.0, 3.0])


def test_two_producers_inside_an_if_branch() -> None:
    one = h.make_tensor_value_info("o", T.FLOAT, [2])
    then = h.make_graph([h.make_node("Relu", ["x"], ["o"], name="t1"), h.make_node("Neg", ["x"], ["o"], name="t2")],
                        "then", [], [one])
    other = h.make_graph([h.make_node("Neg", ["x"], ["o"], name="e1")], "else", [], [one])
    c = h.make_tensor_value_info("c", T.BOOL, [])
    node = h.make_node("If", ["c"], ["y"], name="if", then_branch=then, else_branch=other)
    m = make_model([node], [c, X], [Y], opset=17)
    with pytest.raises(ModelValidationError, match=r"tensor 'o' in subgraph 'then_branch' of node 'if' is produced "
                                                   r"twice: by node 't1' \(Relu\) and by node 't2' \(Neg\)"):
        convert_model(m.SerializeToString(), framework="onnx")


# ---------------------------------------------------------------------------- opset imports
@pytest.mark.parametrize("domain", ["", "ai.onnx"])
def test_unsupported_opset_versions(domain: str) -> None:
    m = relu_model()
    del m.opset_import[:]
    m.opset_import.append(h.make_opsetid(domain, 99))
    newest = supported_opsets()["ai.onnx"]
    with pytest.raises(ModelValidationError, match=rf"imports domain .* at opset version 99, outside the "
                                                   rf"supported range 1\.\.{newest}"):
        convert_model(m.SerializeToString(), framework="onnx")


@pytest.mark.parametrize("domain", ["", "com.example", " "])
@pytest.mark.parametrize("version", [0, -5, 2**31, 2**32])
def test_opset_versions_that_are_not_versions(domain: str, version: int) -> None:
    # Any domain: 2**32 overflowed onnx.defs.get_schema's C int (a bare TypeError; fuzz finding).
    m = relu_model()
    if domain:
        m.opset_import.append(h.make_opsetid(domain, version))
    else:
        m.opset_import[0].version = version
    shown = rf"'{re.escape(domain)}'" if domain else r"'' \(ai\.onnx\)"
    with pytest.raises(ModelFormatError, match=rf"the model imports domain {shown} at opset version {version}, "
                                               r"which is not an opset version \(versions are 1\.\.2147483647\)"):
        convert_model(m.SerializeToString(), framework="onnx")
    # the same in a local function's imports
    f = h.make_function("com.local", "F", ["a"], ["b"], [h.make_node("Relu", ["a"], ["b"])],
                        [h.make_opsetid("", 17), h.make_opsetid("com.other", version)])
    m = relu_model()
    m.functions.append(f)
    with pytest.raises(ModelFormatError, match=r"local function 'com\.local::F' imports domain 'com\.other' at "
                                               rf"opset version {version}"):
        convert_model(m.SerializeToString(), framework="onnx")


def test_custom_domain_version_within_int32_is_accepted() -> None:
    m = relu_model(domains={"com.example": 2**31 - 1})
    assert convert_model(m.SerializeToString(), framework="onnx").output(0).partial_shape is not None


# ---------------------------------------------------------------------------- limits
def initializer_model(t: onnx.TensorProto) -> onnx.ModelProto:
    return make_model([h.make_node("Add", ["x", t.name], ["y"], name="add")], [X], [Y], opset=17, initializers=[t])


def test_sparse_initializer_with_a_huge_dense_shape() -> None:
    # 60-odd bytes that ask for 2^31 floats (8 GiB) when densified.
    vals = h.make_tensor("s", T.FLOAT, [1], [1.0])
    idx = h.make_tensor("i", T.INT64, [1], [0])
    sp = h.make_sparse_tensor(vals, idx, [2**31])
    m = make_model([h.make_node("Relu", ["x"], ["y"], name="r")], [X], [Y], opset=17)
    m.graph.sparse_initializer.append(sp)
    data = m.SerializeToString()
    assert len(data) < 200
    with pytest.raises(ResourceLimitError, match=r"sparse tensor 's': dense form: shape \[2147483648\] needs "
                                                 r"8589934592 bytes, over the limit MAX_TENSOR_BYTES=.*"
                                                 r"OPFORGE_MAX_TENSOR_BYTES"):
        convert_model(data, framework="onnx")


@pytest.mark.parametrize(("dims", "match"), [
    ([1] * 100, r"tensor 'w': rank 100 of shape \[1, 1, 1, 1, 1, 1, 1, 1, \.\.\.\] \(rank 100\) exceeds the "
                r"limit MAX_TENSOR_RANK=32"),
    ([2**32, 2**32, 0], r"tensor 'w': dimension 4294967296 of shape \[4294967296, 4294967296, 0\] exceeds the "
                        r"limit MAX_DIMENSION="),
])
def test_initializer_rank_and_dimension_limits(dims: list[int], match: str) -> None:
    t = onnx.TensorProto(name="w", data_type=T.FLOAT, dims=dims)
    with pytest.raises(ResourceLimitError, match=match):
        convert_model(initializer_model(t).SerializeToString(), framework="onnx")


def test_limits_are_core_properties(tmp_path: pathlib.Path) -> None:
    t = h.make_tensor("w", T.FLOAT, [2], [1.0, 2.0])
    path = tmp_path / "m.onnx"
    path.write_bytes(initializer_model(t).SerializeToString())
    core = Core()
    core.set_property({"MAX_TENSOR_BYTES": 4})
    assert core.get_property("MAX_TENSOR_BYTES") == 4
    with pytest.raises(ResourceLimitError, match=r"m\.onnx: tensor 'w': shape \[2\] needs 8 bytes, over the limit "
                                                 r"MAX_TENSOR_BYTES=4"):
        core.read_model(path)
    assert Core().read_model(path) is not None  # another Core keeps the defaults
    core.set_property({"MAX_TENSOR_BYTES": "8"})
    assert core.read_model(path) is not None


def test_limit_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPFORGE_MAX_NODES", "1")
    nodes = [h.make_node("Relu", ["x"], ["a"], name="r1"), h.make_node("Relu", ["a"], ["y"], name="r2")]
    m = make_model(nodes, [X], [Y], opset=17)
    with pytest.raises(ResourceLimitError, match=r"node count \(subgraphs included\) 2 exceeds the limit MAX_NODES=1"):
        convert_model(m.SerializeToString(), framework="onnx")


def external_tensor(tmp_path: pathlib.Path, entries: list[tuple[str, str]], nfloats: int = 2) -> pathlib.Path:
    (tmp_path / "w.bin").write_bytes(np.arange(nfloats, dtype=np.float32).tobytes())
    t = onnx.TensorProto(name="w", data_type=T.FLOAT, dims=[nfloats], data_location=T.EXTERNAL)
    for k, v in entries:
        e = t.external_data.add()
        e.key, e.value = k, v
    m = make_model([h.make_node("Add", ["x", "w"], ["y"], name="add")],
                   [h.make_tensor_value_info("x", T.FLOAT, [nfloats])], [h.make_tensor_value_info("y", T.FLOAT, [nfloats])],
                   opset=17, initializers=[t])
    p = tmp_path / "m.onnx"
    p.write_bytes(m.SerializeToString())
    return p


def test_unknown_and_duplicate_external_data_keys(tmp_path: pathlib.Path) -> None:
    p = external_tensor(tmp_path, [("location", "w.bin"), ("__class__", "x")])
    with pytest.raises(ExternalDataError, match=r"tensor 'w': unknown external_data key '__class__'"):
        Core().read_model(p)
    p = external_tensor(tmp_path, [("location", "w.bin"), ("offset", "0"), ("offset", "4")])
    with pytest.raises(ExternalDataError, match=r"tensor 'w': external_data key 'offset' is given twice"):
        Core().read_model(p)
    p = external_tensor(tmp_path, [("location", "w.bin"), ("checksum", "abc")])
    assert Core().read_model(p) is not None  # every key ONNX defines is accepted


def test_external_data_reads_only_the_tensor_bytes(tmp_path: pathlib.Path) -> None:
    # A sparse 64 GiB external file holding a 2-float tensor: read whole (as before) it was a bare
    # MemoryError; now only the tensor's 8 bytes are read.
    p = external_tensor(tmp_path, [("location", "w.bin"), ("offset", str(2**36 - 8)), ("length", "8")])
    with open(tmp_path / "w.bin", "r+b") as f:
        f.truncate(2**36)
        f.seek(2**36 - 8)
        f.write(np.array([5.0, 6.0], np.float32).tobytes())
    m = Core().read_model(p)
    out = evaluate_model(m, {"x": np.zeros(2, np.float32)})
    np.testing.assert_array_equal(out[0], [5.0, 6.0])


def test_weights_limit_counts_every_tensor(tmp_path: pathlib.Path) -> None:
    p = external_tensor(tmp_path, [("location", "w.bin")], nfloats=16)
    with using(Limits({"MAX_WEIGHTS_BYTES": 32})), \
            pytest.raises(ResourceLimitError, match=r"tensor 'w': the weights read so far with this tensor needs 64 "
                                                    r"bytes, over the limit MAX_WEIGHTS_BYTES=32"):
        convert_model(str(p), framework="onnx")


def test_op_type_from_the_file_never_becomes_suggested_code() -> None:
    evil = 'X", framework="onnx")]); __import__("os").system("id'
    m = make_model([h.make_node(evil, ["x"], ["y"], name="n", domain="com.example")], [X], [Y], opset=17,
                   domains={"com.example": 1})
    with pytest.raises(UnsupportedOpError) as info:
        convert_model(m.SerializeToString(), framework="onnx")
    suggestion = str(info.value).split("To convert them", 1)[1]
    assert "__import__" not in suggestion and 'OpExtension("<opforge op>", "<op type>"' in suggestion
    plain = make_model([h.make_node("FancyOp", ["x"], ["y"], name="n", domain="com.example")], [X], [Y], opset=17,
                       domains={"com.example": 1})
    with pytest.raises(UnsupportedOpError, match=r'OpExtension\("<opforge op>", "FancyOp", framework="onnx", '
                                                 r'domain="com\.example"\)'):
        convert_model(plain.SerializeToString(), framework="onnx")



def test_names_that_are_not_utf8_are_a_format_error() -> None:
    # Found by the onnx_reader fuzz target: protobuf hands invalid UTF-8 in a string field over
    # as bytes, which reached onnx.defs.get_schema as a bare TypeError.
    m = relu_model()
    data = m.SerializeToString().replace(b"Relu", b"R\x9elu")
    with pytest.raises(ModelFormatError, match=r"node #0 in the main graph: its op_type is not valid UTF-8 text "
                                               r"\(b'R\\x9elu'\)"):
        convert_model(data, framework="onnx")


MARK = "Zq9xW"  # put into one string field, then made invalid UTF-8 in the serialized bytes


def _if_model() -> onnx.ModelProto:
    then = h.make_graph([h.make_node("Relu", ["x"], ["t"], name="inner")], "then", [],
                        [h.make_tensor_value_info("t", T.FLOAT, [2])])
    other = h.make_graph([h.make_node("Neg", ["x"], ["e"], name="inner2")], "else", [],
                         [h.make_tensor_value_info("e", T.FLOAT, [2])])
    c = h.make_tensor_value_info("c", T.BOOL, [])
    return make_model([h.make_node("If", ["c"], ["y"], name="if", then_branch=then, else_branch=other)], [c, X], [Y])


def _function_model() -> onnx.ModelProto:
    f = h.make_function("com.local", "F", ["a"], ["b"], [h.make_node("Relu", ["a"], ["b"], name="fr")],
                        [h.make_opsetid("", 17)])
    m = make_model([h.make_node("F", ["x"], ["y"], name="call", domain="com.local")], [X], [Y],
                   domains={"com.local": 1})
    m.functions.append(f)
    return m


def _set(m: onnx.ModelProto, path: str) -> onnx.ModelProto:
    """``m`` with MARK in the field at ``path`` (attribute access; ``[i]`` indexes a repeated field)."""
    *parents, last = path.split(".")
    obj: object = m
    for part in parents:
        name, _, idx = part.partition("[")
        obj = getattr(obj, name)
        if idx:
            obj = obj[int(idx.rstrip("]"))]  # type: ignore[index]
    name, _, idx = last.partition("[")
    if idx:
        getattr(obj, name)[int(idx.rstrip("]"))] = MARK
    else:
        setattr(obj, name, MARK)
    return m


@pytest.mark.parametrize(("model", "path", "where"), [
    (relu_model, "graph.name", "main graph: its name"),
    (relu_model, "graph.node[0].name", "node #0 in the main graph: its name"),
    (relu_model, "graph.node[0].input[0]", "node #0 in the main graph: its input[0]"),
    (relu_model, "graph.input[0].name", "main graph: its input[0].name"),
    (relu_model, "doc_string", "the model: its doc_string"),
    (relu_model, "graph.input[0].type.tensor_type.shape.dim[0].dim_param",
     "main graph: its input[0].type.tensor_type.shape.dim[0].dim_param"),
    (lambda: initializer_model(h.make_tensor("w", T.FLOAT, [2], [1.0, 2.0])), "graph.initializer[0].name",
     "main graph: its initializer[0].name"),
    (_if_model, "graph.node[0].attribute[0].g.node[0].input[0]",
     "node #0 in the subgraph attribute[0].g of node #0 in the main graph: its input[0]"),
    (_if_model, "graph.node[0].attribute[1].name", "node #0 in the main graph: its attribute[1].name"),
    (_function_model, "functions[0].name", "local function #0: its name"),
    (_function_model, "functions[0].input[0]", "local function #0: its input[0]"),
    (_function_model, "functions[0].node[0].output[0]", "node #0 in the local function #0: its output[0]"),
])
def test_every_string_field_must_be_utf8(model: object, path: str, where: str) -> None:
    # One check walks every string field (validation.check_text): the fuzzer found a graph name
    # (bytes in Model.name, a bare TypeError in the IR writer) and a local function's output
    # (str + bytes in expand_function) after op types had been fixed one field at a time.
    m = model()  # type: ignore[operator]
    convert_model(m.SerializeToString(), framework="onnx")  # the model itself reads
    raw = _set(m, path).SerializeToString()
    assert raw.count(MARK.encode()) == 1
    bad = raw.replace(MARK.encode(), b"Z\xff9xW")
    with pytest.raises(ModelFormatError, match=re.escape(f"<model bytes>: {where} is not valid UTF-8 text "
                                                         "(b'Z\\xff9xW')")):
        convert_model(bad, framework="onnx")


def test_graph_input_dimensions_are_bounded() -> None:
    big = h.make_tensor_value_info("x", T.FLOAT, [10**12])
    m = make_model([h.make_node("Relu", ["x"], ["y"], name="r")], [big], [h.make_tensor_value_info("y", T.FLOAT, None)],
                   opset=17)
    with pytest.raises(ResourceLimitError, match=r"input 'x': dimension 1000000000000 exceeds the limit MAX_DIMENSION"):
        convert_model(m.SerializeToString(), framework="onnx")
    dyn = make_model([h.make_node("Relu", ["x"], ["y"], name="r")], [h.make_tensor_value_info("x", T.FLOAT, ["n", 3])],
                     [h.make_tensor_value_info("y", T.FLOAT, None)], opset=17)
    assert convert_model(dyn.SerializeToString(), framework="onnx").input(0).partial_shape.rank == 2
