"""Rendering an :class:`ExtensionSpec` into a package: the templates under ``templates/`` (package
resources, ``string.Template`` syntax) filled with names and with the per-attribute and per-port
blocks computed here."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

from opforge.errors import ExtgenConfigError
from opforge.extgen.config import AttrSpec, ExtensionSpec

#: the command a generated (or the template) package's README gives; a test runs exactly this
INSTALL_COMMAND = "pip install ."

_PY_TYPES = {"float": "float", "int": "int", "bool": "bool", "string": "str", "float[]": "list[float]",
             "int[]": "list[int]"}
_CPP_TYPES = {"float": "double", "int": "int64_t", "bool": "bool", "string": "std::string",
              "float[]": "std::vector<double>", "int[]": "std::vector<int64_t>"}
_GPU_DEFINE_TYPES = {"float": "float", "int": "int", "bool": "int", "float[]": "float[]", "int[]": "int[]"}
_NON_DEFAULT_WRONG: dict[str, Any] = {"float": "not a number", "int": "not an int", "bool": "maybe",
                                      "string": 12345, "float[]": "not a list", "int[]": "not a list"}


def _template(name: str) -> Template:
    text = resources.files("opforge.extgen").joinpath("templates", *name.split("/")).read_text(encoding="utf-8")
    return Template(text)


def _render(name: str, values: dict[str, str]) -> str:
    try:
        return _template(name).substitute(values)
    except KeyError as err:  # a template naming a value this module does not compute: a bug here
        raise ExtgenConfigError(f"extgen template {name} uses ${{{err.args[0]}}}, which is not defined") from None


def _py(value: Any) -> str:
    """A Python literal, strings in double quotes (as the rest of the generated code)."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_py(v) for v in value) + "]"
    if isinstance(value, tuple):
        return "(" + ", ".join(_py(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_py(k)}: {_py(v)}" for k, v in value.items()) + "}"
    return repr(value)


def _cpp(value: Any, type_: str) -> str:
    if type_ == "float":
        return repr(float(value))
    if type_ == "int":
        return f"{int(value)}"
    if type_ == "bool":
        return "true" if value else "false"
    if type_ == "string":
        return json.dumps(value)
    inner = "float" if type_ == "float[]" else "int"
    return "{" + ", ".join(_cpp(v, inner) for v in value) + "}"


def _xml_default(value: Any, type_: str) -> str:
    if type_ == "bool":
        return "1" if value else "0"
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


def other_value(a: AttrSpec) -> Any:
    """A valid value other than the default, so tests see attributes travel (not defaults)."""
    if a.type == "float":
        return a.default + 0.5
    if a.type == "int":
        return a.default + 1
    if a.type == "bool":
        return not a.default
    if a.type == "string":
        return (a.default or "value") + "_2"
    if a.type == "float[]":
        return [*a.default, 0.25] if a.default else [0.5, 1.5]
    return [*a.default, 3] if a.default else [1, 2]


def _copy_rule(s: ExtensionSpec) -> str:
    n = len(s.inputs)
    return ", ".join(f"{o} = {s.inputs[j % n]}" for j, o in enumerate(s.outputs))


