"""``opforge query``: a command of the HETERO plugin (``opforge_register_commands``), not of the
core; the same options and report as ``opforge_hetero.cli.query_command``."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import opforge
import pytest
from opforge.cli import build_parser, main
from opforge.plugins import default_plugins

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


def test_query_is_a_command_of_the_hetero_plugin() -> None:
    reg = default_plugins().commands.registration("query")
    assert reg is not None and reg.plugin.name == "hetero"
    args = build_parser().parse_args(["query", "m.onnx", "-d", "HETERO:GPU,CPU", "--dump", "p.svg", "--all",
                                      "--extension", "e.py"])
    assert (args.model, args.device, args.dump, args.all, args.extension) == (
        "m.onnx", "HETERO:GPU,CPU", "p.svg", True, ["e.py"])


def test_a_missing_model_is_an_error_not_a_traceback() -> None:
    bad = subprocess.run([sys.executable, "-m", "opforge", "query", "missing.onnx", "-d", "CPU"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "missing.onnx" in bad.stderr and "Traceback" not in bad.stderr


def test_query_loads_extensions_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("opforge_cpu", reason="the report is asked of the CPU device")
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
