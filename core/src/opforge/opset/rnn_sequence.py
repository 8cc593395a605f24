"""RNNSequence-5: a simple recurrent layer over a whole sequence,
``H_t = f(clip(X_t W^T + H_{t-1} R^T + B))``, in one or both directions.

Inputs: ``X`` [batch, seq_len, input_size], ``initial_hidden_state`` [batch, num_directions,
hidden_size], ``sequence_lengths`` [batch], ``W`` [num_directions, hidden_size, input_size],
``R`` [num_directions, hidden_size, hidden_size], ``B`` [num_directions, hidden_size]. Outputs:
``Y`` [batch, num_directions, seq_len, hidden_size] and ``Ho`` [batch, num_directions, hidden_size].
"""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.opset._rnn import RecurrentSequence, SequenceAttrs, activation, clipped


class RNNSequenceAttrs(SequenceAttrs):
    activations: list[str] = ["tanh"]


class RNNSequence(RecurrentSequence):
    type_name = "RNNSequence"
    version = "opset5"
    Attrs = RNNSequenceAttrs
    min_inputs = 6
    max_inputs = 6
    gates = 1
    states = 1
    n_activations = 1

    @classmethod
    def cell(cls, attrs: Any, x: np.ndarray, states: list[np.ndarray], w: np.ndarray, r: np.ndarray,
             b: np.ndarray) -> list[np.ndarray]:
        (h,) = states
        return [activation(attrs, 0)(clipped(attrs, x @ w.T + h @ r.T + b))]