def values(s: ExtensionSpec) -> dict[str, str]:
    """Every ``$name`` the templates use."""
    n_in, n_out = len(s.inputs), len(s.outputs)
    attrs = s.attributes
    v: dict[str, str] = {
        "package": s.package, "version": s.version, "module": s.module, "plugin_name": s.plugin_name,
        "opset": s.opset, "op_type": s.op_type, "op_class": s.op_class, "op_snake": s.op_snake,
        "n_inputs": str(n_in), "n_outputs": str(n_out),
        "inputs_tuple": _py(tuple(s.inputs)), "outputs_tuple": _py(tuple(s.outputs)),
        "inputs_list": _py(list(s.inputs)), "outputs_list": _py(list(s.outputs)),
        "copy_rule": _copy_rule(s),
        "copy_note": " (that keeps the shape for now: see EDIT in infer)" if s.changes_shape else "",
        "attr_list": ", ".join(a.name for a in attrs) or "none",
        "attr_list_md": ", ".join(f"`{a.name}`" for a in attrs) or "none",
    }
    # --- the op -----------------------------------------------------------------------------
    v["attr_fields"] = "\n".join(f"    {a.name}: {_PY_TYPES[a.type]} = {_py(a.default)}" for a in attrs) or \
        "    # no attributes: add fields here as `name: type = default`"
    v["attr_kwargs"] = "".join(f", {a.name}=attrs.{a.name}" for a in attrs)
    params = [f"{n}: np.ndarray" for n in s.inputs]
    if attrs:
        params.append("*")
        params += [f"{a.name}: {_PY_TYPES[a.type]}" for a in attrs]
    v["ref_params"] = ", ".join(params)
    v["ref_returns"] = ", ".join(f"np.array({s.inputs[j % n_in]}, copy=True)" for j in range(n_out))
    v["infer_body"] = _infer_body(s)
    # --- frontends and plugin ---------------------------------------------------------------
    v.update(_frontend_values(s))
    v.update(_plugin_values(s))
    # --- CPU --------------------------------------------------------------------------------
    v["cpp_fields"] = "\n".join(f"  {_CPP_TYPES[a.type]} {a.name} = {_cpp(a.default, a.type)};" for a in attrs) \
        or "  // no attributes"
    v["cpp_reads"] = " &&\n        ".join(
        f'read_attr(node, "{a.name}", &p->{a.name}, err, err_len)' for a in attrs) or "true"
    # --- GPU --------------------------------------------------------------------------------
    v.update(_gpu_values(s))
    v.update(_vpu_values(s))
    # --- tests and README -------------------------------------------------------------------
    v.update(_test_values(s))
    v.update(_readme_values(s))
    return v


def _infer_body(s: ExtensionSpec) -> str:
    n_in = len(s.inputs)
    lines = []
    if n_in > 1:
        lines += [
            "        # element-wise: every input has the first one's element type and shape",
            "        for i in range(1, ctx.num_inputs):",
            "            if ctx.input_type(i) != ctx.input_type(0) or not ctx.input_shape(i).compatible(ctx.input_shape(0)):",
            "                raise ctx.error(",
            "                    f\"input {i} ('{cls.inputs[i]}') is {ctx.input_type(i)} {ctx.input_shape(i)}; \"",
            "                    f\"input 0 ('{cls.inputs[0]}') is {ctx.input_type(0)} {ctx.input_shape(0)}\"",
            "                )",
        ]
    example = ""
    floats = [a for a in s.attributes if a.type == "float"]
    if len(floats) >= 2:
        a, b = floats[0].name, floats[1].name
        example = (f"        #     if ctx.attrs.{a} > ctx.attrs.{b}:\n"
                   f"        #         raise ctx.error(f\"{a}={{ctx.attrs.{a}}} is greater than {b}={{ctx.attrs.{b}}}\")\n")
    lines.append("        # EDIT: reject attribute values or input types the op cannot take, with ctx.error(...)"
                 + (", e.g.\n" + example.rstrip("\n") if example else ""))
    if s.changes_shape:
        lines.append("        # EDIT: this op changes shapes: compute each output's PartialShape from the inputs'\n"
                     "        # (ctx.input_shape(i); a dim is None where it is dynamic) and the attributes.")
    if n_in == 1 and len(s.outputs) == 1:
        lines.append("        return [TensorSpec(ctx.input_type(0), ctx.input_shape(0))]")
    else:
        src = "0" if n_in == 1 else f"j % {n_in}"
        lines.append(f"        # output j has the type and shape of input {src}\n"
                     f"        return [TensorSpec(ctx.input_type({src}), ctx.input_shape({src})) "
                     f"for j in range({len(s.outputs)})]")
    return "\n".join(lines)


