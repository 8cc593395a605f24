"""Every finding of the fuzz targets, as a minimal reproducer (README.md: "every crash found
becomes a test"). Each runs the target's ``fuzz_one`` on the input and requires an acceptable
outcome (returns, or an opforge error with a message), and where the fix is known, the exact
error. Findings not fixed yet are ``xfail(strict=True)``: the test starts failing (XPASS) the day
the fix lands, and then the mark and the KNOWN entry in test_fuzz_smoke.py go."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from onnx import TensorProto, helper
from opforge.errors import ModelFormatError, OpforgeError
from opforge_fuzz.harness import join_parts, run_one, split_parts
from opforge_fuzz.targets import (
    gpu_kernel_config,
    infer_inputs,
    ir_reader,
    onnx_reader,
    paddle_legacy,
    paddle_pir,
    vpu_kernel_config,
)
from opforge_fuzz.targets._common import CORPUS as CORPUS_DIR


def _clean(fuzz_one: Any, data: bytes) -> None:
    finding = run_one(fuzz_one, data, timeout_s=0)  # no watchdog inside pytest (pytest-timeout)
    assert finding is None, f"{finding.key}: {finding.message}\n{finding.trace}"


def _raises(fuzz_one: Any, data: bytes, cls: type[OpforgeError], *fragments: str) -> None:
    _clean(fuzz_one, data)
    with pytest.raises(cls) as info:
        fuzz_one(data)
    for frag in fragments:
        assert frag in str(info.value), f"{frag!r} not in: {info.value}"


# --- Paddle PIR: untyped JSON fields of the wrong kind (fixed in pir.py: _PirReader._malformed) -
def _pir_seed() -> tuple[dict[str, Any], bytes]:
    program, params = split_parts((CORPUS_DIR / "paddle_pir" / "conv.seed").read_bytes())
    return json.loads(program), params


def _pir_ops(doc: dict[str, Any]) -> list[Any]:
    return doc["program"]["regions"][0]["blocks"][0]["ops"]


def _pir(doc: dict[str, Any], params: bytes) -> bytes:
    return join_parts(json.dumps(doc).encode(), params)


def test_pir_results_not_a_list() -> None:
    """'O' an integer: was TypeError "'int' object is not iterable" in pir.py _read_op."""
    doc, params = _pir_seed()
    _pir_ops(doc)[9]["O"] = 5
    _raises(paddle_pir.fuzz_one, _pir(doc, params), ModelFormatError, "op 9 (1.conv2d)", "malformed op")


def test_pir_int_attribute_holds_a_list() -> None:
    """An a_i32 attribute whose data is a list: was TypeError from int() in _decode_attr."""
    doc, params = _pir_seed()
    conv = _pir_ops(doc)[9]
    conv["A"][0]["AT"]["D"][0]["D"] = [1, 2]
    _raises(paddle_pir.fuzz_one, _pir(doc, params), ModelFormatError, "op 9", "TypeError")


def test_pir_dims_with_null() -> None:
    """A tensor type whose dims hold null: was TypeError from int(None) in _decode_type."""
    doc, params = _pir_seed()
    _pir_ops(doc)[7]["O"]["TT"]["D"][1] = [3, None, 3, 3]
    _raises(paddle_pir.fuzz_one, _pir(doc, params), ModelFormatError, "op 7")


def test_pir_dtype_attribute_where_an_int_belongs() -> None:
    """An a_i64 attribute holding 'float32': was ValueError from int() in _decode_attr."""
    doc, params = _pir_seed()
    _pir_ops(doc)[10]["A"][0]["AT"]["D"][0]["D"] = "float32"
    _raises(paddle_pir.fuzz_one, _pir(doc, params), ModelFormatError, "op 10 (1.full_int_array)")


def test_pir_deeply_nested_json() -> None:
    """JSON nested past the recursion limit: json.loads' RecursionError is a format error."""
    body = b'{"base_code": {"magic": "pir"}, "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    _raises(paddle_pir.fuzz_one, join_parts(body, b""), ModelFormatError, "not a valid Paddle PIR program")


