"""GRUSequence-5: a gated recurrent unit layer over a whole sequence, in one or both directions.

Gate blocks of ``W`` [num_directions, 3 * hidden_size, input_size] and ``R`` are in the order
z (update), r (reset), h (hidden)::

    z = f(X W_z^T + H R_z^T + B_z)        r = f(X W_r^T + H R_r^T + B_r)
    h~ = g(X W_h^T + (r * H) R_h^T + B_h)                      (linear_before_reset = false)
    h~ = g(X W_h^T + r * (H R_h^T + B_rh) + B_wh)               (linear_before_reset = true)
    H' = (1 - z) * h~ + z * H

``B`` is [num_directions, 3 * hidden_size], or [num_directions, 4 * hidden_size] with
``linear_before_reset`` (z, r, then the separate input and recurrent biases of h). ``clip``
bounds the pre-activations.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.opset._rnn import RecurrentSequence, SequenceAttrs, activation, clipped, gate_blocks


class GRUSequenceAttrs(SequenceAttrs):
    activations: list[str] = ["sigmoid", "tanh"]
    linear_before_reset: bool = False


class GRUSequence(RecurrentSequence):
    type_name = "GRUSequence"
    version = "opset5"
    Attrs = GRUSequenceAttrs
    min_inputs = 6
    max_inputs = 6
    gates = 3
    states = 1
    n_activations = 2

    @classmethod
    def bias_gates(cls, attrs: Any) -> int:
        return 4 if attrs.linear_before_reset else 3

    @classmethod
    def cell(cls, attrs: Any, x: np.ndarray, states: list[np.ndarray], w: np.ndarray, r: np.ndarray,
             b: np.ndarray) -> list[np.ndarray]:
        (h,) = states
        f, g = activation(attrs, 0), activation(attrs, 1)
        wz, wr, wh = gate_blocks(w.T, 3)
        rz, rr, rh = gate_blocks(r.T, 3)
        if attrs.linear_before_reset:
            bz, br, bwh, brh = gate_blocks(b, 4)
        else:
            bz, br, bwh = gate_blocks(b, 3)
            brh = np.zeros_like(bwh)
        z = f(clipped(attrs, x @ wz + h @ rz + bz))
        rg = f(clipped(attrs, x @ wr + h @ rr + br))
        if attrs.linear_before_reset:
            hh = g(clipped(attrs, x @ wh + rg * (h @ rh + brh) + bwh))
        else:
            hh = g(clipped(attrs, x @ wh + (rg * h) @ rh + bwh))
        return [(1 - z) * hh + z * h]