def _frontend_values(s: ExtensionSpec) -> dict[str, str]:
    consts = []
    items = []
    converters = []
    extractors = []
    extractor_names = []
    style = s.extractor
    if s.onnx:
        consts += ["#: the ONNX domain and op type models use for this op",
                   f"ONNX_DOMAIN = {_py(s.onnx.domain)}", f"ONNX_TYPE = {_py(s.onnx.type)}"]
        if style == "OpExtension":
            items.append(f"        OpExtension({s.op_class}, ONNX_TYPE, {_py(s.onnx.attribute_names)}, framework=\"onnx\", "
                         "domain=ONNX_DOMAIN),")
        elif style == "ConversionExtension":
            converters.append(_converter(s, "onnx", s.onnx.attribute_names))
            items.append("        ConversionExtension(ONNX_TYPE, convert_onnx, framework=\"onnx\", domain=ONNX_DOMAIN),")
        else:
            extractors.append(_extractor(s, s.onnx.attribute_names))
            extractor_names.append(f"{s.op_class}OnnxExtractor")
    if s.paddle:
        consts += ["#: the Paddle op type, and its named ports in the op's port order",
                   f"PADDLE_TYPE = {_py(s.paddle.type)}", f"PADDLE_INPUTS = {_py(s.paddle.inputs)}",
                   f"PADDLE_OUTPUTS = {_py(s.paddle.outputs)}"]
        if style == "ConversionExtension":
            converters.append(_converter(s, "paddle", s.paddle.attribute_names))
            items.append("        ConversionExtension(PADDLE_TYPE, convert_paddle, framework=\"paddle\"),")
        else:
            items.append(f"        OpExtension({s.op_class}, PADDLE_TYPE, {_py(s.paddle.attribute_names)}, "
                         "framework=\"paddle\", inputs=PADDLE_INPUTS, outputs=PADDLE_OUTPUTS),")
    return {
        "framework_constants": "\n".join(consts),
        "extension_items": "\n".join(items),
        "converters": "".join(converters),
        "extractors": "".join(extractors),
        "extractor_names": ", ".join(extractor_names),
    }


def _attr_reads(s: ExtensionSpec, renames: dict[str, str], ctx: str, indent: int = 8) -> str:
    py_read = {"float": "float", "int": "int", "bool": "bool", "string": "str", "float[]": "list", "int[]": "list"}
    return "\n".join(
        f"{' ' * indent}{_py(a.name)}: {ctx}.get_attribute({_py(renames.get(a.name, a.name))}, {_py(a.default)}, "
        f"dtype={py_read[a.type]}),"
        for a in s.attributes
    )


def _converter(s: ExtensionSpec, fw: str, renames: dict[str, str]) -> str:
    reads = _attr_reads(s, renames, "ctx")
    if fw == "onnx":
        ins = ", ".join(f"ctx.get_input({i})" for i in range(len(s.inputs)))
        ret = "node.outputs()"
        doc = "An ONNX node: inputs by position, outputs in order."
    else:
        ins = ", ".join(f"ctx.get_input(PADDLE_INPUTS[{i}])" for i in range(len(s.inputs)))
        ret = "{name: node.output(j) for j, name in enumerate(PADDLE_OUTPUTS)}"
        doc = "A Paddle op: inputs and outputs by port name."
    return (
        f"\n\n\ndef convert_{fw}(ctx: NodeContext) -> Any:\n"
        f"    \"\"\"{doc}\"\"\"\n"
        "    # EDIT: read attributes under other names, or compute them, here\n"
        f"    attrs: dict[str, Any] = {{\n{reads}\n    }}\n"
        f"    node = ctx.op({s.op_class}, {ins}, **attrs)\n"
        f"    return {ret}\n"
    )


def _extractor(s: ExtensionSpec, renames: dict[str, str]) -> str:
    reads = _attr_reads(s, renames, "node", 12)
    return (
        f"\n\n\nclass {s.op_class}OnnxExtractor(FrontExtractorOp):\n"
        f"    \"\"\"Reads the ONNX node's attributes for {s.op_class}.\"\"\"\n\n"
        "    op = ONNX_TYPE\n    framework = \"onnx\"\n    domain = ONNX_DOMAIN\n\n"
        "    @classmethod\n"
        f"    def extract(cls, node: NodeContext) -> tuple[type[{s.op_class}], dict[str, Any]]:\n"
        "        # EDIT: read attributes under other names, or compute them, here\n"
        f"        return {s.op_class}, {{\n{reads}\n        }}\n"
    )


