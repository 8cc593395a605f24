"""``opforge extgen new``: configuration checks, interactive mode, every extractor style and kernel
form, and (slow) the issue's configuration from generation to an installed package whose tests pass."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import venv
from pathlib import Path
from typing import Any

import numpy as np
import opforge
import pytest
from opforge.cli import main
from opforge.errors import ExtgenConfigError
from opforge.extgen import files, parse_config, write_package

REPO = Path(__file__).resolve().parents[2]

#: the configuration of issue 13, as given there
SOFTCLIP: dict[str, Any] = {
    "package": "opforge-acme-softclip", "opset": "acme",
    "op": {"type": "SoftClip", "inputs": ["x"], "outputs": ["y"],
           "attributes": {"lo": {"type": "float", "default": -1.0}, "hi": {"type": "float", "default": 1.0}}},
    "frameworks": {"onnx": {"domain": "com.acme", "type": "SoftClip"},
                   "paddle": {"type": "soft_clip", "inputs": ["X"], "outputs": ["Out"]}},
    "devices": ["CPU", "GPU", "VPU"],
}


def _cfg(**changes: Any) -> dict[str, Any]:
    cfg = json.loads(json.dumps(SOFTCLIP))
    cfg.update(changes)
    return cfg


def test_issue_config_generates_one_package(tmp_path: Path) -> None:
    (tmp_path / "c.json").write_text(json.dumps(SOFTCLIP))
    assert main(["extgen", "new", "--config", str(tmp_path / "c.json"), "--output-dir", str(tmp_path)]) == 0
    root = tmp_path / "opforge-acme-softclip"
    got = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    m = "src/opforge_acme_softclip"
    assert got == sorted([
        "CMakeLists.txt", "README.md", "extgen.json", "pyproject.toml", "csrc/soft_clip_kernel.cpp",
        "csrc/include/opforge_cpu/kernel_abi.h", "tests/test_soft_clip.py", f"{m}/__init__.py",
        f"{m}/py.typed", f"{m}/soft_clip.py", f"{m}/plugin.py", f"{m}/frontend.py", f"{m}/cpu_kernel.py",
        f"{m}/gpu/soft_clip.xml", f"{m}/gpu/soft_clip.cl", f"{m}/vpu/soft_clip.xml", f"{m}/vpu/soft_clip.cl",
    ])
    for py in root.rglob("*.py"):
        compile(py.read_text(), str(py), "exec")
    pyproject = (root / "pyproject.toml").read_text()
    # build isolation works: nothing the build needs comes from this repository
    assert 'requires = ["scikit-build-core>=0.10", "pybind11>=2.12"]' in pyproject
    assert 'acme_softclip = "opforge_acme_softclip.plugin"' in pyproject
    readme = (root / "README.md").read_text()
    assert "pip install .\n" in readme and "opforge-vpu" in readme
    # every attribute reaches every kernel
    assert 'param="lo"' in (root / m / "gpu/soft_clip.xml").read_text()
    assert 'source="hi"' in (root / m / "vpu/soft_clip.xml").read_text()
    assert 'type="MVCL"' in (root / m / "vpu/soft_clip.xml").read_text()
    cpp = (root / "csrc/soft_clip_kernel.cpp").read_text()
    assert 'read_attr(node, "lo", &p->lo' in cpp and 'read_attr(node, "hi", &p->hi' in cpp
    # the same file again is refused, not overwritten
    assert main(["extgen", "new", "--config", str(tmp_path / "c.json"), "--output-dir", str(tmp_path)]) == 2
    assert json.loads((root / "extgen.json").read_text())["op"]["attributes"]["hi"] == {"type": "float",
                                                                                         "default": 1.0}


def test_vendored_kernel_abi_headers_equal_opforge_cpus() -> None:
    opforge_cpu = pytest.importorskip("opforge_cpu")
    original = (Path(opforge_cpu.get_include()) / "opforge_cpu" / "kernel_abi.h").read_text()
    template = REPO / "plugins/template-extension/csrc/include/opforge_cpu/kernel_abi.h"
    assert template.read_text() == original, "copy plugin-cpu's kernel_abi.h into the template extension"
    assert files(parse_config(SOFTCLIP))["csrc/include/opforge_cpu/kernel_abi.h"] == original
    build = (REPO / "plugins/template-extension/pyproject.toml").read_text().split("[project]")[0]
    assert "opforge" not in build.split("requires")[1].split("]")[0], "build requirements must be on the index"


@pytest.mark.parametrize(("change", "message"), [
    ({"pakage": "x"}, r"unknown key\(s\) 'pakage'"),
    ({"opset": "opset8"}, "standard opset name"),
    ({"devices": ["CPU", "NPU"]}, r"devices\[1\]: 'NPU'"),
    ({"extractor": "Magic"}, "extractor: 'Magic'"),
    ({"op": {"type": "SoftClip", "attributes": {"lo": {"type": "complex"}}}}, "unknown attribute type 'complex'"),
    ({"op": {"type": "SoftClip", "attributes": {"lo": {"type": "float", "default": "low"}}}},
     r"op.attributes.lo.default: default 'low' is not a valid float"),
    ({"op": {"type": "SoftClip", "attributes": {"class": "float"}}}, "keyword"),
    ({"frameworks": {"paddle": {"type": "soft_clip", "inputs": ["X", "Y"]}}}, "2 named input"),
    ({"frameworks": {"onnx": {"type": "S", "attributes": {"low": "lo"}}}}, "'low' is not an attribute of the op"),
])
def test_bad_configs_name_the_key(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ExtgenConfigError, match=message):
        parse_config(_cfg(**change))


def test_interactive_answers_on_stdin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    answers = "\n".join([
        "SoftClip", "acme", "",          # op, opset, distribution (default opforge-acme-softclip)
        "x", "y",                        # ports
        "lo", "double", "oops", "-1.0",  # 'double' is float; 'oops' is asked again
        "hi", "float", "1.0", "",        # end of attributes
        "n",                             # does not change shape
        "y", "com.acme", "SoftClip",     # ONNX
        "y", "soft_clip", "X", "Out",    # Paddle
        "OpExtension", "CPU,GPU,VPU", "c++",
    ]) + "\n"
    monkeypatch.setattr(sys, "stdin", io.StringIO(answers))
    assert main(["extgen", "new", "--output-dir", str(tmp_path)]) == 0
    saved = json.loads((tmp_path / "opforge-acme-softclip" / "extgen.json").read_text())
    assert saved == parse_config(SOFTCLIP).as_json()


def test_interactive_input_that_ends_early_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("SoftClip\nacme\n"))
    assert main(["extgen", "new", "--output-dir", str(tmp_path)]) == 2
    assert "input ended before the question 'Distribution name" in capsys.readouterr().err


def _load_generated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cfg: dict[str, Any]) -> tuple[Path, str]:
    """Generate ``cfg`` and make its package importable here and in opcheck's child processes."""
    root = write_package(parse_config(cfg), tmp_path)
    src = str(root / "src")
    monkeypatch.syspath_prepend(src)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]))
    return root, parse_config(cfg).module


