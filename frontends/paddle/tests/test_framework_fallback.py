"""CustomLayersMapping.xml framework fallback for Paddle: ops the frontend has no translator for
(``atan``, ``hard_shrink``) listed in the file run through paddle itself, on the reference
evaluator and on the CPU device, and survive an IR round trip."""

from __future__ import annotations

import builtins
from pathlib import Path
from typing import Any

import numpy as np
import opforge
import pytest
from opforge.errors import UnsupportedOpError
from opforge.frontend import FrameworkNode
from opforge.frontend.convert import convert_model
from paddle_test_utils import SEED, assert_close, legacy_model, run_opforge

X = np.random.default_rng(SEED).standard_normal((2, 6, 4)).astype(np.float32)


def _legacy(paddle: Any, tmp_path: Path) -> tuple[Path, list[np.ndarray], list[np.ndarray]]:
    """relu -> atan -> hard_shrink(0.3) -> scale: two ops opforge has no translator for."""

    def body(b: Any, d: dict[str, Any]) -> list[Any]:
        r = b.op("tanh", {"X": d["x"]})
        a = b.op("atan", {"X": r})
        h = b.op("hard_shrink", {"X": a}, {"threshold": 0.3})
        return [b.op("scale", {"X": h}, {"scale": 3.0, "bias": 0.5, "bias_after_scale": True})]

    return legacy_model(paddle, tmp_path / "fb", {"x": X}, body)


def _mapping(tmp_path: Path, has_param: str = "true") -> Path:
    path = tmp_path / "CustomLayersMapping.xml"
    path.write_text(f"""<CustomLayersMapping>
  <CustomLayer NativeType="atan" hasParam="false" protoParamName=""/>
  <CustomLayer NativeType="hard_shrink" hasParam="{has_param}" protoParamName="hard_shrink_param"/>
</CustomLayersMapping>
""", encoding="utf-8")
    return path


def test_without_the_mapping_one_error_names_both_ops(paddle: Any, tmp_path: Path) -> None:
    path, _, _ = _legacy(paddle, tmp_path)
    with pytest.raises(UnsupportedOpError, match=r"2 op type\(s\)") as info:
        convert_model(path)
    assert "atan: 1 node(s)" in str(info.value) and "hard_shrink: 1 node(s)" in str(info.value)
    assert '<CustomLayer NativeType="atan" hasParam="true"/>' in str(info.value)


def test_listed_ops_run_through_paddle_and_match_it(paddle: Any, tmp_path: Path) -> None:
    path, inputs, ref = _legacy(paddle, tmp_path)
    model = convert_model(path, extension=_mapping(tmp_path))
    fb = {n.attrs.op_type: n for n in model.get_ordered_ops() if n.op is FrameworkNode}
    assert sorted(fb) == ["atan", "hard_shrink"]
    assert all(str(n.output_specs[0].shape) == "[2,6,4]" for n in fb.values())
    assert fb["hard_shrink"].attrs.attributes["threshold"] == pytest.approx(0.3)
    assert "CPU" in opforge.Core().available_devices
    for device, got in run_opforge(model, inputs).items():
        assert_close(got, ref, f"fallback on {device}", 1e-6)
    assert paddle.in_dynamic_mode()  # running ops through paddle leaves its mode as it was


def test_has_param_false_runs_with_paddles_defaults(paddle: Any, tmp_path: Path) -> None:
    """hard_shrink without its attributes uses paddle's default threshold (0.5), not the model's 0.3."""
    path, inputs, ref = _legacy(paddle, tmp_path)
    model = convert_model(path, extension=_mapping(tmp_path, "false"))
    got = run_opforge(model, inputs, cpu=False)["reference"][0]
    a = np.arctan(np.tanh(X))
    expected = np.where(np.abs(a) > 0.5, a, 0.0) * 3.0 + 0.5
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    assert not np.allclose(got, ref[0], atol=1e-3)


def test_ir_round_trip_runs_through_paddle(paddle: Any, tmp_path: Path) -> None:
    path, inputs, ref = _legacy(paddle, tmp_path)
    model = convert_model(path, extension=_mapping(tmp_path))
    xml = tmp_path / "fb_ir.xml"
    opforge.save_model(model, xml)
    back = opforge.read_model(xml)
    assert sum(n.op is FrameworkNode for n in back.get_ordered_ops()) == 2
    assert_close([opforge.Core().compile_model(back, "CPU")(inputs)[0]], ref, "IR round trip on CPU", 1e-6)


def test_pir_models_are_refused_with_a_reason(paddle: Any, tmp_path: Path) -> None:
    from paddle_test_utils import rename_pir_op, save_both

    net = paddle.nn.Sequential(paddle.nn.ReLU())
    files = save_both(paddle, net, [paddle.static.InputSpec([2, 6, 4], "float32", "x")], tmp_path / "pir")
    rename_pir_op(files["pir"], "1.relu", "3.my_relu")
    mapping = tmp_path / "m.xml"
    mapping.write_text('<CustomLayersMapping><CustomLayer NativeType="my_relu"/></CustomLayersMapping>')
    with pytest.raises(UnsupportedOpError, match=r"legacy \.pdmodel.*OldIrGuard"):
        convert_model(files["pir"], extension=mapping)


def test_without_paddle_the_error_names_the_extra(paddle: Any, tmp_path: Path, monkeypatch: Any) -> None:
    path, inputs, _ = _legacy(paddle, tmp_path)
    model = convert_model(path, extension=_mapping(tmp_path))
    from opforge_paddle import fallback

    real_import = builtins.__import__

    def no_paddle(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "paddle" or name.startswith("paddle."):
            raise ImportError("No module named 'paddle'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_paddle)
    runtime = fallback.PaddleFallbackRuntime()  # a fresh one: nothing cached
    monkeypatch.setattr("opforge_paddle.frontend._runtime", lambda: runtime)
    with pytest.raises(UnsupportedOpError, match=r"pip install 'opforge-paddle\[fallback\]'"):
        run_opforge(model, inputs, cpu=False)
    with pytest.raises(UnsupportedOpError, match=r"pip install 'opforge-paddle\[fallback\]'"):
        convert_model(path, extension=_mapping(tmp_path))