def _plugin_values(s: ExtensionSpec) -> dict[str, str]:
    imports = [f"from {s.module}.{s.op_snake} import {s.op_class}"]
    hooks = []
    if s.onnx or s.paddle:
        both = s.extractor == "FrontExtractorOp" and s.onnx
        imports.append(f"from {s.module}.frontend import extensions" + (", extractors" if both else ""))
        hooks.append(
            "\n\n@hookimpl\ndef opforge_register_conversion_extensions(register: Register) -> None:\n"
            "    for extension in extensions():\n        register(extension)\n"
        )
        if both:
            hooks.append(
                "\n\n@hookimpl\ndef opforge_register_extractors(register: Register) -> None:\n"
                "    for extractor in extractors():\n"
                "        register(extractor.framework, extractor.op, extractor, domain=extractor.domain)\n"
            )
    kernels = []
    if "CPU" in s.devices:
        if s.cpu_kernel == "c++":
            imports.append(f"from {s.module}.cpu_kernel import CompiledCpuKernel")
            kernels.append("    # CPU: compiled C++ through the kernel ABI (csrc/), resolved on first use\n"
                           f"    register(\"CPU\", {s.op_class}, CompiledCpuKernel())")
        else:
            imports.append(f"from {s.module}.cpu_kernel import {s.op_snake}_cpu")
            kernels.append("    # CPU: a NumPy kernel (cpu_kernel.py)\n"
                           f"    register(\"CPU\", {s.op_class}, {s.op_snake}_cpu)")
    if "GPU" in s.devices:
        kernels.append("    # GPU: an OpenCL kernel with its CustomLayer XML, read from this package's files\n"
                       f"    register(\"GPU\", {s.op_class}, ({_py(s.module)}, \"gpu/{s.op_snake}.xml\"))")
    if "VPU" in s.devices:
        kernels.append("    # VPU: an MVCL kernel (XML + .cl); used once the opforge-vpu device is installed\n"
                       f"    register(\"VPU\", {s.op_class}, ({_py(s.module)}, \"vpu/{s.op_snake}.xml\"))")
    if kernels:
        hooks.append("\n\n@hookimpl\ndef opforge_register_kernels(register: Register) -> None:\n"
                     + "\n".join(kernels) + "\n")
    return {"plugin_imports": "".join(i + "\n" for i in sorted(imports)), "plugin_hooks": "".join(hooks)}


def _gpu_values(s: ExtensionSpec) -> dict[str, str]:
    n_in = len(s.inputs)
    defines = []
    macros = []
    for a in s.attributes:
        t = _GPU_DEFINE_TYPES.get(a.type)
        if t is None:  # a string: a bare token, usable in #if comparisons
            defines.append(f"    <Define name=\"{a.name.upper()}\" param=\"{a.name}\" default=\"{a.default}\"/>")
        else:
            defines.append(f"    <Define name=\"{a.name.upper()}\" type=\"{t}\" param=\"{a.name}\" "
                           f"default=\"{_xml_default(a.default, a.type)}\"/>")
        macros.append(a.name.upper())
    tensors = [f"    <Tensor arg-index=\"{i}\" type=\"input\" port-index=\"{i}\" format=\"BFYX\"/>" for i in range(n_in)]
    tensors += [f"    <Tensor arg-index=\"{n_in + j}\" type=\"output\" port-index=\"{j}\" format=\"BFYX\"/>"
                for j in range(len(s.outputs))]
    params = [f"const __global INPUT{i}_TYPE* {name}" for i, name in enumerate(s.inputs)]
    params += [f"__global OUTPUT{j}_TYPE* {name}" for j, name in enumerate(s.outputs)]
    funcs = []
    body = []
    for j, out in enumerate(s.outputs):
        k = j % n_in
        funcs.append(
            f"// EDIT: output '{out}' from input '{s.inputs[k]}', one element at a time.\n"
            f"inline OUTPUT{j}_TYPE {s.op_snake}_element_{j}(INPUT{k}_TYPE x)\n"
            f"{{\n    return (OUTPUT{j}_TYPE)x;\n}}\n"
        )
        body.append(
            f"    size_t n{j} = 1;\n"
            f"    for (int d = 0; d < OUTPUT{j}_DIMS_SIZE; ++d) n{j} *= (size_t)OUTPUT{j}_DIMS[d];\n"
            f"    if (i < n{j})\n"
            f"        {out}[OUTPUT{j}_OFFSET + i] = {s.op_snake}_element_{j}({s.inputs[k]}[INPUT{k}_OFFSET + i]);"
        )
    return {
        "gpu_defines": "\n".join(defines) or "    <!-- no attributes -->",
        "gpu_tensors": "\n".join(tensors),
        "gpu_params": ", ".join(params),
        "gpu_element_functions": "\n".join(funcs).rstrip("\n"),
        "gpu_body": "\n".join(body),
        "gpu_macro_list": ", ".join(macros) or "none",
    }