def test_pir_full_of_two_billion_elements() -> None:
    """A ``full`` op whose shape asks for 8 GB: was a bare MemoryError from np.full in pir.py
    _const_of (or gigabytes allocated); now checked against MAX_TENSOR_BYTES first."""
    from opforge.errors import ResourceLimitError

    program, params = split_parts((CORPUS_DIR / "paddle_pir" / "mix.seed").read_bytes())
    doc = json.loads(program)
    full = _pir_ops(doc)[11]
    assert full["#"] == "1.full" and full["A"][0]["N"] == "shape"
    full["A"][0]["AT"]["D"] = [2_000_000_000]  # 8 GB of int32: over the default 4 GiB
    _raises(paddle_pir.fuzz_one, _pir(doc, params), ResourceLimitError, "op 11 (pd_op.full)", "MAX_TENSOR_BYTES")


# --- Paddle legacy: an attribute of the wrong type (fixed in legacy.py: _col) -------------------
def test_legacy_feed_col_is_a_list() -> None:
    """A feed op whose 'col' attribute is an INTS list: was TypeError from int(list)."""
    from opforge_paddle.protoschema import schema

    program, params = split_parts((CORPUS_DIR / "paddle_legacy" / "conv.seed").read_bytes())
    prog = schema().ProgramDesc()
    prog.ParseFromString(program)
    feed = next(op for op in prog.blocks[0].ops if op.type == "feed")
    col = next(a for a in feed.attrs if a.name == "col")
    col.type = 3  # INTS
    col.ClearField("i")
    col.ints.extend([0, 1])
    data = join_parts(prog.SerializeToString(), params)
    _raises(paddle_legacy.fuzz_one, data, ModelFormatError, "feed op", "'col' must be an integer")


def test_legacy_variable_name_not_utf8() -> None:
    """A variable name that is not UTF-8 (protobuf hands it over as bytes): was TypeError from
    sorting bytes with str names in legacy.py parse_program."""
    program, params = split_parts((CORPUS_DIR / "paddle_legacy" / "conv.seed").read_bytes())
    assert b"batch_norm2d_0.w_2" in program
    bad = program.replace(b"batch_norm2d_0.w_2", b"\x9e\x9dtch_norm2d_0.w_2")
    _raises(paddle_legacy.fuzz_one, join_parts(bad, params), ModelFormatError, "is not valid UTF-8 text")


# --- GPU custom-kernel configuration (fixed in config.py: load_config) -------------------------
def test_gpu_config_not_utf8() -> None:
    """A configuration file that is not UTF-8: was a bare UnicodeDecodeError from read_text."""
    from opforge_gpu.custom.config import KernelConfigError

    _raises(gpu_kernel_config.fuzz_one, b"\xff\xfe<CustomLayer/>", KernelConfigError, "cannot read it")


# --- fixed by the readers / runtime engineers (issue 11) -----------------------------------
def _onnx_with_op_type(op_type: bytes) -> bytes:
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    data = m.SerializeToString()
    assert data.count(b"Relu") == 1
    return data.replace(b"Relu", op_type)  # same length: the protobuf stays well-formed


def test_onnx_op_type_not_utf8() -> None:
    """A string field that is not UTF-8 (protobuf hands it over as bytes): was TypeError from
    onnx.defs.get_schema in converter.py _schema; fixed by the ONNX reader's validation."""
    _clean(onnx_reader.fuzz_one, _onnx_with_op_type(b"R\xfflu"))
    with pytest.raises(ModelFormatError):
        onnx_reader.fuzz_one(_onnx_with_op_type(b"R\xfflu"))


def test_infer_with_none_inputs() -> None:
    """``evaluate_model(model, None)`` (the target's reference ``compiled(None)``): was a bare
    TypeError from list(None) in runtime/inputs.py bind_inputs. (A device's ``compiled(None)`` means
    "the inputs set with set_tensor", so there it is a missing-input error.)"""
    from opforge.errors import InferenceInputError, InputTypeError

    infer_inputs.setup()
    for device, compiled in infer_inputs._compiled():
        names = [p.any_name for p in compiled.inputs]
        for bad in (None, 3, "x"):
            _clean(lambda _data, c=compiled, bad=bad: c(bad), b"")
            if bad is None and device != "REFERENCE":
                with pytest.raises(InferenceInputError, match="missing input"):
                    compiled(bad)
                continue
            with pytest.raises(InputTypeError) as info:
                compiled(bad)
            msg = str(info.value)
            assert type(bad).__name__ in msg and "NumPy array" in msg and "dict" in msg, msg
            assert all(repr(n) in msg for n in names), msg


def test_onnx_input_dim_beyond_ir_limits() -> None:
    """A static input dim of 2**32-1: the ONNX frontend accepted it while the IR reader refuses it
    (MAX_TENSOR_BYTES), so the IR opforge wrote did not read back (oracle finding)."""
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 2**32 - 1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 2**32 - 1])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    _clean(onnx_reader.fuzz_one, m.SerializeToString())


