"""Recurrent sequences (RNN, GRU, LSTM): forward, reverse and bidirectional, sequence lengths
shorter than the input, GRU with ``linear_before_reset``, and a clip."""

from __future__ import annotations

from typing import Any

from opforge.testing.cases import OpCase, case
from opforge.testing.models import Input, const, tensor

B, T, IN, H = 2, 4, 3, 5  # batch, time steps, input size, hidden size
_TOL: dict[str, Any] = {"rtol": 1e-4, "atol": 1e-5}
_W: dict[str, Any] = {"low": -0.6, "high": 0.6}


def _inputs(gates: int, dirs: int, lstm: bool, lengths: list[int], bias_gates: int | None = None) -> list[Input]:
    ins = [tensor(B, T, IN), tensor(B, dirs, H, low=-0.5, high=0.5)]
    if lstm:
        ins.append(tensor(B, dirs, H, low=-0.5, high=0.5))
    ins += [const(lengths, "i32"), tensor(dirs, gates * H, IN, **_W), tensor(dirs, gates * H, H, **_W),
            tensor(dirs, (bias_gates or gates) * H, **_W)]
    return ins


CASES: list[OpCase] = [
    case("RNNSequence", *_inputs(1, 1, False, [T, T]), hidden_size=H, label="f32_forward", **_TOL),
    case("RNNSequence", *_inputs(1, 2, False, [T, 2]), hidden_size=H, direction="bidirectional",
         label="f32_bidirectional_short", **_TOL),
    case("RNNSequence", *_inputs(1, 1, False, [3, T]), hidden_size=H, direction="reverse", activations=["relu"],
         clip=1.5, label="f32_reverse_relu_clip", **_TOL),
    case("GRUSequence", *_inputs(3, 1, False, [T, T]), hidden_size=H, label="f32_forward", **_TOL),
    case("GRUSequence", *_inputs(3, 1, False, [T, 1], bias_gates=4), hidden_size=H, linear_before_reset=True,
         direction="reverse", label="f32_reverse_linear_before_reset", **_TOL),
    case("GRUSequence", *_inputs(3, 2, False, [2, T]), hidden_size=H, direction="bidirectional",
         label="f32_bidirectional_short", **_TOL),
    case("LSTMSequence", *_inputs(4, 1, True, [T, T]), hidden_size=H, label="f32_forward", **_TOL),
    case("LSTMSequence", *_inputs(4, 2, True, [T, 3]), hidden_size=H, direction="bidirectional",
         label="f32_bidirectional_short", **_TOL),
    case("LSTMSequence", *_inputs(4, 1, True, [2, T]), hidden_size=H, direction="reverse", clip=0.8,
         label="f32_reverse_clip", **_TOL),
]

# activations other than the defaults together with a clip, in both directions
CASES += [
    case("GRUSequence", *_inputs(3, 2, False, [T, T]), hidden_size=H, direction="bidirectional",
         activations=["sigmoid", "relu"], clip=0.7, label="f32_bidirectional_sigmoid_relu_clip", **_TOL),
    case("LSTMSequence", *_inputs(4, 2, True, [T, T]), hidden_size=H, direction="bidirectional", clip=2.0,
         label="f32_bidirectional_clip", **_TOL),
]
