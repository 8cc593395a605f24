"""``opforge --version``, ``python -m opforge``, ``opforge query --extension`` and a closed pipe."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import opforge
import pytest
from opforge.cli import main
from opforge.versions import installed_plugins

EXTENSION = textwrap.dedent('''
    from typing import Any
    import numpy as np
    from opforge import InferContext, Op, OpAttrs, TensorSpec, hookimpl

    class TwiceAttrs(OpAttrs):
        factor: float = 2.0

    class Twice(Op):
        type_name = "Twice"
        version = "cli_test_ext"
        Attrs = TwiceAttrs

        @classmethod
        def infer(cls, ctx: InferContext) -> list[TensorSpec]:
            return [TensorSpec(ctx.input_type(0), ctx.input_shape(0))]

        @classmethod
        def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
            return [inputs[0] * np.float32(attrs.factor)]

    @hookimpl
    def opforge_register_ops(register):
        register(Twice)
''')


def test_version_lists_opforge_and_every_installed_plugin(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"opforge {opforge.__version__}"
    for dist, version, _ep in installed_plugins():
        assert any(line.strip().startswith(f"{dist} {version}") for line in lines[1:]), (dist, lines)


def test_python_dash_m_opforge_is_the_command() -> None:
    proc = subprocess.run([sys.executable, "-m", "opforge", "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.startswith(f"opforge {opforge.__version__}\n"), proc.stderr
    bad = subprocess.run([sys.executable, "-m", "opforge", "query", "missing.onnx", "-d", "CPU"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "missing.onnx" in bad.stderr and "Traceback" not in bad.stderr


def test_a_closed_pipe_ends_quietly() -> None:
    # the reader is gone before opforge writes a byte: what `opforge plugins --all | head -0` does
    proc = subprocess.Popen([sys.executable, "-m", "opforge", "plugins", "--all", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141
    assert err == ""


def test_query_loads_extensions_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ext = tmp_path / "twice_ext.py"
    ext.write_text(EXTENSION)
    # an IR with the extension's op, written while the extension is loaded
    core = opforge.Core()
    core.add_extension(str(ext))
    x = opforge.op("Parameter", element_type="f32", shape=[2], name="x")
    twice = opforge.Node.create("Twice", [x], {"factor": 3.0}, "twice", version="cli_test_ext",
                                registry=core.plugins.ops)
    model = opforge.Model([opforge.op("Relu", twice, name="relu")], [x])
    xml = tmp_path / "twice.xml"
    opforge.save_model(model, xml)
    assert main(["query", str(xml), "-d", "CPU"]) == 2
    assert "Twice" in capsys.readouterr().err
    status = main(["query", str(xml), "-d", "CPU", "--extension", str(ext)])
    out = capsys.readouterr().out
    assert status in (0, 1) and "twice" in out and "relu" in out
