"""The main job's path on every device: the bundled sample (an ONNX model with a custom op from
the template extension) -> IR -> read back -> compile -> infer, checked against the reference."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import opforge
from opforge.reference import evaluate_model
from opforge.samples import SAMPLE_ONNX


def test_sample_model_with_custom_op_runs_on_every_device(device: str, tmp_path: Path) -> None:
    core = opforge.Core()
    model = core.read_model(SAMPLE_ONNX)
    assert any(n.version == "template_extension" for n in model.get_ordered_ops())
    xml = tmp_path / "sample.xml"
    opforge.save_model(model, xml)
    ir_model = core.read_model(xml)
    x = np.random.default_rng(1).standard_normal((1, 3, 32, 32)).astype(np.float32)
    want = evaluate_model(model, [x])[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # HETERO warns once that work falls back
        compiled = core.compile_model(ir_model, device)
    got = compiled({"image": x})["logits"]
    # a device that stores f32 tensors in f16 (the VPU) is held to f16 tolerances
    f16 = str(compiled.get_property("INFERENCE_PRECISION_HINT")).lower() == "f16"
    np.testing.assert_allclose(got, want, rtol=1e-2 if f16 else 1e-4, atol=1e-2 if f16 else 1e-5)


def test_demo_runs_end_to_end(tmp_path: Path, capsys: object) -> None:
    from opforge.demo import run_demo

    assert run_demo(tmp_path) == 0
    assert (tmp_path / "sample_custom_op.xml").exists() and (tmp_path / "sample_custom_op.bin").exists()
