"""LSTMSequence-5: a long short-term memory layer over a whole sequence, in one or both directions
(no peepholes: those were LSTMSequence-1's).

Gate blocks of ``W`` [num_directions, 4 * hidden_size, input_size], ``R`` and ``B`` are in
OpenVINO's order f (forget), i (input), c (cell), o (output)::

    i = f(X W_i^T + H R_i^T + B_i)    fg = f(X W_f^T + H R_f^T + B_f)
    c~ = g(X W_c^T + H R_c^T + B_c)   o = f(X W_o^T + H R_o^T + B_o)
    C' = fg * C + i * c~              H' = o * h(C')

``activations`` are (f, g, h); ``clip`` bounds the pre-activations. Outputs ``Y``
[batch, num_directions, seq_len, hidden_size], ``Ho`` and ``Co`` [batch, num_directions, hidden_size].
"""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.opset._rnn import RecurrentSequence, SequenceAttrs, activation, clipped, gate_blocks


class LSTMSequence(RecurrentSequence):
    type_name = "LSTMSequence"
    version = "opset5"
    Attrs = SequenceAttrs
    min_inputs = 7
    max_inputs = 7
    gates = 4
    states = 2
    n_activations = 3

    @classmethod
    def cell(cls, attrs: Any, x: np.ndarray, states: list[np.ndarray], w: np.ndarray, r: np.ndarray,
             b: np.ndarray) -> list[np.ndarray]:
        h, c = states
        f, g, hact = activation(attrs, 0), activation(attrs, 1), activation(attrs, 2)
        gates = clipped(attrs, x @ w.T + h @ r.T + b)
        gf, gi, gc, go = gate_blocks(gates, 4)
        c_new = f(gf) * c + f(gi) * g(gc)
        h_new = f(go) * hact(c_new)
        return [h_new, c_new]
