"""Malformed and hostile IR files: each gets its own error naming the file, layer and numbers."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from opforge.errors import (
    AttributeValidationError,
    ModelFormatError,
    ResourceLimitError,
    ShapeInferenceError,
    UnsupportedOpError,
)
from opforge.ir import read_ir
from opforge.plugins import PluginSystem

W = np.arange(4, dtype=np.float32)

# x(0) -> add(2) <- w(1);  add -> relu(3) -> out(4)
BASE = """<?xml version="1.0"?>
<net name="bad" version="11">
\t<layers>
\t\t<layer id="0" name="x" type="Parameter" version="opset1">
\t\t\t<data shape="4" element_type="f32" />
\t\t\t<output><port id="0" precision="FP32" names="x"><dim>4</dim></port></output>
\t\t</layer>
\t\t<layer id="1" name="w" type="Const" version="opset1">
\t\t\t<data element_type="f32" shape="4" offset="0" size="16" />
\t\t\t<output><port id="0" precision="FP32"><dim>4</dim></port></output>
\t\t</layer>
\t\t<layer id="2" name="add" type="Add" version="opset1">
\t\t\t<data auto_broadcast="numpy" />
\t\t\t<input><port id="0" precision="FP32"><dim>4</dim></port><port id="1" precision="FP32"><dim>4</dim></port></input>
\t\t\t<output><port id="2" precision="FP32"><dim>4</dim></port></output>
\t\t</layer>
\t\t<layer id="3" name="relu" type="ReLU" version="opset1">
\t\t\t<input><port id="0" precision="FP32"><dim>4</dim></port></input>
\t\t\t<output><port id="1" precision="FP32" names="y"><dim>4</dim></port></output>
\t\t</layer>
\t\t<layer id="4" name="out" type="Result" version="opset1">
\t\t\t<input><port id="0" precision="FP32"><dim>4</dim></port></input>
\t\t</layer>
\t</layers>
\t<edges>
\t\t<edge from-layer="0" from-port="0" to-layer="2" to-port="0" />
\t\t<edge from-layer="1" from-port="0" to-layer="2" to-port="1" />
\t\t<edge from-layer="2" from-port="2" to-layer="3" to-port="0" />
\t\t<edge from-layer="3" from-port="1" to-layer="4" to-port="0" />
\t</edges>
</net>
"""


def write(tmp_path: Path, xml: str, weights: bytes | None = W.tobytes()) -> Path:
    p = tmp_path / "m.xml"
    p.write_text(xml)
    if weights is not None:
        (tmp_path / "m.bin").write_bytes(weights)
    return p


def sub(old: str, new: str, text: str = BASE) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def test_the_base_file_is_valid(plugins: PluginSystem, tmp_path: Path) -> None:
    model = read_ir(write(tmp_path, BASE), None, plugins)
    assert [n.name for n in model.get_ordered_ops()] == ["x", "w", "add", "relu", "out"]


# --- weights --------------------------------------------------------------------------------
@pytest.mark.parametrize(("offset", "size"), [(1000, 16), (8, 16), (2**64 - 8, 16), (2**63, 16)])
def test_offset_past_the_end_of_the_weights(plugins: PluginSystem, tmp_path: Path, offset: int, size: int) -> None:
    p = write(tmp_path, sub('offset="0" size="16"', f'offset="{offset}" size="{size}"'))
    with pytest.raises(ModelFormatError,
                       match=rf"m\.xml: layer 'w' \(id 1, Const\): weights offset={offset}, size={size} "
                             rf"exceed weights file '.*m\.bin' \(16 bytes\)"):
        read_ir(p, None, plugins)


def test_size_does_not_match_the_shape(plugins: PluginSystem, tmp_path: Path) -> None:
    p = write(tmp_path, sub('size="16"', 'size="12"'))
    with pytest.raises(ModelFormatError,
                       match=r"layer 'w' \(id 1, Const\): size=12 bytes does not match shape \[4\] of f32 "
                             r"\(4 elements x 4 bytes = 16 bytes\)"):
        read_ir(p, None, plugins)


def test_huge_constant_shape_is_rejected_before_allocation(plugins: PluginSystem, tmp_path: Path) -> None:
    # 10^12 x 10^12 elements with a 16-byte size: caught by arithmetic, nothing is allocated.
    p = write(tmp_path, sub('shape="4" offset', 'shape="1000000000,1000" offset'))
    with pytest.raises(ModelFormatError, match=r"size=16 bytes does not match shape \[1000000000, 1000\]"):
        read_ir(p, None, plugins)


@pytest.mark.parametrize("bad", ["-16", "abc", "1e3", ""])
def test_non_numeric_or_negative_offsets(plugins: PluginSystem, tmp_path: Path, bad: str) -> None:
    p = write(tmp_path, sub('offset="0"', f'offset="{bad}"'))
    with pytest.raises(ModelFormatError, match=r"layer 'w' \(id 1, Const\): <data> attribute offset="):
        read_ir(p, None, plugins)


def test_missing_bin_next_to_the_xml(plugins: PluginSystem, tmp_path: Path) -> None:
    p = write(tmp_path, BASE, weights=None)
    with pytest.raises(ModelFormatError,
                       match=r"layer 'w' \(id 1, Const\): needs 16 bytes of weights at offset 0, but there "
                             r"is no weights file for '.*m\.xml': expected '.*m\.bin' next to it"):
        read_ir(p, None, plugins)


def test_missing_explicit_weights_file(plugins: PluginSystem, tmp_path: Path) -> None:
    p = write(tmp_path, BASE)
    with pytest.raises(ModelFormatError, match=r"weights file '.*nope\.bin' \(given for '.*m\.xml'\) does not exist"):
        read_ir(p, tmp_path / "nope.bin", plugins)


def test_xml_bytes_without_weights(plugins: PluginSystem) -> None:
    with pytest.raises(ModelFormatError, match=r"<IR xml bytes>: layer 'w'.*given as bytes without weights="):
        read_ir(BASE.encode(), None, plugins)


def test_git_lfs_pointer_as_weights(plugins: PluginSystem, tmp_path: Path) -> None:
    lfs = b"version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 16\n"
    p = write(tmp_path, sub('offset="0"', 'offset="100"'), weights=lfs)
    with pytest.raises(ModelFormatError, match=r"exceed weights file .*Git LFS pointer.*git lfs pull"):
        read_ir(p, None, plugins)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_weights_that_are_not_a_regular_file(plugins: PluginSystem, tmp_path: Path) -> None:
    p = write(tmp_path, BASE, weights=None)
    os.mkfifo(tmp_path / "m.bin")
    with pytest.raises(ModelFormatError, match=r"weights file '.*m\.bin' is not a regular file"):
        read_ir(p, None, plugins)


# --- XML attacks ------------------------------------------------------------------------------
BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE net [
 <!ENTITY a "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa">
 <!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">
 <!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">
 <!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">
 <!ENTITY e "&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;">
 <!ENTITY f "&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;">
]>
<net name="&f;" version="11"><layers/></net>
"""