def _tile_model() -> bytes:
    g = helper.make_graph([helper.make_node("Tile", ["x", "reps"], ["y"], name="tile")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [helper.make_tensor("reps", TensorProto.INT64, [1], [2**45])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


def test_inferred_dim_beyond_limits_round_trip() -> None:
    """Tile(reps=[2**45]) reads (the file declares nothing beyond the limits) and its output dim
    2**46 is derived; the IR opforge writes declares that dim on the Tile's port, which the IR
    reader refused against MAX_DIMENSION (oracle finding). The rule now, in both readers: limits
    bound what a file provides (inputs/Parameters, initializers/Consts); derived port dims are
    checked for form only (docs/security.md)."""
    _clean(onnx_reader.fuzz_one, _tile_model())


def test_inferred_huge_tensor_is_refused_by_the_device_not_allocated() -> None:
    """The other half of that rule: the 2**46-float output (256 TiB) is refused by the device
    before it allocates (runtime/allocation.py), after an IR round trip as before it. The CPU
    device sizes a static shape when it plans memory in compile_model; a shape known only at run
    time (reps as an input) is sized when the request runs."""
    from opforge import Core
    from opforge.errors import ResourceLimitError
    from opforge.ir.reader import read_ir
    from opforge.ir.writer import serialize

    core = Core()
    if "CPU" not in core.available_devices:
        pytest.skip("the CPU device plugin is not installed")
    model = core.read_model(_tile_model())
    assert model.output(0).partial_shape.to_tuple() == (2**46,)
    xml, weights = serialize(model)
    again = read_ir(xml, weights, plugins=core.plugins)
    assert again.output(0).partial_shape.to_tuple() == (2**46,)
    x = np.ones(2, np.float32)
    refused = r"\(Tile\): output 0 on CPU: shape \(70368744177664,\) needs 281474976710656 bytes \(256\.0 TiB\)"
    for m in (model, again):
        with pytest.raises(ResourceLimitError, match=refused):
            core.compile_model(m, "CPU")([x])
    g = helper.make_graph([helper.make_node("Tile", ["x", "reps"], ["y"], name="tile")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
                           helper.make_tensor_value_info("reps", TensorProto.INT64, [1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    dynamic = core.read_model(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    compiled = core.compile_model(dynamic, "CPU")
    np.testing.assert_array_equal(compiled([x, np.array([3])])[0], np.ones(6, np.float32))
    with pytest.raises(ResourceLimitError, match=refused):
        compiled([x, np.array([2**45])])


def test_onnx_graph_name_not_utf8() -> None:
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r")], "gname",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    data = m.SerializeToString()
    assert data.count(b"gname") == 1
    _raises(onnx_reader.fuzz_one, data.replace(b"gname", b"g\x9bame"), ModelFormatError,
            "main graph: its name is not valid UTF-8 text (b'g\\x9bame')")


def test_onnx_opset_version_beyond_int32() -> None:
    """opset_import {domain ' ', version 2**32}: was a bare TypeError from onnx.defs.get_schema
    (a C int) in converter.py _schema; now refused by validation.py's opset check."""
    _raises(onnx_reader.fuzz_one, (CORPUS_DIR / "regressions" / "onnx_opset_version_2pow32.onnx").read_bytes(),
            ModelFormatError, "imports domain ' ' at opset version 4294967296", "1..2147483647")


def test_onnx_local_function_tensor_name_not_utf8() -> None:
    """A local function output that is not UTF-8: was a bare TypeError (str + bytes) in
    converter.py expand_function; now refused by validation.py's single text check."""
    _raises(onnx_reader.fuzz_one, (CORPUS_DIR / "regressions" / "onnx_function_name_bytes.onnx").read_bytes(),
            ModelFormatError, "local function #0: its output[0] is not valid UTF-8 text")


def test_seeds_are_clean() -> None:
    """Every committed and generated seed reads (a seed that fails hides the code behind it)."""
    for target in (onnx_reader, ir_reader, paddle_pir, paddle_legacy, gpu_kernel_config, vpu_kernel_config):
        for i, s in enumerate(target.seeds()):
            try:
                target.fuzz_one(s)
            except Exception as err:  # noqa: BLE001 - any failure of a seed is reported the same way
                pytest.fail(f"{target.NAME} seed {i} does not read: {type(err).__name__}: {err}")
