"""Helpers for the Paddle frontend tests: models are generated with paddle (a test-only
dependency) in both formats, and opforge's conversion is compared with paddle's own output."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("GLOG_minloglevel", "2")  # paddle's C++ INFO/WARNING lines

SEED = 0


def calibrate_bn(paddle: Any, net: Any, shape: Sequence[int]) -> None:
    """Data-free BatchNorm calibration as ../shared/bench/make_models.py does: running stats :=
    batch stats of 8 seeded N(0,1) images (momentum 0), so outputs are O(1) and comparable."""
    bns = [m for m in net.sublayers() if isinstance(m, paddle.nn.layer.norm._BatchNormBase)]
    if bns:
        saved = [m._momentum for m in bns]
        for m in bns:
            m._momentum = 0.0
        net.train()
        calib = np.random.default_rng(SEED + 1).standard_normal((8, *shape[1:])).astype(np.float32)
        with paddle.no_grad():
            net(paddle.to_tensor(calib))
        for m, mom in zip(bns, saved):
            m._momentum = mom
    net.eval()


def save_both(paddle: Any, net: Any, specs: list[Any], prefix: Path) -> dict[str, Path]:
    """``paddle.jit.save`` in both formats paddle 3.x writes: PIR .json and legacy .pdmodel."""
    pir_prefix = prefix.with_name(prefix.name + "_pir")
    legacy_prefix = prefix.with_name(prefix.name + "_legacy")
    paddle.jit.save(net, str(pir_prefix), input_spec=specs)
    with paddle.pir_utils.OldIrGuard():
        paddle.jit.save(net, str(legacy_prefix), input_spec=specs)
    return {"pir": pir_prefix.with_suffix(".json"), "legacy": legacy_prefix.with_suffix(".pdmodel")}


def as_list(out: Any) -> list[np.ndarray]:
    if isinstance(out, (list, tuple)):
        return [np.asarray(o.numpy() if hasattr(o, "numpy") else o) for o in out]
    return [np.asarray(out.numpy() if hasattr(out, "numpy") else out)]


def assert_close(got: Sequence[np.ndarray], ref: Sequence[np.ndarray], what: str, rel: float = 1e-4) -> None:
    """Within ``rel`` of the output's magnitude: max|got - ref| <= rel * max(|ref|, 1e-3)."""
    assert len(got) == len(ref), f"{what}: {len(got)} outputs, paddle gives {len(ref)}"
    for i, (g, r) in enumerate(zip(got, ref)):
        assert g.shape == r.shape, f"{what} output {i}: shape {g.shape}, paddle {r.shape}"
        scale = max(float(np.abs(r).max()) if r.size else 0.0, 1e-3)
        err = float(np.abs(g.astype(np.float64) - r.astype(np.float64)).max()) if r.size else 0.0
        assert err <= rel * scale, f"{what} output {i}: max |diff| {err:.3g} > {rel} x max |ref| {scale:.3g}"


def run_opforge(model: Any, inputs: list[np.ndarray], cpu: bool = True) -> dict[str, list[np.ndarray]]:
    """Outputs by the NumPy reference, and by the CPU device when one is installed (and ``cpu``)."""
    import opforge
    from opforge.reference import evaluate_model

    outs = {"reference": evaluate_model(model, inputs)}
    core = opforge.Core()
    if cpu and "CPU" in core.available_devices:
        compiled = core.compile_model(model, "CPU")
        res = compiled(inputs)
        outs["CPU"] = [np.asarray(res[i]) for i in range(len(model.outputs))]
    return outs


def check_model(path: Path, inputs: list[np.ndarray], ref: list[np.ndarray], rel: float = 1e-4,
                cpu: bool = True, **convert_kw: Any) -> Any:
    """Convert and compare with paddle's outputs on the reference and (``cpu``) the CPU device.
    ``cpu=False`` is for op tests whose ops the CPU device has no kernels for; say which."""
    from opforge.frontend.convert import convert_model

    model = convert_model(path, **convert_kw)
    for device, got in run_opforge(model, inputs, cpu).items():
        assert_close(got, ref, f"{path.name} on {device}", rel)
    return model


class LegacyBuilder:
    """Builds a legacy ProgramDesc op by op (``LayerHelper.append_op``), the way Paddle's own
    legacy layers do. paddle 3.3.1 cannot trace many functional APIs (``paddle.matmul``, ``bmm``)
    into the legacy IR any more, so legacy-op tests write the ops they test directly."""

    def __init__(self, paddle: Any) -> None:
        self.paddle = paddle
        self.rng = np.random.default_rng(SEED)

    def param(self, name: str, value: np.ndarray) -> Any:
        init = self.paddle.nn.initializer.Assign(value)
        return self.paddle.static.create_parameter(list(value.shape), str(value.dtype), name=name,
                                                   default_initializer=init)

    def op(self, op_type: str, inputs: dict[str, Any], attrs: dict[str, Any] | None = None,
           outputs: Sequence[str] = ("Out",), dtype: str = "float32", n_out: dict[str, int] | None = None) -> Any:
        from paddle.base.layer_helper import LayerHelper

        helper = LayerHelper(op_type)
        outs = {k: [helper.create_variable_for_type_inference(dtype) for _ in range((n_out or {}).get(k, 1))]
                for k in outputs}
        ins = {k: (v if isinstance(v, list) else [v]) for k, v in inputs.items()}
        helper.append_op(type=op_type, inputs=ins, outputs=outs, attrs=attrs or {})
        first = outs[outputs[0]]
        return first[0] if len(first) == 1 else first


def legacy_model(paddle: Any, path: Path, feeds: dict[str, np.ndarray],
                 body: Callable[[LegacyBuilder, dict[str, Any]], list[Any]]) -> tuple[Path, list[np.ndarray], list[np.ndarray]]:
    """Save a legacy inference program built by ``body`` and return (model path, inputs, paddle's outputs)."""
    with paddle.pir_utils.OldIrGuard():
        paddle.enable_static()
        try:
            main, startup = paddle.static.Program(), paddle.static.Program()
            with paddle.static.program_guard(main, startup):
                data = {n: paddle.static.data(n, list(a.shape), str(a.dtype)) for n, a in feeds.items()}
                fetch = body(LegacyBuilder(paddle), data)
            exe = paddle.static.Executor(paddle.CPUPlace())
            exe.run(startup)
            ref = exe.run(main, feed=feeds, fetch_list=fetch)
            paddle.static.save_inference_model(str(path), list(data.values()), fetch, exe, program=main)
        finally:
            paddle.disable_static()
    return path.with_suffix(".pdmodel"), list(feeds.values()), [np.asarray(r) for r in ref]


def rename_legacy_op(path: Path, old: str, new: str) -> Path:
    """Give every ``old`` op of a .pdmodel the type ``new`` (a custom-named op), in place."""
    from opforge_paddle.protoschema import schema

    prog = schema().ProgramDesc()
    prog.ParseFromString(path.read_bytes())
    for op in prog.blocks[0].ops:
        if op.type == old:
            op.type = new
    path.write_bytes(prog.SerializeToString())
    return path


def rename_pir_op(path: Path, old: str, new: str) -> Path:
    """Rename PIR op ``old`` (``"1.relu"``) to ``new`` (``"3.my_relu"``: a custom_op dialect op)."""
    import json

    doc = json.loads(path.read_text())
    for op in doc["program"]["regions"][0]["blocks"][0]["ops"]:
        if op["#"] == old:
            op["#"] = new
    path.write_text(json.dumps(doc))
    return path