def _vpu_values(s: ExtensionSpec) -> dict[str, str]:
    n_in = len(s.inputs)
    params = [f"      <Tensor arg-name=\"{n}\" type=\"input\" port-index=\"{i}\" format=\"BFYX\"/>"
              for i, n in enumerate(s.inputs)]
    params += [f"      <Tensor arg-name=\"{n}\" type=\"output\" port-index=\"{j}\" format=\"BFYX\"/>"
               for j, n in enumerate(s.outputs)]
    kparams = [f"__global const half* restrict {n}" for n in s.inputs]
    kparams += [f"__global half* restrict {n}" for n in s.outputs]
    scalars = []
    for a in s.attributes:
        # MVCL scalars are int or float; lists and strings have no scalar form on the VPU
        if a.type in ("float", "int", "bool"):
            t = "float" if a.type == "float" else "int"
            params.append(f"      <Scalar arg-name=\"{a.name}\" type=\"{t}\" port-index=\"0\" source=\"{a.name}\"/>")
            kparams.append(f"{t} {a.name}")
            scalars.append((a.name, t))
    funcs = []
    body = []
    args = "".join(f", {n}" for n, _ in scalars)
    sig = "".join(f", {t} {n}" for n, t in scalars)
    for j, out in enumerate(s.outputs):
        k = j % n_in
        funcs.append(
            f"// EDIT: output '{out}' from input '{s.inputs[k]}', one element at a time.\n"
            f"inline half {s.op_snake}_vpu_element_{j}(half x{sig})\n"
            f"{{\n" + "".join(f"    (void){n};\n" for n, _ in scalars) + "    return x;\n}\n"
        )
        body.append(f"    {out}[i] = {s.op_snake}_vpu_element_{j}({s.inputs[k]}[i]{args});")
    return {
        "vpu_params": "\n".join(params),
        "vpu_kernel_params": ", ".join(kparams),
        "vpu_element_functions": "\n".join(funcs).rstrip("\n"),
        "vpu_body": "\n".join(body),
    }


