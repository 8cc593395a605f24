"""RNNSequence, GRUSequence and LSTMSequence: one work-group walks a whole sequence
(``kernels/recurrent.cl``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from opforge.graph import Node

from opforge_gpu.library import kernel
from opforge_gpu.library._support import float_input
from opforge_gpu.storage import float_bits, supported_type

if TYPE_CHECKING:
    from opforge_gpu.lowering import Epilogue, Lowering

FILE = "recurrent.cl"
WG = 128


#: (cell id, gates, states) per op
_CELLS = {"RNNSequence": (0, 1, 1), "GRUSequence": (1, 3, 1), "LSTMSequence": (2, 4, 2)}
_ACT = {"sigmoid": "(1.0f / (1.0f + exp(-(x))))", "tanh": "tanh(x)", "relu": "((x) < 0.0f ? 0.0f : (x))"}
#: the states of a work-group live in local memory (six arrays of hidden_size floats)
MAX_HIDDEN = 1024


def _rnn_supports(node: Node) -> str | None:
    bad = float_input(node)
    if bad:
        return bad
    s = _CELLS[node.type_name][2]
    if not supported_type(node.inputs[1 + s].element_type):
        return f"sequence lengths of {node.inputs[1 + s].element_type} are not supported on GPU"
    if int(node.attrs.hidden_size) > MAX_HIDDEN:  # type: ignore[attr-defined]
        return f"hidden_size over {MAX_HIDDEN} has no GPU kernel"
    return None


@kernel(*_CELLS, supports=_rnn_supports)
def lower_rnn_sequence(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    a: Any = node.attrs
    cell, gates, s = _CELLS[node.type_name]
    x = lw.input(node, 0)
    h0 = lw.input(node, 1)
    c0 = lw.input(node, 2) if s == 2 else lw.dummy()
    lens, w, r, b = (lw.input(node, i) for i in range(1 + s, 5 + s))
    outs = [lw.new_output(node, i) for i in range(1 + s)]
    batch, seq, inp = x.shape
    hs = int(a.hidden_size)
    nd = 2 if a.direction == "bidirectional" else 1
    acts = [_ACT[n] for n in a.activations]
    defines: dict[str, Any] = {"RNN_SEQ": 1, "CELL": cell, "HS": hs, "GATES": gates, "NBIAS": b.shape[1] // hs,
                               "WG": 64, "L_T": lens.storage.ctype}
    for name, expr in zip(("ACT_F(x)", "ACT_G(x)", "ACT_H(x)"), acts):
        defines[name] = expr
    defines.update(x.storage.macros("X"))
    defines.update(outs[0].storage.macros("Y"))
    direction = {"forward": 0, "reverse": 1, "bidirectional": 2}[a.direction]
    prm = lw.params([seq, inp, nd, direction, float_bits(float(a.clip)),
                     int(bool(getattr(a, "linear_before_reset", False)))])
    co = outs[2] if s == 2 else lw.dummy()
    lw.launch(FILE, "rnn_seq", defines, [x, h0, c0, lens, w, r, b, outs[0], outs[1], co, prm],
              [batch * nd * 64], [64], node=node)
