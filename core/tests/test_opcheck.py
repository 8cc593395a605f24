"""``opforge opcheck``: a deliberately wrong CPU kernel fails naming the device, a crashing kernel is
reported with its device, type and shape while the other cases go on, a kernel that is not the
plugin's is caught, and bad targets are clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from opforge.cli import main
from opforge.errors import OpcheckError
from opforge.testing.opcheck import run_opcheck

PLUGIN = '''
import os
import signal

import numpy as np
from opforge import InferContext, Op, OpAttrs, TensorSpec
from opforge.hookspecs import hookimpl


class CopyAttrs(OpAttrs):
    gain: float = 1.0


class {name}(Op):
    type_name = "{name}"
    version = "opcheck_test"
    Attrs = CopyAttrs

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        return [TensorSpec(ctx.input_type(0), ctx.input_shape(0))]

    @classmethod
    def evaluate(cls, attrs, inputs):
        return [inputs[0].copy()]


def kernel(attrs, inputs):
    x = inputs[0]
{body}


@hookimpl
def opforge_register_ops(register):
    register({name})


@hookimpl
def opforge_register_kernels(register):
    register("CPU", {name}, kernel)
'''


def _plugin(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / f"{name.lower()}_plugin.py"
    path.write_text(PLUGIN.format(name=name, body=body))
    return str(path)


@pytest.fixture(autouse=True)
def _needs_cpu() -> None:
    import opforge

    if "CPU" not in opforge.Core().available_devices:
        pytest.skip("no CPU device here")


def test_wrong_cpu_kernel_fails_naming_the_device(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ext = _plugin(tmp_path, "WrongCopy", "    return [(x + 1).astype(x.dtype)]  # deliberately wrong")
    report = run_opcheck("opcheck_test::WrongCopy", ["CPU"], extensions=[ext])
    assert not report.ok
    f32 = [r for r in report.failures if r.dtype == "f32"]
    assert len(f32) == 8  # ranks 0-6 and the dynamic model
    assert all(r.device == "CPU" and "differ from the reference" in r.message for r in f32)
    assert "WrongCopy on CPU, f32 [2,3,5]" in report.summary()
    assert main(["opcheck", "--extension", ext, "-d", "CPU", "--json", "opcheck_test::WrongCopy"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] is False and out["counts"]["failed"] >= 8
    assert {r["device"] for r in out["results"] if r["status"] == "failed"} == {"CPU"}


def test_crashing_kernel_is_reported_and_the_rest_goes_on(tmp_path: Path) -> None:
    body = ("    if x.ndim == 5:\n"
            "        os.kill(os.getpid(), signal.SIGSEGV)  # a kernel writing out of bounds\n"
            "    return [x.copy()]")
    ext = _plugin(tmp_path, "CrashCopy", body)
    report = run_opcheck("opcheck_test::CrashCopy", ["CPU"], extensions=[ext])
    crashed = [r for r in report.results if r.status == "crashed"]
    assert [(r.device, r.dtype, r.shape) for r in crashed] == [("CPU", "f32", "[2,3,2,3,5]"),
                                                               ("CPU", "f16", "[2,3,2,3,5]")]
    assert "SIGSEGV" in crashed[0].message and "crashcopy_plugin.py\", line" in crashed[0].message
    # the cases after each crash ran in a fresh process: rank 6 and the dynamic model passed
    passed = {(r.dtype, r.shape) for r in report.results if r.status == "passed"}
    assert ("f32", "[2,1,3,2,3,5]") in passed and ("f16", "[2,1,3,2,3,5]") in passed


def test_correct_python_kernel_passes_and_proves_it_ran(tmp_path: Path) -> None:
    ext = _plugin(tmp_path, "GoodCopy", "    return [x.copy()]")
    report = run_opcheck("opcheck_test::GoodCopy", ["CPU"], extensions=[ext])
    assert report.ok, report.summary()
    cpu = [r for r in report.results if r.device == "CPU" and r.status == "passed"]
    assert cpu and all(r.exec_type == "python" for r in cpu)
    assert {r.dtype for r in cpu} >= {"f32", "f16", "i32", "u8", "boolean"}


def test_bad_targets_are_clear_errors(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(OpcheckError, match="no installed plugin provides the op nowhere::Nothing"):
        run_opcheck("nowhere::Nothing")
    with pytest.raises(OpcheckError, match="neither an installed plugin, a distribution nor an op"):
        run_opcheck("opforge-no-such-plugin")
    with pytest.raises(OpcheckError, match="device NPU is not available here"):
        run_opcheck("template_extension", ["NPU"])
    assert main(["opcheck", "opforge-no-such-plugin"]) == 2
    assert "neither an installed plugin" in capsys.readouterr().err