EXTERNAL_ENTITY = """<?xml version="1.0"?>
<!DOCTYPE net [<!ENTITY secret SYSTEM "file:///etc/passwd">]>
<net name="&secret;" version="11"><layers/></net>
"""

_opened: list[str] = []
_armed: list[bool] = []


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _armed and event == "open" and args and isinstance(args[0], (str, bytes, os.PathLike)):
        _opened.append(os.fsdecode(args[0]))


sys.addaudithook(_audit)


@pytest.mark.parametrize("xml", [BILLION_LAUGHS, EXTERNAL_ENTITY], ids=["billion-laughs", "external-entity"])
def test_dtds_and_entities_are_rejected_without_expansion(plugins: PluginSystem, tmp_path: Path, xml: str) -> None:
    p = write(tmp_path, xml)
    _opened.clear()
    _armed.append(True)
    try:
        with pytest.raises(ModelFormatError, match=r"m\.xml: the XML has a DOCTYPE/DTD, which IR files never have"):
            read_ir(p, None, plugins)
    finally:
        _armed.clear()
    assert not [f for f in _opened if "passwd" in f]


def test_not_xml_wrong_root_and_old_ir_versions(plugins: PluginSystem, tmp_path: Path) -> None:
    with pytest.raises(ModelFormatError, match="not well-formed XML"):
        read_ir(b"<net version='11'><layers>", None, plugins)
    with pytest.raises(ModelFormatError, match=r"the root element is <model>, expected <net>"):
        read_ir(b"<model/>", None, plugins)
    with pytest.raises(ModelFormatError, match=r"IR version '7' is not supported; opforge reads IR v10 and v11"):
        read_ir(BASE.replace('version="11"', 'version="7"').encode(), W.tobytes(), plugins)
    with pytest.raises(ModelFormatError, match="Git LFS pointer file, not the IR"):
        read_ir(b"version https://git-lfs.github.com/spec/v1\n", None, plugins)
    with pytest.raises(ModelFormatError, match=r"IR file '.*missing\.xml' does not exist"):
        read_ir(tmp_path / "missing.xml", None, plugins)


