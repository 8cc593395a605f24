"""The MVCL format: what the parser reads, and clear errors naming the file and line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import opforge
import pytest
from myriad_ops import ALL, VpuBox, VpuGrn, VpuMvn
from opforge.cli import main as cli_main
from opforge.errors import KernelError, UnsupportedOpError
from opforge.graph import Model, Node
from opforge_gpu.runtime import KernelConfigError
from opforge_vpu.binary import MAGIC, compile_file
from opforge_vpu.mvcl.config import load_config
from opforge_vpu.mvcl.formula import Formula
from vpu_util import param, rand

DATA = Path(__file__).parent / "data" / "myriad"

HEAD = '<CustomLayer name="VpuGrn" type="MVCL" version="1">\n<Kernel entry="grn_NCHW"><Source filename="grn.cl"/></Kernel>\n'
GRN_PARAMS = """<Parameters>
<Tensor arg-name="src" type="input" port-index="0"/>
<Tensor arg-name="dst" type="output" port-index="0"/>
<Data arg-name="local_src" type="local_data" dim="input,0" size="X*F*2"/>
<Data arg-name="local_dst" type="local_data" dim="input,0" size="X*F*2"/>
<Scalar arg-name="C" type="int" source="I.F"/>
<Scalar arg-name="H" type="int" source="I.Y"/>
<Scalar arg-name="bias" type="float" source="bias"/>
</Parameters>
"""


@pytest.fixture
def vpu(core: opforge.Core) -> opforge.Core:
    for op in ALL:
        core.add_extension(op)
    return core


def grn_model(shape: tuple[int, ...] = (1, 5, 4, 16)) -> Model:
    x = param(list(shape))
    n = Node.create(VpuGrn, [x.output(0)], {"bias": 0.5})
    return Model([n.output(0)], [x])


def write(tmp_path: Path, xml: str) -> Path:
    shutil.copy(DATA / "grn.cl", tmp_path / "grn.cl")
    p = tmp_path / "layers.xml"
    p.write_text(xml)
    return p


def compile_with(core: opforge.Core, model: Model, xml: Path) -> opforge.CompiledModel:
    core.set_property("VPU", {"CONFIG_FILE": str(xml)})
    return core.compile_model(model, "VPU")


def test_parser_reads_every_element(tmp_path: Path) -> None:
    for f in ("mvn.cl", "mvn.xml", "box.cl", "box.xml"):
        shutil.copy(DATA / f, tmp_path / f)
    for f in ("mvn", "box"):
        compile_file(tmp_path / f"{f}.cl", tmp_path / f"{f}.bin")
    (s0, s1) = load_config(tmp_path / "mvn.xml")
    assert (s0.name, s0.stage, s0.max_shaves, s0.entry, s0.line) == ("VpuMvn", 0, 4, "mvn_sums", 2)
    assert s1.stage == 1 and s1.sources[0].is_binary and s1.dim == ("output", 0)
    kinds = {p.arg_name: (p.kind, p.port, p.source) for p in s1.params}
    assert kinds["sums"] == ("input_buffer", 0, None) and kinds["gamma"] == ("data", None, "gamma")
    assert kinds["W"] == ("scalar", 0, "I.X")
    buf = next(p for p in s0.params if p.kind == "output_buffer")
    assert buf.dim == ("input", 0) and buf.size is not None and buf.size({"B": 1, "F": 3, "Y": 1, "X": 1}) == 24
    box = load_config(tmp_path / "box.xml")
    assert [b.where for b in box] == [{"kernel": "3,3"}, {"kernel": "1,1"}]


def test_formulas_are_c_integer_arithmetic_without_eval() -> None:
    dims = {"B": 2, "F": 3, "Y": 5, "X": 7}
    assert Formula("(X + 7) / 8 * 8", "f:1")(dims) == 8
    assert Formula("B*F*Y*X % 11 - -1", "f:1")(dims) == 210 % 11 + 1
    assert Formula("-7 / 2", "f:1")(dims) == -3 and Formula("-7 % 2", "f:1")(dims) == -1
    for bad in ("X**2", "__import__('os')", "X +", "(X", "Z*2", "X; 1"):
        with pytest.raises(KernelConfigError, match="f:3"):
            Formula(bad, "f:3")
    with pytest.raises(KernelConfigError, match="divides by zero"):
        Formula("X / (Y - 5)", "f:1")(dims)


@pytest.mark.parametrize(("xml", "message"), [
    (HEAD + "<Parameters>\n<Tensor arg-name='src' type='input' port-index='0'>\n</CustomLayer>", r"layers.xml:5: malformed XML"),
    ('<!DOCTYPE x [<!ENTITY a "b">]>\n' + HEAD + "</CustomLayer>", r"layers.xml:\d+: DOCTYPE/entity"),
    (HEAD.replace('"MVCL"', '"SimpleGPU"') + "</CustomLayer>", r"layers.xml:1: .*needs type=\"MVCL\""),
    (HEAD + "<Parameters>\n<Tensor arg-name='a' type='input' port-index='0' format='NCHW'/></Parameters></CustomLayer>",
     r"layers.xml:4: format=\"NCHW\""),
    (HEAD + "<Parameters>\n<Scalar arg-name='a' type='double' source='1'/></Parameters></CustomLayer>",
     r"layers.xml:4: <Scalar type=\"double\">"),
    (HEAD + "<Parameters>\n<Tensor arg-name='a' type='input' port-index='0'/>\n<Scalar arg-name='a' type='int' source='1'/>"
     "</Parameters></CustomLayer>", r"layers.xml:5: arg-name \"a\" is already bound at line 4"),
    (HEAD + "\n\n<WorkSizes global='X*import' local='1'/></CustomLayer>", r"layers.xml:5: formula 'X\*import'"),
    (HEAD + "<CompilerOptions options='-O2'/></CustomLayer>", r"layers.xml:3: <CompilerOptions> is a GPU"),
    (HEAD.replace("grn.cl", "missing.bin") + "</CustomLayer>", r"layers.xml:2: <Source filename=\"missing.bin\">"),
])
def test_malformed_configurations_name_file_and_line(tmp_path: Path, xml: str, message: str) -> None:
    with pytest.raises(KernelConfigError, match=message):
        load_config(write(tmp_path, xml))


def test_cl_sources_are_accepted_and_compiled_at_load(vpu: opforge.Core, tmp_path: Path) -> None:
    xml = write(tmp_path, HEAD + GRN_PARAMS + '<WorkSizes dim="input,0" global="X,Y,1" local="X,1,1"/></CustomLayer>')
    x = rand([1, 5, 4, 16], seed=1)
    got = compile_with(vpu, grn_model(), xml)([x])[0]
    want = x / np.sqrt(0.5 + (x.astype(np.float64) ** 2).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-3)


def test_an_argument_without_binding(vpu: opforge.Core, tmp_path: Path) -> None:
    params = GRN_PARAMS.replace('<Scalar arg-name="bias" type="float" source="bias"/>\n', "")
    xml = write(tmp_path, HEAD + params + '<WorkSizes global="X,Y,1" local="X,1,1"/></CustomLayer>')
    with pytest.raises(KernelConfigError, match=r"layers.xml:1: argument 'bias' of kernel 'grn_NCHW' .* no binding"):
        compile_with(vpu, grn_model(), xml)


def test_a_binding_naming_no_argument(vpu: opforge.Core, tmp_path: Path) -> None:
    params = GRN_PARAMS.replace("</Parameters>", '<Scalar arg-name="gain" type="float" source="2.0"/>\n</Parameters>')
    xml = write(tmp_path, HEAD + params + '<WorkSizes global="X,Y,1" local="X,1,1"/></CustomLayer>')
    with pytest.raises(KernelConfigError, match=r"layers.xml:11: arg-name \"gain\" names no argument"):
        compile_with(vpu, grn_model(), xml)


def test_work_sizes_that_do_not_divide(vpu: opforge.Core, tmp_path: Path) -> None:
    xml = write(tmp_path, HEAD + GRN_PARAMS + '<WorkSizes global="X,Y,1" local="3,1,1"/></CustomLayer>')
    with pytest.raises(KernelConfigError, match=r"layers.xml:1: global work size \[16, 4, 1\] is not a multiple of "
                       r"local \[3, 1, 1\]"):
        compile_with(vpu, grn_model(), xml)


def test_local_memory_over_the_vpu_budget(vpu: opforge.Core, tmp_path: Path) -> None:
    params = GRN_PARAMS.replace('size="X*F*2"/>\n<Data arg-name="local_dst"', 'size="X*F*2000"/>\n<Data arg-name="local_dst"')
    xml = write(tmp_path, HEAD + params + '<WorkSizes global="X,Y,1" local="X,1,1"/></CustomLayer>')
    with pytest.raises(KernelConfigError, match=r"layers.xml:1: local_data .* needs 160160 bytes .* over the VPU's 102400"):
        compile_with(vpu, grn_model(), xml)


def test_a_where_matching_no_entry(vpu: opforge.Core, tmp_path: Path) -> None:
    for f in ("box.cl", "box.xml"):
        shutil.copy(DATA / f, tmp_path / f)
    compile_file(tmp_path / "box.cl", tmp_path / "box.bin")
    x = param([1, 3, 5, 8])
    n = Node.create(VpuBox, [x.output(0)], {"kernel": [5, 5]})
    vpu.set_property("VPU", {"CONFIG_FILE": str(tmp_path / "box.xml")})
    with pytest.raises(UnsupportedOpError, match=r"no MVCL CustomLayer 'VpuBox' matches .*box.xml:3 Where kernel='3,3'.*"
                       r"box.xml:15 Where kernel='1,1'.*kernel=\[5, 5\]"):
        vpu.compile_model(Model([n.output(0)], [x]), "VPU")


def test_a_binary_for_another_device_is_refused_with_recompile_advice(vpu: opforge.Core, tmp_path: Path) -> None:
    compile_file(DATA / "grn.cl", tmp_path / "grn.bin")
    data = (tmp_path / "grn.bin").read_bytes()
    end = data.index(b"\n", len(MAGIC))
    header = json.loads(data[len(MAGIC):end])
    header.update(device="Myriad X", driver="2022.1", identity="Intel|Myriad X|2022.1")
    (tmp_path / "grn.bin").write_bytes(MAGIC + json.dumps(header).encode() + data[end:])
    xml = write(tmp_path, HEAD.replace("grn.cl", "grn.bin") + GRN_PARAMS
                + '<WorkSizes global="X,Y,1" local="X,1,1"/></CustomLayer>')
    with pytest.raises(KernelConfigError, match=r"layers.xml:2: .*grn.bin was compiled for 'Myriad X' .*driver 2022.1.*"
                       r"recompile it here with `opforge vpu compile grn.cl -o grn.bin`"):
        compile_with(vpu, grn_model(), xml)
    (tmp_path / "grn.bin").write_bytes(b"\x7fELF MYRIAD clc output")
    with pytest.raises(KernelConfigError, match=r"not an opforge VPU binary"):
        compile_with(vpu, grn_model(), xml)


def test_cli_compiles_offline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(DATA / "mvn.cl", tmp_path / "mvn.cl")
    assert cli_main(["vpu", "compile", str(tmp_path / "mvn.cl"), "-o", str(tmp_path / "out.bin")]) == 0
    out = capsys.readouterr().out
    assert "2 kernel(s) (mvn_apply, mvn_sums)" in out and (tmp_path / "out.bin").read_bytes().startswith(MAGIC)
    (tmp_path / "bad.cl").write_text("__kernel void k(__global half* x) { x[0] = undefined_thing; }\n")
    assert cli_main(["vpu", "compile", str(tmp_path / "bad.cl")]) == 1
    err = capsys.readouterr().err
    assert "bad.cl" in err and "undefined_thing" in err


def test_a_configured_kernel_takes_priority_over_the_built_in_one(vpu: opforge.Core, tmp_path: Path) -> None:
    # a Relu bound to a kernel that computes 2*x for x > 0: the result shows which one ran
    (tmp_path / "relu.cl").write_text("__kernel void relu2(__global const half* x, __global half* y) {\n"
                                      "  const int i = get_global_id(0); y[i] = x[i] > (half)0 ? x[i] * (half)2 : (half)0; }\n")
    (tmp_path / "relu.xml").write_text('<CustomLayer name="Relu" type="MVCL" version="1">\n<Kernel entry="relu2">'
                                       '<Source filename="relu.cl"/></Kernel>\n<Parameters><Tensor arg-name="x" '
                                       'type="input" port-index="0" format="ANY"/><Tensor arg-name="y" type="output" '
                                       'port-index="0" format="ANY"/></Parameters></CustomLayer>')
    x = param([2, 3])
    r = opforge.op("Relu", x.output(0))
    vpu.set_property("VPU", {"CONFIG_FILE": str(tmp_path / "relu.xml")})
    xin = rand([2, 3], seed=2)
    got = vpu.compile_model(Model([r.output(0)], [x]), "VPU")([xin])[0]
    np.testing.assert_allclose(got, np.maximum(xin, 0) * 2, rtol=1e-3, atol=1e-3)


def test_registered_plugin_kernels_and_missing_input_buffer(vpu: opforge.Core, tmp_path: Path) -> None:
    xml = (DATA / "mvn.xml").read_text().replace('type="input_buffer" port-index="0"', 'type="input_buffer" port-index="7"')
    shutil.copy(DATA / "mvn.cl", tmp_path / "mvn.cl")
    (tmp_path / "mvn.xml").write_text(xml.replace("mvn.bin", "mvn.cl"))
    x = param([1, 2, 3, 4])
    n = Node.create(VpuMvn, [x.output(0)], {"gamma": [1.0, 1.0]})
    with pytest.raises(KernelError, match=r"mvn.xml:\d+: input_buffer port-index=\"7\" of stage 1 is not written"):
        compile_with(vpu, Model([n.output(0)], [x]), tmp_path / "mvn.xml")


def test_kernels_registered_by_a_plugin_are_checked(tmp_path: Path) -> None:
    from opforge_vpu.device import registered_kernel

    got = registered_kernel("Identity", "template_extension", ("opforge_template_extension", "vpu/identity.xml"))
    assert got.name == "Identity" and got.origin.startswith("plugin:") and got.stages[0].entry == "template_identity_vpu"
    with pytest.raises(KernelError, match=r"VPU kernel registered for Other/x: its configuration has no CustomLayer "
                       r"name=\"Other\" \(it has: Identity\)"):
        registered_kernel("Other", "x", ("opforge_template_extension", "vpu/identity.xml"))
    with pytest.raises(KernelError, match=r"is a int; expected an MVCL XML path"):
        registered_kernel("Other", "x", 3)


def test_where_compares_lists_numbers_and_booleans() -> None:
    from opforge_vpu.mvcl.kernel import _same, _values

    assert _values([3, 3]) == ["3", "3"] and _values("3, 3") == ["3", "3"]
    assert _values(True) == _values("true") == ["1"] and _values("False") == ["0"]
    assert _same("3", "3.0") and not _same("avg", "max") and _same("MAX", "max")


def test_work_sizes_rounded_up_past_the_output_do_not_write_out_of_bounds(vpu: opforge.Core, tmp_path: Path) -> None:
    # OpenVINO's own examples round global sizes up to the local size; this kernel checks no bound
    (tmp_path / "neg.cl").write_text("__kernel void neg(__global const half* x, __global half* y) {\n"
                                     "  const int i = get_global_id(0); y[i] = -x[i]; }\n")
    (tmp_path / "neg.xml").write_text('<CustomLayer name="Relu" type="MVCL" version="1">\n<Kernel entry="neg">'
                                      '<Source filename="neg.cl"/></Kernel>\n<Parameters><Tensor arg-name="x" '
                                      'type="input" port-index="0"/><Tensor arg-name="y" type="output" '
                                      'port-index="0"/></Parameters>\n<WorkSizes dim="output,0" '
                                      'global="(B*F*Y*X+63)/64*64" local="64"/></CustomLayer>')
    x = param([2, 3])
    r = opforge.op("Relu", x.output(0))
    vpu.set_property("VPU", {"CONFIG_FILE": str(tmp_path / "neg.xml")})
    compiled = vpu.compile_model(Model([r.output(0)], [x]), "VPU")
    xin = rand([2, 3], seed=3)
    for _ in range(3):
        np.testing.assert_allclose(compiled([xin])[0], -xin, rtol=1e-3, atol=1e-3)
