"""OpenVINO-compatible custom kernels: the XML format, JIT definitions, priority, errors."""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

import numpy as np
import opforge
import pytest
from gpu_util import param, rand
from opforge.errors import KernelError
from opforge.graph import Model, Node
from opforge.plugins import PluginInfo
from opforge_gpu.custom.config import KernelConfigError, eval_formula, load_config, parse_dim

HERE = Path(__file__).parent
# the template extension's GPU kernel, used here as a loose CONFIG_FILE
EXAMPLE = (HERE.parents[1] / "plugins" / "template-extension" / "src" / "opforge_template_extension" / "gpu"
           / "identity.xml")


class WeightedAttrs(opforge.OpAttrs):
    weights: list[float] = [1.0, 2.0, 3.0]
    offsets: list[int] = [0, 1]
    alpha: float = 0.5


class Weighted(opforge.Op):
    """A test custom op: y[b, f, ...] = x[b, f, ...] * weights[f] * alpha + offsets[1]."""

    type_name = "Weighted"
    version = "gpu_test"
    Attrs = WeightedAttrs

    @classmethod
    def infer(cls, ctx: opforge.InferContext) -> list[opforge.TensorSpec]:
        return [opforge.TensorSpec(ctx.input_type(0), ctx.input_shape(0))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        x = inputs[0]
        w = np.asarray(attrs.weights, np.float32).reshape(1, -1, *([1] * (x.ndim - 2)))
        return [(x * w * np.float32(attrs.alpha) + np.float32(attrs.offsets[1])).astype(x.dtype)]


WEIGHTED_CL = """
__kernel void weighted(__global const INPUT0_TYPE* x, __global const float* w, __global OUTPUT0_TYPE* y) {
    const int i = get_global_id(0), f = get_global_id(1), b = get_global_id(2);
    // BYXF: features are innermost; the plugin reorders around the kernel
    const int yx = i;
    const int in_id = b * INPUT0_PITCHES[0] + f * INPUT0_PITCHES[1] + yx * INPUT0_PITCHES[3] + INPUT0_OFFSET;
    const int out_id = b * OUTPUT0_PITCHES[0] + f * OUTPUT0_PITCHES[1] + yx * OUTPUT0_PITCHES[3];
#ifndef INPUT0_FORMAT_BYXF
#error the input should be declared BYXF
#endif
    y[out_id] = x[in_id] * w[f] * ALPHA + OFFSETS[1] + (NUM_INPUTS - 1) + (GLOBAL_WORKSIZE_SIZE - 3);
}
"""

WEIGHTED_XML = """<?xml version="1.0"?>
<layers>
<CustomLayer name="Weighted" type="SimpleGPU" version="1">
  <Kernel entry="weighted">
    <Source filename="head.cl"/>
    <Source filename="weighted.cl"/>
    <Define name="ALPHA" type="float" param="alpha"/>
    <Define name="OFFSETS" type="int[]" param="offsets"/>
    <Define name="UNUSED 7"/>
  </Kernel>
  <Buffers>
    <Tensor arg-index="0" type="input" port-index="0" format="byxf"/>
    <Data arg-index="1" name="weights"/>
    <Tensor arg-index="2" type="output" port-index="0" format="BYXF"/>
  </Buffers>
  <CompilerOptions options="-cl-mad-enable"/>
  <CompilerOptions options="-DEXTRA=1"/>
  <WorkSizes global="Y*X,F,B" local="1,1,1" dim="input 0"/>
</CustomLayer>
</layers>
"""


def write(tmp_path: Path, xml: str, sources: dict[str, str]) -> Path:
    p = tmp_path / "kernels.xml"
    p.write_text(xml)
    for name, text in sources.items():
        (tmp_path / name).write_text(text)
    return p


@pytest.fixture
def gpu(core: opforge.Core) -> opforge.Core:
    """A fresh Core per test: CONFIG_FILE must not leak between tests."""
    c = opforge.Core()
    c.add_extension(Weighted)
    return c


def test_parser_reads_every_element(tmp_path: Path) -> None:
    p = write(tmp_path, WEIGHTED_XML, {"head.cl": "#define HEAD 1\n", "weighted.cl": WEIGHTED_CL})
    (layer,) = load_config(p)
    assert layer.name == "Weighted" and layer.entry == "weighted" and layer.line == 3
    assert [s.filename for s in layer.sources] == ["head.cl", "weighted.cl"]
    assert [(d.name, d.type, d.param, d.default) for d in layer.defines] == [
        ("ALPHA", "float", "alpha", None), ("OFFSETS", "int[]", "offsets", None), ("UNUSED 7", None, None, None)]
    assert [(t.arg_index, t.direction, t.port, t.format) for t in layer.tensors] == [
        (0, "input", 0, "BYXF"), (2, "output", 0, "BYXF")]
    assert [(d.arg_index, d.name) for d in layer.data] == [(1, "weights")]
    assert layer.options == ["-cl-mad-enable", "-DEXTRA=1"]
    assert (layer.global_ws, layer.local_ws, layer.dim_source, layer.dim_index) == (
        ["Y*X", "F", "B"], ["1", "1", "1"], "input", 0)


def test_work_size_formulas() -> None:
    dims = {"B": 2, "F": 3, "Y": 5, "X": 7, "Z": 1, "W": 1}
    assert eval_formula("B*F*Y*X", dims) == 210
    assert eval_formula("(X + 3) / 4", dims) == 2
    assert eval_formula("X % 4 - 1", dims) == 2
    assert parse_dim("input,1", "f", 1) == ("input", 1)
    assert parse_dim(None, "f", 1) == ("output", 0)


@pytest.mark.parametrize(("xml", "message"), [
    ("<CustomLayer name='A' type='SimpleGPU' version='1'>\n<Kernel entry='k'>\n</CustomLayer>", ":3: malformed XML"),
    ("<CustomLayer name='A' type='MVCL' version='1'/>", ":1: CustomLayer 'A' has type=\"MVCL\""),
    ("<CustomLayer name='A' type='SimpleGPU' version='1'>\n<Buffers><Tensor arg-index='0' type='input' "
     "port-index='0'/></Buffers></CustomLayer>", ":1: <CustomLayer> needs a <Kernel>"),
    ("<CustomLayer name='A' type='SimpleGPU' version='1'>\n<Kernel entry='k'><Source filename='a.cl'/></Kernel>"
     "\n<Buffers>\n<Tensor arg-index='0' type='input' port-index='0' format='NCHW'/></Buffers></CustomLayer>",
     ":4: <Tensor format=\"NCHW\">"),
    ("<CustomLayer name='A' type='SimpleGPU' version='1'>\n<Kernel entry='k'><Source filename='a.cl'/></Kernel>"
     "<Buffers><Tensor arg-index='1' type='input' port-index='0'/></Buffers></CustomLayer>", "must be 0..0"),
    ("<CustomLayer name='A' type='SimpleGPU' version='1'>\n<Kernel entry='k'><Source filename='a.cl'/></Kernel>"
     "<Buffers><Tensor arg-index='0' type='input' port-index='0'/></Buffers>\n\n<WorkSizes global='B*import'/>"
     "</CustomLayer>", ":4: work size 'B*import'"),
    ("<CustomLayer name='A' type='SimpleGPU' version='1'>\n<Kernel entry='k'>\n<Source filename='missing.cl'/>"
     "</Kernel><Buffers><Tensor arg-index='0' type='input' port-index='0'/></Buffers></CustomLayer>",
     ":3: cannot read 'missing.cl'"),
    ("<!DOCTYPE x [<!ENTITY e 'x'>]><CustomLayer/>", "DOCTYPE"),
])
def test_bad_config_names_file_and_line(tmp_path: Path, xml: str, message: str) -> None:
    p = write(tmp_path, xml, {"a.cl": "__kernel void k() {}"})
    with pytest.raises(KernelConfigError) as err:
        load_config(p)
    assert str(p) in str(err.value)
    assert message in str(err.value)


def test_data_defines_formats_and_jit(gpu: opforge.Core, tmp_path: Path) -> None:
    p = write(tmp_path, WEIGHTED_XML, {"head.cl": "#define HEAD 1\n", "weighted.cl": WEIGHTED_CL})
    x = param([2, 3, 4, 5])
    y = Node.create(Weighted, [x], {"weights": [0.5, -1.0, 2.0], "offsets": [0, 3], "alpha": 1.5})
    m = Model([y], [x])
    assert y.name not in gpu.query_model(m, "GPU")  # no kernel before the config is loaded
    gpu.set_property("GPU", {"CONFIG_FILE": str(p)})
    data = rand([2, 3, 4, 5])
    want = data * np.array([0.5, -1.0, 2.0], np.float32).reshape(1, 3, 1, 1) * 1.5 + 3
    got = gpu.compile_model(m, "GPU")([data])[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    half = gpu.compile_model(m, "GPU", {"INFERENCE_PRECISION_HINT": "f16"})([data])[0]
    np.testing.assert_allclose(half, want, rtol=5e-3, atol=5e-3)


def test_custom_kernel_takes_priority_over_builtin(gpu: opforge.Core) -> None:
    x = param([1, 2, 3, 4])
    m = Model([opforge.op("Relu", x)], [x])
    data = rand([1, 2, 3, 4])
    np.testing.assert_allclose(gpu.compile_model(m, "GPU")([data])[0], np.maximum(data, 0))
    gpu.set_property("GPU", {"CONFIG_FILE": str(HERE / "data" / "leaky.xml")})
    got = gpu.compile_model(m, "GPU")([data])[0]
    np.testing.assert_allclose(got, np.where(data < 0, data * 0.25, data), rtol=1e-6)


def test_build_error_shows_log_file_and_line(gpu: opforge.Core, tmp_path: Path) -> None:
    src = "__kernel void leaky_relu(__global const INPUT0_TYPE* a, __global OUTPUT0_TYPE* b) {\n" \
          "    b[0] = a[0]\n    b[1] = undeclared_thing;\n}\n"
    xml = (HERE / "data" / "leaky.xml").read_text()
    p = write(tmp_path, xml, {"leaky.cl": src})
    gpu.set_property("GPU", {"CONFIG_FILE": str(p)})
    x = param([1, 2, 3, 4])
    with pytest.raises(KernelError) as err:
        gpu.compile_model(Model([opforge.op("Relu", x)], [x]), "GPU")
    text = str(err.value)
    assert "custom kernel 'leaky_relu'" in text and "Build log" in text
    assert f"{tmp_path / 'leaky.cl'}:" in text  # the failing source file and line, quoted
    assert "error" in text


def test_template_extension_kernel(gpu: opforge.Core) -> None:
    pytest.importorskip("opforge_template_extension")
    x = param([2, 3, 4, 5])
    m = Model([opforge.op("Identity", x, version="template_extension", scale=2.0)], [x])
    data = rand([2, 3, 4, 5])
    # the installed template extension ships this kernel as package resources...
    np.testing.assert_allclose(gpu.compile_model(m, "GPU")([data])[0], data * 2, rtol=1e-6)
    # ...and a CONFIG_FILE kernel for the same op takes priority over it
    gpu.set_property("GPU", {"CONFIG_FILE": str(EXAMPLE)})
    np.testing.assert_allclose(gpu.compile_model(m, "GPU")([data])[0], data * 2, rtol=1e-6)


class KernelPlugin:
    """A plugin shipping its GPU kernel as (package, resource): no loose files, no opforge_gpu import."""

    @opforge.hookimpl
    def opforge_register_ops(self, register: Any) -> None:
        register(Weighted)

    @opforge.hookimpl
    def opforge_register_kernels(self, register: Any) -> None:
        register("GPU", Weighted, ("gpu_test_kernels", "kernels/weighted.xml"))


def test_kernel_registered_by_a_plugin_from_package_resources(core: opforge.Core, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = tmp_path / "gpu_test_kernels"
    (pkg / "kernels").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "kernels" / "weighted.xml").write_text(WEIGHTED_XML)
    (pkg / "kernels" / "head.cl").write_text("#define HEAD 1\n")
    (pkg / "kernels" / "weighted.cl").write_text(WEIGHTED_CL)
    monkeypatch.syspath_prepend(str(tmp_path))
    ps = opforge.Core().plugins.copy()
    ps.register_module(KernelPlugin(), PluginInfo("gpu_test_kernels", "gpu-test-kernels", "0.0"))
    c = opforge.Core(ps)
    x = param([1, 3, 2, 2])
    m = Model([Node.create(Weighted, [x])], [x])
    data = rand([1, 3, 2, 2])
    want = data * np.array([1.0, 2.0, 3.0], np.float32).reshape(1, 3, 1, 1) * 0.5 + 1
    np.testing.assert_allclose(c.compile_model(m, "GPU")([data])[0], want, rtol=1e-5)
    assert set(c.query_model(m, "GPU")) == {n.name for n in m.get_ordered_ops()}



def test_build_errors_are_mapped_back_when_the_compiler_ignores_line_directives(tmp_path: Path) -> None:
    # NVIDIA's OpenCL compiler reports "<kernel>:LINE" counted over the whole assembled program;
    # the message must still name the .cl file and its own line.
    from opforge_gpu.opencl import format_build_error

    cl = tmp_path / "leaky.cl"
    cl.write_text("__kernel void k(__global float* b) {\n    b[1] = undeclared_thing;\n}\n")
    source = '#define X 1\n#define Y 2\n#line 1 "leaky.cl"\n' + cl.read_text()
    log = "<kernel>:5:12: error: use of undeclared identifier 'undeclared_thing'"
    info = types.SimpleNamespace(description="NVIDIA H200 (test)")
    msg = format_build_error("custom kernel 'k'", info, log, source, {"leaky.cl": str(cl)})  # type: ignore[arg-type]
    assert f"at {cl}:2: `b[1] = undeclared_thing;`" in msg


def test_entry_missing_from_the_source_is_an_error_at_compile_time(gpu: opforge.Core, tmp_path: Path) -> None:
    """Once compiled fine and failed at the first inference with a bare pyopencl LogicError."""
    src = ("__kernel void leaky(__global const INPUT0_TYPE* a, __global OUTPUT0_TYPE* b) { b[0] = a[0]; }\n"
           "__kernel void helper(__global float* a) { a[0] = 0; }\n")
    p = write(tmp_path, (HERE / "data" / "leaky.xml").read_text(), {"leaky.cl": src})
    gpu.set_property("GPU", {"CONFIG_FILE": str(p)})
    x = param([1, 2, 3, 4])
    with pytest.raises(KernelConfigError) as err:
        gpu.compile_model(Model([opforge.op("Relu", x)], [x]), "GPU")
    text = str(err.value)
    assert f"{p}:" in text and "entry=\"leaky_relu\"" in text and str(tmp_path / "leaky.cl") in text
    assert "its kernels: helper, leaky" in text


ROUNDED_XML = """<CustomLayer name="Relu" type="SimpleGPU" version="1">
  <Kernel entry="unguarded"><Source filename="unguarded.cl"/></Kernel>
  <Buffers>
    <Tensor arg-index="0" type="input" port-index="0" format="BFYX"/>
    <Tensor arg-index="1" type="output" port-index="0" format="BFYX"/>
  </Buffers>
  <WorkSizes global="((B*F*Y*X+63)/64)*64" local="64"/>
</CustomLayer>
"""

# no bound check: every one of the 64 work-items writes, 54 of them past a 10-element output
UNGUARDED_CL = """
__kernel void unguarded(__global const INPUT0_TYPE* a, __global OUTPUT0_TYPE* b) {
    const int i = get_global_id(0);
    const int n = OUTPUT0_DIMS[0] * OUTPUT0_DIMS[1] * OUTPUT0_DIMS[2] * OUTPUT0_DIMS[3];
    b[i] = a[i % n] > 0 ? a[i % n] : 0;
}
"""


def test_rounded_up_work_size_never_writes_past_the_output(gpu: opforge.Core, tmp_path: Path) -> None:
    p = write(tmp_path, ROUNDED_XML, {"unguarded.cl": UNGUARDED_CL})
    gpu.set_property("GPU", {"CONFIG_FILE": str(p)})
    x = param([1, 1, 1, 10])
    compiled = gpu.compile_model(Model([opforge.op("Relu", x)], [x]), "GPU")
    data = rand([1, 1, 1, 10])
    np.testing.assert_array_equal(compiled([data])[0], np.maximum(data, 0))
    plan = next(iter(compiled._executable.plans.values()))
    launch = next(la for la in plan.launches if la.kernel == "unguarded")
    out = plan.tensors[launch.args[1].tensor]
    assert plan.tensors[out.root].nbytes >= 64 * 4  # a buffer for every work-item