# --- graph structure --------------------------------------------------------------------------
def test_duplicate_layer_ids(plugins: PluginSystem, tmp_path: Path) -> None:
    p = write(tmp_path, sub('<layer id="3" name="relu"', '<layer id="1" name="relu"'))
    with pytest.raises(ModelFormatError,
                       match=r"two layers have id 1: 'w' \(Const\) and 'relu' \(ReLU\); layer ids must be unique"):
        read_ir(p, None, plugins)


def test_edge_to_a_missing_layer(plugins: PluginSystem, tmp_path: Path) -> None:
    p = write(tmp_path, sub('from-layer="3" from-port="1" to-layer="4"', 'from-layer="3" from-port="1" to-layer="42"'))
    with pytest.raises(ModelFormatError, match=r"edge #3 \(3:1 -> 42:0\): to-layer 42 is not a layer id in this file"):
        read_ir(p, None, plugins)


def test_edge_to_a_missing_port(plugins: PluginSystem, tmp_path: Path) -> None:
    p = write(tmp_path, sub('to-layer="2" to-port="1"', 'to-layer="2" to-port="7"'))
    with pytest.raises(ModelFormatError,
                       match=r"edge #1 \(1:0 -> 2:7\): layer 'add' \(id 2, Add\) has no input port 7 "
                             r"\(input ports: 0, 1\)"):
        read_ir(p, None, plugins)
    p = write(tmp_path, sub('from-layer="2" from-port="2"', 'from-layer="2" from-port="5"'))
    with pytest.raises(ModelFormatError, match=r"layer 'add' \(id 2, Add\) has no output port 5 \(output ports: 2\)"):
        read_ir(p, None, plugins)


def test_two_edges_into_one_input(plugins: PluginSystem, tmp_path: Path) -> None:
    p = write(tmp_path, sub('to-layer="2" to-port="1"', 'to-layer="2" to-port="0"'))
    with pytest.raises(ModelFormatError,
                       match=r"input port 0 of layer 'add' \(id 2, Add\) already has an edge from layer 'x' "
                             r"\(id 0\) port 0"):
        read_ir(p, None, plugins)


def test_input_without_an_edge(plugins: PluginSystem, tmp_path: Path) -> None:
    p = write(tmp_path, sub('\t\t<edge from-layer="1" from-port="0" to-layer="2" to-port="1" />\n', ""))
    with pytest.raises(ModelFormatError, match=r"layer 'add' \(id 2, Add\): input port 1 has no incoming edge"):
        read_ir(p, None, plugins)


