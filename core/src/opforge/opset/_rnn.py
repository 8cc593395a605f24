"""Shared machinery of the recurrent sequence operations (RNNSequence, GRUSequence, LSTMSequence):
attribute model, shape inference and the time loop of the NumPy reference.

Layouts are OpenVINO's: ``X`` is ``[batch, seq_len, input_size]``, states are
``[batch, num_directions, hidden_size]``, weights ``[num_directions, gates * hidden_size, ...]``
and the output ``Y`` is ``[batch, num_directions, seq_len, hidden_size]``.

``sequence_lengths[b]`` limits the steps of batch element ``b``: later positions of ``Y`` are zero
and the final states are those after its last valid step (zero for an empty sequence, as on
OpenVINO's CPU device). The reverse direction walks each
sequence backwards from its own last valid step (as ``ReverseSequence`` would order it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import field_validator

from opforge.element_type import Type
from opforge.errors import KernelError
from opforge.op import InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._nn_util import cast_to, lower_enum, to_work
from opforge.shape import Dim, PartialShape

Direction = Literal["forward", "reverse", "bidirectional"]

#: ``rt_info`` keys of a recurrent sequence whose ``R`` (``W``) holds whole multiples of a scale per
#: row, made from integers (com.microsoft DynamicQuantizeLSTM, ONNX Runtime's ``quantize_dynamic``
#: of an LSTM): each value lists those scales, ``num_directions * gates * hidden_size`` floats in
#: the weights' row order (a space-separated string once read back from IR). The node's meaning is
#: still the f32 sequence on the dequantized weights; a device may instead multiply on the
#: integers with X and the hidden state quantized to u8 as they come, as ONNX Runtime runs that op
#: (the CPU does, core/rnn_gemv.hpp).
DYNAMIC_QUANTIZED_RECURRENCE = "dynamic_quantized_recurrence"
DYNAMIC_QUANTIZED_INPUT = "dynamic_quantized_input"

#: the activation functions OpenVINO's recurrent cells accept
ACTIVATIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "tanh": np.tanh,
    "relu": lambda x: np.maximum(x, 0),
}


def _activations(v: Any) -> Any:
    if isinstance(v, str):
        v = [p.strip() for p in v.split(",") if p.strip()]
    if isinstance(v, (list, tuple)):
        names = [str(x).lower() for x in v]
        bad = [n for n in names if n not in ACTIVATIONS]
        if bad:
            raise ValueError(f"unsupported activation(s) {bad}; supported: {', '.join(ACTIVATIONS)}")
        return names
    return v


class SequenceAttrs(OpAttrs):
    hidden_size: int
    direction: Direction = "forward"
    activations: list[str] = ["sigmoid", "tanh", "tanh"]
    activations_alpha: list[float] = []
    activations_beta: list[float] = []
    clip: float = 0.0

    _dir = field_validator("direction", mode="before")(lower_enum)
    _act = field_validator("activations", mode="before")(_activations)


def num_directions(direction: str) -> int:
    return 2 if direction == "bidirectional" else 1


class RecurrentSequence(Op):
    """Subclasses set ``gates`` (number of gate blocks in W/R), ``states`` (1 or 2: hidden, and
    cell state for LSTM), ``n_activations`` and implement ``cell``."""

    gates: ClassVar[int]
    states: ClassVar[int] = 1
    n_activations: ClassVar[int]

    @classmethod
    def bias_gates(cls, attrs: Any) -> int:
        return cls.gates

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: SequenceAttrs = ctx.attrs  # type: ignore[assignment]
        if a.hidden_size <= 0:
            raise ctx.error(f"hidden_size is {a.hidden_size}, expected a positive value")
        if len(a.activations) != cls.n_activations:
            raise ctx.error(
                f"activations has {len(a.activations)} entries, expected {cls.n_activations}"
            )
        if a.clip < 0:
            raise ctx.error(f"clip is {a.clip}, expected 0 (no clipping) or a positive bound")
        s = cls.states
        # inputs: X, states..., sequence_lengths, W, R, B
        i_len, i_w, i_r, i_b = 1 + s, 2 + s, 3 + s, 4 + s
        float_inputs = [0, *range(1, 1 + s), i_w, i_r, i_b]
        t = Type.dynamic
        for i in float_inputs:
            ti = ctx.input_type(i)
            if ti is Type.dynamic:
                continue
            if not ti.is_float:
                raise ctx.error(f"input {i} has element type {ti}, expected a floating-point type")
            if t is not Type.dynamic and ti != t:
                raise ctx.error(f"input {i} has element type {ti}, expected {t} (the type of the other inputs)")
            t = ti
        tl = ctx.input_type(i_len)
        if tl is not Type.dynamic and not tl.is_integral:
            raise ctx.error(f"input {i_len} (sequence_lengths) has element type {tl}, expected an integer type")
        nd = num_directions(a.direction)
        h = a.hidden_size
        x = ctx.input_shape(0)
        expect: dict[int, tuple[str, int]] = {0: ("X", 3), i_len: ("sequence_lengths", 1), i_w: ("W", 3),
                                              i_r: ("R", 3), i_b: ("B", 2)}
        for i in range(1, 1 + s):
            expect[i] = ("initial state", 3)
        for i, (name, r) in expect.items():
            ri = ctx.input_shape(i).rank
            if ri is not None and ri != r:
                raise ctx.error(f"input {i} ({name}) has shape {ctx.input_shape(i)}, expected rank {r}")
        batch: Dim = None
        seq: Dim = None
        inp: Dim = None
        if x.rank is not None:
            batch, seq, inp = x.dims
        checks: list[tuple[int, int, Dim, str]] = []
        for i in range(1, 1 + s):
            checks += [(i, 0, batch, "batch"), (i, 1, nd, "num_directions"), (i, 2, h, "hidden_size")]
        checks += [(i_len, 0, batch, "batch")]
        checks += [(i_w, 0, nd, "num_directions"), (i_w, 1, cls.gates * h, "gates * hidden_size"),
                   (i_w, 2, inp, "input_size")]
        checks += [(i_r, 0, nd, "num_directions"), (i_r, 1, cls.gates * h, "gates * hidden_size"),
                   (i_r, 2, h, "hidden_size")]
        checks += [(i_b, 0, nd, "num_directions"), (i_b, 1, cls.bias_gates(a) * h, "gates * hidden_size")]
        for i, axis, want, what in checks:
            ps = ctx.input_shape(i)
            if ps.rank is None or want is None:
                continue
            got = ps.dims[axis]
            if got is not None and got != want:
                raise ctx.error(f"input {i} has shape {ps}; dimension {axis} should be {what} = {want}")
            if what == "batch" and batch is None:
                batch = got
        y = TensorSpec(t, PartialShape([batch, nd, seq, h]))
        state = TensorSpec(t, PartialShape([batch, nd, h]))
        return [y] + [state] * s

    @classmethod
    def cell(cls, attrs: Any, x: np.ndarray, states: list[np.ndarray], w: np.ndarray, r: np.ndarray,
             b: np.ndarray) -> list[np.ndarray]:
        """One step for one direction: ``x`` [batch, input], states [batch, hidden]."""
        raise KernelError(f"{cls.type_name} defines no cell()")

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        a: SequenceAttrs = attrs
        s = cls.states
        dtype = inputs[0].dtype
        x = to_work(inputs[0])
        init = [to_work(v) for v in inputs[1:1 + s]]
        lengths = np.asarray(inputs[1 + s]).astype(np.int64).reshape(-1)
        w, r, b = (to_work(v) for v in inputs[2 + s:5 + s])
        batch, seq, _ = x.shape
        nd = num_directions(a.direction)
        lengths = np.clip(lengths, 0, seq)
        y = np.zeros((batch, nd, seq, a.hidden_size), dtype=x.dtype)
        finals: list[list[np.ndarray]] = [[] for _ in range(s)]
        rows = np.arange(batch)
        for d in range(nd):
            reverse = a.direction == "reverse" or d == 1
            st = [v[:, d].copy() for v in init]
            for step in range(seq):
                valid = step < lengths
                t = np.clip(lengths - 1 - step, 0, seq - 1) if reverse else np.full(batch, step)
                new = cls.cell(a, x[rows, t], st, w[d], r[d], b[d])
                st = [np.where(valid[:, None], n, o) for n, o in zip(new, st)]
                y[rows[valid], d, t[valid]] = st[0][valid]
            for k in range(s):
                # An empty sequence ends in zero states, as OpenVINO's CPU device gives them.
                finals[k].append(np.where((lengths > 0)[:, None], st[k], 0))
        outs = [y] + [np.stack(f, axis=1) for f in finals]
        return [cast_to(o, dtype) for o in outs]


def activation(attrs: SequenceAttrs, k: int) -> Callable[[np.ndarray], np.ndarray]:
    return ACTIVATIONS[attrs.activations[k]]


def clipped(attrs: SequenceAttrs, v: np.ndarray) -> np.ndarray:
    """Pre-activation clipping to ``[-clip, clip]`` (0: none)."""
    return np.clip(v, -attrs.clip, attrs.clip) if attrs.clip > 0 else v


def gate_blocks(v: np.ndarray, n: int) -> Sequence[np.ndarray]:
    return np.split(v, n, axis=-1)