@pytest.mark.parametrize("style", ["OpExtension", "ConversionExtension", "FrontExtractorOp"])
def test_every_extractor_style_converts_onnx_with_renamed_attributes(
        style: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    cfg = _cfg(package=f"opforge-acme-{style.lower()}", extractor=style, devices=["CPU"], cpu_kernel="python")
    cfg["op"]["type"] = f"Clip{style}"  # one op per package: the modules stay apart in sys.modules
    cfg["frameworks"] = {"onnx": {"domain": "com.acme.test", "type": style, "attributes": {"lo": "low"}}}
    _, module = _load_generated(tmp_path, monkeypatch, cfg)
    core = opforge.Core()
    core.add_extension(f"{module}.plugin")
    node = helper.make_node(style, ["x"], ["y"], domain="com.acme.test", low=-0.25, hi=2.0)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model_path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                      helper.make_opsetid("com.acme.test", 1)]), model_path)
    model = core.read_model(model_path)
    custom = next(n for n in model.get_ordered_ops() if n.version == "acme")
    assert (custom.attrs.lo, custom.attrs.hi) == (-0.25, 2.0)
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    if "CPU" in core.available_devices:
        np.testing.assert_array_equal(core.compile_model(model, "CPU")([x])["y"], x)


def test_conversion_extension_style_maps_paddle_named_ports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ConversionExtension style's Paddle converter (inputs and outputs by port name, an
    attribute renamed), on a Paddle program built by the generated tests' own helper."""
    paddle = pytest.importorskip("paddle")
    pytest.importorskip("opforge_paddle")
    import importlib.util

    cfg = _cfg(package="opforge-acme-pconv", extractor="ConversionExtension", devices=["CPU"], cpu_kernel="python")
    cfg["op"]["type"] = "PaddleClip"
    cfg["frameworks"] = {"paddle": {"type": "paddle_clip", "inputs": ["Input"], "outputs": ["Output"],
                                    "attributes": {"hi": "upper"}}}
    root, module = _load_generated(tmp_path, monkeypatch, cfg)
    spec = importlib.util.spec_from_file_location("generated_tests", root / "tests/test_paddle_clip.py")
    assert spec is not None and spec.loader is not None
    generated = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generated)
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    path = generated._paddle_program(paddle, tmp_path / "m", x)
    core = opforge.Core()
    core.add_extension(f"{module}.plugin")
    model = core.read_model(path)
    custom = next(n for n in model.get_ordered_ops() if n.version == "acme")
    assert (custom.attrs.lo, custom.attrs.hi) == (-0.5, 1.5)  # the non-default values, 'hi' read as 'upper'
    if "CPU" in core.available_devices:
        np.testing.assert_array_equal(core.compile_model(model, "CPU")([x])[0], x)