def test_cycle(plugins: PluginSystem, tmp_path: Path) -> None:
    # add takes relu's output instead of x: add -> relu -> add.
    xml = sub('from-layer="0" from-port="0" to-layer="2" to-port="0"',
              'from-layer="3" from-port="1" to-layer="2" to-port="0"')
    p = write(tmp_path, xml)
    with pytest.raises(ModelFormatError,
                       match=r"the layers form a cycle: 'add' \(id 2\) -> 'relu' \(id 3\) -> 'add' \(id 2\)"):
        read_ir(p, None, plugins)


def test_no_result(plugins: PluginSystem, tmp_path: Path) -> None:
    xml = re.sub(r'\t\t<layer id="4".*?</layer>\n', "", BASE, flags=re.S)
    xml = sub('\t\t<edge from-layer="3" from-port="1" to-layer="4" to-port="0" />\n', "", xml)
    with pytest.raises(ModelFormatError, match="has no Result layer"):
        read_ir(write(tmp_path, xml), None, plugins)


def test_declared_outputs_do_not_match_the_op(plugins: PluginSystem, tmp_path: Path) -> None:
    xml = sub('<output><port id="1" precision="FP32" names="y"><dim>4</dim></port></output>',
              '<output><port id="1" precision="FP32" names="y"><dim>4</dim></port>'
              '<port id="2" precision="FP32"><dim>4</dim></port></output>')
    with pytest.raises(ModelFormatError,
                       match=r"layer 'relu' \(id 3, ReLU\): the file declares 2 output ports, but Relu-opset1 has 1"):
        read_ir(write(tmp_path, xml), None, plugins)


# --- ops, types, attributes, dims --------------------------------------------------------------
def test_unknown_standard_opset_version(plugins: PluginSystem, tmp_path: Path) -> None:
    p = write(tmp_path, sub('type="ReLU" version="opset1"', 'type="ReLU" version="opset99"'))
    with pytest.raises(UnsupportedOpError,
                       match=r"layer 'relu' \(id 3, ReLU\): version 'opset99' is newer than any opset opforge knows"):
        read_ir(p, None, plugins)


def test_unknown_op_type(plugins: PluginSystem, tmp_path: Path) -> None:
    p = write(tmp_path, sub('type="ReLU" version="opset1"', 'type="Frobnicate" version="opset1"'))
    with pytest.raises(UnsupportedOpError,
                       match=r"layer 'relu' \(id 3, Frobnicate\): operation 'Frobnicate' of opset 'opset1' is "
                             r"not provided by opforge or any installed plugin"):
        read_ir(p, None, plugins)


def test_unknown_custom_opset(plugins: PluginSystem, tmp_path: Path) -> None:
    p = write(tmp_path, sub('type="ReLU" version="opset1"', 'type="ReLU" version="acme_ops"'))
    with pytest.raises(UnsupportedOpError,
                       match=r"operation 'Relu' of opset 'acme_ops': no installed plugin provides opset 'acme_ops'"):
        read_ir(p, None, plugins)


@pytest.mark.parametrize(("layer", "old"), [("x", 'shape="4" element_type="f32"'),
                                             ("w", 'element_type="f32" shape="4" offset')])
@pytest.mark.parametrize("bad", ["q7", "u4", "string"])
def test_unknown_element_type(plugins: PluginSystem, tmp_path: Path, layer: str, old: str, bad: str) -> None:
    p = write(tmp_path, sub(old, old.replace('element_type="f32"', f'element_type="{bad}"')))
    with pytest.raises(ModelFormatError, match=rf"layer '{layer}' \(id \d, \w+\): unknown element_type '{bad}'; "
                                               r"opforge reads: boolean, f16"):
        read_ir(p, None, plugins)