def _test_values(s: ExtensionSpec) -> dict[str, str]:
    attrs = s.attributes
    other = {a.name: other_value(a) for a in attrs}
    checks = []
    if s.onnx:
        checks.append(f"    assert \"onnx/{s.onnx.domain + '/' if s.onnx.domain else ''}{s.onnx.type}\" in "
                      "provides[\"conversion_extensions\"] + provides.get(\"extractors\", [])")
    if s.paddle:
        checks.append(f"    assert \"paddle/{s.paddle.type}\" in provides[\"conversion_extensions\"]")
    for d in s.devices:
        if d != "VPU":
            checks.append(f"    assert \"{s.op_type}/{s.opset}\" in str(provides[\"kernels\"][\"{d}\"])")
    extra = []
    if s.onnx:
        names = {a.name: s.onnx.attribute_names.get(a.name, a.name) for a in attrs}
        extra.append(f"\n\n#: the op's attribute names as ONNX spells them\nONNX_NAMES = {_py(names)}")
        extra.append(_render("tests/onnx_test.py.tmpl", {
            "onnx_type": s.onnx.type, "onnx_domain": s.onnx.domain, "op_class": s.op_class,
            "op_snake": s.op_snake}))
    if s.paddle and len(s.inputs) == 1 and len(s.outputs) == 1:
        names = {a.name: s.paddle.attribute_names.get(a.name, a.name) for a in attrs}
        extra.append(f"\n\n#: the op's attribute names as Paddle spells them\nPADDLE_NAMES = {_py(names)}")
        extra.append(_render("tests/paddle_test.py.tmpl", {
            "paddle_type": s.paddle.type, "paddle_in": s.paddle.inputs[0], "paddle_out": s.paddle.outputs[0],
            "paddle_ports": f"{s.paddle.inputs[0]} -> {s.paddle.outputs[0]}", "op_class": s.op_class}))
    if s.cpp_kernel:
        extra.append(_render("tests/cpp_test.py.tmpl", {"module": s.module}))
    return {
        "defaults_dict": _py({a.name: a.default for a in attrs}),
        "attrs_dict": _py(other),
        "wrong_dict": _py({a.name: _NON_DEFAULT_WRONG[a.type] for a in attrs}),
        "kernel_devices": _py([d for d in s.devices if d != "VPU"]),
        "provides_checks": "\n".join(checks),
        "extra_tests": "".join(extra),
    }


def _readme_values(s: ExtensionSpec) -> dict[str, str]:
    m = s.module
    rows = [
        ("pyproject.toml", "the distribution and its `opforge` entry point", "rename or version the package"),
        (f"src/{m}/{s.op_snake}.py", "the op: attributes, shape inference, NumPy reference",
         "give the op its meaning (start here)"),
        (f"src/{m}/plugin.py", "the hooks registering the op, mappings and kernels", "add more ops"),
    ]
    if s.onnx or s.paddle:
        rows.append((f"src/{m}/frontend.py", f"ONNX/Paddle mappings ({s.extractor})",
                     "read framework attributes under other names"))
    notes = []
    if "CPU" in s.devices and s.cpu_kernel == "c++":
        rows.append((f"csrc/{s.op_snake}_kernel.cpp", "CPU kernel, C++ through the kernel ABI",
                     f"edit `{s.op_snake}_element`"))
        rows.append(("csrc/include/opforge_cpu/kernel_abi.h", "opforge-cpu's kernel ABI header (a copy)",
                     "nothing: regenerate or copy `opforge_cpu.get_include()` for a new ABI version"))
        notes.append("- **CPU**: compiled C++ called from the CPU executor's C++ loop without the GIL "
                     f"(`opforge opcheck` checks the profile says `abi:{s.package} {s.op_type}`). The kernel ABI "
                     "header is a copy of opforge-cpu's; the CPU device refuses a kernel built against another "
                     "ABI version, naming this package and both versions.")
    elif "CPU" in s.devices:
        rows.append((f"src/{m}/cpu_kernel.py", "CPU kernel, NumPy (the slow path)", "edit `_compute`"))
        notes.append("- **CPU**: a NumPy kernel, called with the GIL held for this node only.")
    if "GPU" in s.devices:
        rows.append((f"src/{m}/gpu/{s.op_snake}.cl, .xml", "GPU kernel, OpenCL + OpenVINO CustomLayer XML",
                     f"edit `{s.op_snake}_element_N`"))
        notes.append("- **GPU**: OpenCL C in OpenVINO's CustomLayer format (also loadable by OpenVINO's GPU plugin "
                     "as a `CONFIG_FILE`); one work-item per output element, every rank from 0 to 6.")
    if "VPU" in s.devices:
        rows.append((f"src/{m}/vpu/{s.op_snake}.cl, .xml", "VPU kernel, MVCL (OpenVINO MYRIAD format)",
                     f"edit `{s.op_snake}_vpu_element_N`"))
        notes.append("- **VPU**: an MVCL kernel (FP16, arguments bound by name). It is exercised once the "
                     "opforge-vpu device is installed; until then `opforge opcheck` skips VPU because no "
                     "such device is available, and the tests do not run it.")
    rows.append((f"tests/test_{s.op_snake}.py", "the package's tests (pass as generated)",
                 "update the reference's expected values"))
    if s.cpp_kernel:
        needs, note = "opforge and opforge-cpu are", (
            "Build isolation stays on: the build needs only scikit-build-core and pybind11 from the package "
            "index and a C++17 compiler; the kernel ABI header ships in `csrc/include`. For an editable "
            "install use `pip install -e .`.")
    else:
        needs, note = "opforge is", "For an editable install use `pip install -e .`."
    return {
        "install_command": INSTALL_COMMAND, "install_needs": needs, "install_note": note,
        "file_table": "\n".join(f"| `{a}` | {b} | {c} |" for a, b, c in rows),
        "kernel_notes": "\n".join(notes) or "No device kernels were generated.",
    }


