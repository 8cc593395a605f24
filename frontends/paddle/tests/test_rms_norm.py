"""Paddle's RMS norm (``paddle.incubate.nn.functional.fused_rms_norm``, saved as the op
``fused_rms_norm_quant``) in both formats, vs paddle's own outputs: on the reference, the CPU
device and every GPU device installed here. ``paddle.nn.functional.rms_norm`` has no CPU kernel
in paddle 3.3.1 (it cannot even be traced on a CPU-only host), so fused_rms_norm is the RMS
norm a CPU-built paddle model holds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import opforge
import pytest
from opforge.errors import ConversionError
from opforge.frontend.convert import convert_model
from paddle_test_utils import SEED, assert_close, check_model

RNG = np.random.default_rng(SEED)


def _layer(paddle: Any, weights: dict[str, np.ndarray]) -> Any:
    """A layer holding ``weights`` as parameters (paddle traces ``forward``'s named arguments, so
    each test subclasses it with its own)."""

    class Weights(paddle.nn.Layer):
        def __init__(self) -> None:
            super().__init__()
            for name, value in weights.items():
                init = paddle.nn.initializer.Assign(value)
                setattr(self, name, self.create_parameter(list(value.shape), default_initializer=init))

    return Weights


def _gpu_devices() -> list[str]:
    return [d for d in opforge.Core().available_devices if d.startswith("GPU")]


def _check(paths: dict[str, Path], inputs: list[np.ndarray], ref: list[np.ndarray]) -> None:
    for fmt, path in paths.items():
        model = check_model(path, inputs, ref, rel=1e-5)
        types = [n.type_name for n in model.get_ordered_ops()]
        assert types.count("RMSNormalization") == 1, f"{fmt}: {types}"
        core = opforge.Core()
        for device in _gpu_devices():
            res = core.compile_model(model, device)(inputs)
            assert_close([np.asarray(res[i]) for i in range(len(ref))], ref, f"{path.name} on {device}", 1e-5)


def test_rms_norm_last_axis(paddle: Any, build: Any) -> None:
    from paddle.incubate.nn.functional import fused_rms_norm

    class Net(_layer(paddle, {"w": RNG.standard_normal(16).astype(np.float32)})):  # type: ignore[misc]
        def forward(self, x: Any) -> Any:
            return fused_rms_norm(x, self.w, None, 1e-6, 2)[0]

    net = Net()
    x = RNG.standard_normal((2, 5, 16)).astype(np.float32)
    _check(*build(net, {"x": ([2, 5, 16], "float32")}, [x]))


def test_rms_norm_two_axes_with_residual_and_biases(paddle: Any, build: Any) -> None:
    """begin_norm_axis 1 (weights flattened over [3, 8]), a residual with its bias added first
    (returned as residual_out) and a norm bias."""
    from paddle.incubate.nn.functional import fused_rms_norm

    weights = {name: RNG.standard_normal(24).astype(np.float32) for name in ("w", "nb", "b")}

    class Net(_layer(paddle, weights)):  # type: ignore[misc]
        def forward(self, x: Any, res: Any) -> Any:
            out, residual_out = fused_rms_norm(x, self.w, self.nb, 1e-5, 1, bias=self.b, residual=res)[:2]
            return out, residual_out

    net = Net()
    x, res = (RNG.standard_normal((4, 3, 8)).astype(np.float32) for _ in range(2))
    _check(*build(net, {"x": ([4, 3, 8], "float32"), "res": ([4, 3, 8], "float32")}, [x, res]))


def test_bias_without_residual_is_refused(paddle: Any, build: Any) -> None:
    from paddle.incubate.nn.functional import fused_rms_norm

    class Net(_layer(paddle, {"w": np.ones(8, np.float32), "b": np.ones(8, np.float32)})):  # type: ignore[misc]
        def forward(self, x: Any) -> Any:
            return fused_rms_norm(x, self.w, None, 1e-5, 1, bias=self.b)[0]

    net = Net()
    paths, _, _ = build(net, {"x": ([2, 8], "float32")}, [np.ones((2, 8), np.float32)])
    for path in paths.values():
        with pytest.raises(ConversionError, match=r"fused_rms_norm_quant.*'bias' is given without 'residual'"):
            convert_model(path)