def test_huge_and_negative_dims(plugins: PluginSystem, tmp_path: Path) -> None:
    p = write(tmp_path, sub('<data shape="4" element_type', '<data shape="1000000000000" element_type'))
    with pytest.raises(ResourceLimitError, match=r"layer 'x' \(id 0, Parameter\): dimension 1000000000000 exceeds"):
        read_ir(p, None, plugins)
    p = write(tmp_path, sub('<data shape="4" element_type', '<data shape="100000,100000,1000" element_type'))
    with pytest.raises(ResourceLimitError, match=r"layer 'x' \(id 0, Parameter\): input shape .* needs 40000000000000 "
                                                 r"bytes, over the limit MAX_TENSOR_BYTES="):
        read_ir(p, None, plugins)
    p = write(tmp_path, sub('<data shape="4" element_type', '<data shape="-5" element_type'))
    with pytest.raises(ModelFormatError, match=r"layer 'x' \(id 0, Parameter\): dimension -5 is negative"):
        read_ir(p, None, plugins)
    # Port dims of other layers are re-derived by shape inference, so the limits do not apply to
    # them (a derived dim may exceed MAX_DIMENSION: Tile); they must still be dimensions.
    for huge in ("1000000000000", "9" * 5000):
        p = write(tmp_path, sub('names="y"><dim>4</dim>', f'names="y"><dim>{huge}</dim>'))
        assert read_ir(p, None, plugins).output(0).partial_shape.to_tuple() == (4,)
    p = write(tmp_path, sub('names="y"><dim>4</dim>', 'names="y"><dim>-7</dim>'))
    with pytest.raises(ModelFormatError, match=r"layer 'relu' \(id 3\) port 1: dimension -7 is negative"):
        read_ir(p, None, plugins)
    p = write(tmp_path, sub('names="y"><dim>4</dim>', 'names="y"><dim>-' + "9" * 5000 + '</dim>'))
    with pytest.raises(ModelFormatError, match=r"layer 'relu' \(id 3\) port 1: dimension -9{19}\.\.\. "
                                               r"\(5000 digits\) is negative"):
        read_ir(p, None, plugins)
    p = write(tmp_path, sub('<data shape="4" element_type', '<data shape="' + ",".join(["1"] * 40) + '" element_type'))
    with pytest.raises(ResourceLimitError, match=r"shape rank 40 exceeds the limit MAX_TENSOR_RANK=32"):
        read_ir(p, None, plugins)


def test_interval_dims_read_as_dynamic(plugins: PluginSystem, tmp_path: Path) -> None:
    xml = sub('<data shape="4" element_type', '<data shape="1..4" element_type')
    model = read_ir(write(tmp_path, xml), None, plugins)
    assert model.input(0).partial_shape.rank == 1 and not model.input(0).partial_shape.is_static


def test_unknown_attribute(plugins: PluginSystem, tmp_path: Path) -> None:
    p = write(tmp_path, sub('<data auto_broadcast="numpy" />', '<data auto_broadcast="numpy" alpha="2" />'))
    with pytest.raises(AttributeValidationError,
                       match=r"m\.xml: layer id 2: node 'add' \(Add-opset1\): unknown attribute 'alpha'"):
        read_ir(p, None, plugins)
    p = write(tmp_path, sub('offset="0" size="16"', 'offset="0" size="16" compressed="yes"'))
    with pytest.raises(AttributeValidationError, match=r"layer 'w' \(id 1, Const\): unknown Const attribute\(s\) compressed"):
        read_ir(p, None, plugins)


def test_bad_attribute_value_and_bad_shapes(plugins: PluginSystem, tmp_path: Path) -> None:
    p = write(tmp_path, sub('auto_broadcast="numpy"', 'auto_broadcast="sideways"'))
    with pytest.raises(AttributeValidationError, match=r"m\.xml: layer id 2: node 'add'.*auto_broadcast"):
        read_ir(p, None, plugins)
    # A constant of shape [3] cannot be added to x of shape [4].
    p = write(tmp_path, sub('shape="4" offset="0" size="16"', 'shape="3" offset="0" size="12"'))
    with pytest.raises(ShapeInferenceError, match=r"m\.xml: layer id 2: node 'add' \(Add\).*cannot be broadcast"):
        read_ir(p, None, plugins)