def kernel_abi_header() -> str:
    """The CPU device's kernel ABI header (``Device.extension_files``), copied into packages with
    a C++ CPU kernel. Asked of the installed CPU device plugin: the core imports no plugin."""
    from opforge.errors import DeviceError
    from opforge.runtime.core import Core

    path = "csrc/include/opforge_cpu/kernel_abi.h"
    try:
        header = Core().extension_files("CPU").get(path)
    except DeviceError as err:
        header, why = None, str(err)
    else:
        why = "the CPU device installed here provides no kernel ABI header"
    if header is None:
        raise ExtgenConfigError(
            f"a C++ CPU kernel is built against opforge-cpu's kernel ABI header, and none is available "
            f"({why}); install opforge-cpu, or generate a NumPy CPU kernel with \"cpu_kernel\": \"python\""
        )
    return header


def files(s: ExtensionSpec) -> dict[str, str]:
    """The package's files: relative path -> text."""
    v = values(s)
    m, op = s.module, s.op_snake
    out = {
        "pyproject.toml": _render("pyproject_cpp.toml.tmpl" if s.cpp_kernel else "pyproject_py.toml.tmpl", v),
        "README.md": _render("README.md.tmpl", v),
        f"src/{m}/__init__.py": _render("init.py.tmpl", v),
        f"src/{m}/py.typed": "",
        f"src/{m}/{op}.py": _render("op.py.tmpl", v),
        f"src/{m}/plugin.py": _render("plugin.py.tmpl", v),
        f"tests/test_{op}.py": _render("tests/test_op.py.tmpl", v),
        "extgen.json": json.dumps(s.as_json(), indent=2) + "\n",
    }
    if s.onnx or s.paddle:
        out[f"src/{m}/frontend.py"] = _render(f"frontend_{s.extractor}.py.tmpl", v)
    if s.cpp_kernel:
        out["CMakeLists.txt"] = _render("CMakeLists.txt.tmpl", v)
        out[f"csrc/{op}_kernel.cpp"] = _render("cpu/kernel.cpp.tmpl", v)
        out["csrc/include/opforge_cpu/kernel_abi.h"] = kernel_abi_header()
        out[f"src/{m}/cpu_kernel.py"] = _render("cpu/compiled_kernel.py.tmpl", v)
    elif "CPU" in s.devices:
        out[f"src/{m}/cpu_kernel.py"] = _render("cpu/python_kernel.py.tmpl", v)
    if "GPU" in s.devices:
        out[f"src/{m}/gpu/{op}.xml"] = _render("gpu/kernel.xml.tmpl", v)
        out[f"src/{m}/gpu/{op}.cl"] = _render("gpu/kernel.cl.tmpl", v)
    if "VPU" in s.devices:
        out[f"src/{m}/vpu/{op}.xml"] = _render("vpu/kernel.xml.tmpl", v)
        out[f"src/{m}/vpu/{op}.cl"] = _render("vpu/kernel.cl.tmpl", v)
    return out


def write_package(s: ExtensionSpec, output_dir: str | Path, *, force: bool = False) -> Path:
    """Write the package into ``output_dir/<package>``; refuses to overwrite unless ``force``."""
    root = Path(output_dir) / s.package
    if root.exists() and any(root.iterdir()) and not force:
        raise ExtgenConfigError(f"{root} exists and is not empty; choose another --output-dir or pass --force")
    for rel, text in files(s).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root