def test_generated_python_cpu_and_opencl_kernels_pass_opcheck(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A two-input, two-output op with every attribute type: the generated NumPy CPU kernel and
    OpenCL GPU kernel agree with the reference on every available device (opcheck), before any edit."""
    from opforge.testing.opcheck import check_op

    cfg = {
        "package": "opforge-acme-pair", "opset": "acme_pair",
        "op": {"type": "PairCopy", "inputs": ["a", "b"], "outputs": ["p", "q"], "attributes": {
            "gain": {"type": "float", "default": 0.5}, "steps": {"type": "int", "default": 2},
            "flip": {"type": "bool", "default": False}, "mode": {"type": "string", "default": "fast"},
            "weights": {"type": "float[]", "default": [1.0, 2.0]}, "axes": {"type": "int[]", "default": []}}},
        "devices": ["CPU", "GPU"], "cpu_kernel": "python",
    }
    _, module = _load_generated(tmp_path, monkeypatch, cfg)
    report = check_op("acme_pair::PairCopy", extensions=[f"{module}.plugin"])
    assert report.counts().get("passed", 0) >= 20
    ir = next(r for r in report.results if r.device == "IR")
    assert "'mode': 'fast_2'" in ir.message and "'axes': [1, 2]" in ir.message  # non-default values travelled


def _fresh_venv(tmp_path: Path) -> Path:
    """A new venv that has opforge: this environment's site-packages (opforge, its device plugins,
    numpy, pytest) seen through a .pth file; what pip installs goes into the new venv only."""
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    site_dirs = [p for p in sys.path if p.endswith("site-packages")]
    new_site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              capture_output=True, text=True, check=True).stdout.strip()
    Path(new_site, "opforge_base_env.pth").write_text(
        "".join(f"import site; site.addsitedir({d!r})\n" for d in site_dirs))
    return py


@pytest.mark.slow
@pytest.mark.parametrize("package", ["generated", "template-extension"])
def test_one_install_command_in_a_fresh_venv_then_the_package_tests_pass(package: str, tmp_path: Path) -> None:
    """The issue's target: extgen with the issue's config (or the template extension) -> the
    README's one install command, build isolation on, into a fresh venv -> the package's own
    tests pass there (for SoftClip: opcheck and a model on every available device, equal
    results). Minutes on 2 cores: the isolated build environment and the C++ compile."""
    import shutil

    from opforge.extgen import INSTALL_COMMAND

    if package == "generated":
        root = write_package(parse_config(SOFTCLIP), tmp_path / "gen")
    else:
        root = tmp_path / "template-extension"
        shutil.copytree(REPO / "plugins/template-extension", root, ignore=shutil.ignore_patterns("build", "*.so"))
    readme = (root / "README.md").read_text()
    assert f"\n{INSTALL_COMMAND}\n" in readme
    py = _fresh_venv(tmp_path)
    cmd = INSTALL_COMMAND.replace("pip", f"{py} -m pip", 1).split()
    install = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=1200, check=False)
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    tests = subprocess.run([str(py), "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
                            "-x", "tests"], cwd=root, capture_output=True, text=True, timeout=1200, check=False)
    assert tests.returncode == 0, tests.stdout[-5000:] + tests.stderr[-2000:]


@pytest.mark.slow
def test_opcheck_fails_naming_cpu_on_an_installed_plugin_whose_compiled_kernel_is_wrong(tmp_path: Path) -> None:
    """A generated C++ CPU kernel edited to add 1 (and its reference left as the copy), installed
    with the one command: opcheck exits 1 and every failure names CPU. Minutes on 2 cores."""
    from opforge.extgen import INSTALL_COMMAND

    cfg = _cfg(package="opforge-acme-wrongclip", devices=["CPU"])
    cfg["op"]["type"] = "WrongClip"
    cfg["frameworks"] = {}
    root = write_package(parse_config(cfg), tmp_path / "gen")
    cpp = root / "csrc/wrong_clip_kernel.cpp"
    text = cpp.read_text()
    assert "  return x;\n" in text
    cpp.write_text(text.replace("  return x;\n", "  return static_cast<T>(x + 1);  // deliberately wrong\n", 1))
    py = _fresh_venv(tmp_path)
    install = subprocess.run(INSTALL_COMMAND.replace("pip", f"{py} -m pip", 1).split(), cwd=root,
                             capture_output=True, text=True, timeout=1200, check=False)
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    check = subprocess.run([str(py), "-m", "opforge", "opcheck", "opforge-acme-wrongclip", "--json"],
                           capture_output=True, text=True, timeout=1200, check=False)
    assert check.returncode == 1, check.stdout[-3000:] + check.stderr[-3000:]
    report = json.loads(check.stdout)
    failed = [r for r in report["results"] if r["status"] in ("failed", "crashed")]
    assert {r["device"] for r in failed} == {"CPU"}
    assert sum(r["dtype"] == "f32" for r in failed) == 8 and all("differ from the reference" in r["message"]
                                                                  for r in failed if r["dtype"] == "f32")
