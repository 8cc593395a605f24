"""Einsum-7: Einstein summation over any number of operands, per an ``equation`` such as
``"ij,jk->ik"``; labels are case-sensitive letters, ``...`` covers broadcast dimensions, a label
repeated within one operand takes its diagonal, and without ``->`` the output is the labels seen
once, sorted (capitals first), after the ellipsis."""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.op import CostClass, InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._elementwise import broadcast_shapes
from opforge.opset._nn_util import merge_dim, same_type
from opforge.shape import Dim, PartialShape

_ELLIPSIS = "..."


class EinsumAttrs(OpAttrs):
    equation: str


def _labels(ctx: InferContext, subscript: str) -> list[str]:
    """The labels of one subscript, with the ellipsis as one ``"..."`` label."""
    out: list[str] = []
    rest = subscript
    while rest:
        if rest.startswith(_ELLIPSIS):
            if _ELLIPSIS in out:
                raise ctx.error(f"subscript '{subscript}' has more than one ellipsis")
            out.append(_ELLIPSIS)
            rest = rest[3:]
        elif rest[0].isascii() and rest[0].isalpha():
            out.append(rest[0])
            rest = rest[1:]
        else:
            raise ctx.error(f"subscript '{subscript}' has '{rest[0]}'; labels are letters A-Z, a-z or '...'")
    return out


def parse_equation(ctx: InferContext, equation: str, n_inputs: int) -> tuple[list[list[str]], list[str]]:
    """(input subscripts, output subscript), the output recovered in implicit mode."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    inputs = [_labels(ctx, s) for s in lhs.split(",")]
    if len(inputs) != n_inputs:
        raise ctx.error(
            f"equation '{equation}' has {len(inputs)} input subscripts, but the node has {n_inputs} inputs"
        )
    any_ellipsis = any(_ELLIPSIS in s for s in inputs)
    if arrow:
        output = _labels(ctx, rhs)
        seen = {label for s in inputs for label in s}
        for label in output:
            if label not in seen:
                raise ctx.error(f"equation '{equation}': output label '{label}' is in no input subscript")
        if len(set(output)) != len(output):
            raise ctx.error(f"equation '{equation}': the output subscript repeats a label")
        if any_ellipsis and _ELLIPSIS not in output:
            raise ctx.error(f"equation '{equation}': inputs use '...', so the output subscript must too")
    else:
        counts: dict[str, int] = {}
        for s in inputs:
            for label in s:
                counts[label] = counts.get(label, 0) + 1
        output = ([_ELLIPSIS] if any_ellipsis else []) + sorted(
            label for label, c in counts.items() if c == 1 and label != _ELLIPSIS
        )
    return inputs, output


class Einsum(Op):
    type_name = "Einsum"
    cost_class = CostClass.COMPUTE
    version = "opset7"
    Attrs = EinsumAttrs
    min_inputs = 1
    max_inputs = None

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: EinsumAttrs = ctx.attrs  # type: ignore[assignment]
        t = same_type(ctx, [(i, f"operand {i}") for i in range(ctx.num_inputs)])
        inputs, output = parse_equation(ctx, a.equation, ctx.num_inputs)
        dims: dict[str, Dim] = {}
        ellipsis: PartialShape | None = PartialShape([])
        for i, subscript in enumerate(inputs):
            shape = ctx.input_shape(i)
            named = [label for label in subscript if label != _ELLIPSIS]
            if shape.rank is None:
                if _ELLIPSIS in subscript:
                    ellipsis = None
                continue
            has_ellipsis = _ELLIPSIS in subscript
            if shape.rank < len(named) or (not has_ellipsis and shape.rank != len(named)):
                raise ctx.error(
                    f"input {i} has rank {shape.rank}, but its subscript "
                    f"'{''.join(subscript)}' has {len(named)} labels"
                )
            pos = 0
            for label in subscript:
                if label == _ELLIPSIS:
                    width = shape.rank - len(named)
                    part = PartialShape(shape.dims[pos : pos + width])
                    if ellipsis is not None:
                        ellipsis = broadcast_shapes(ctx, ellipsis, part)
                    pos += width
                else:
                    dims[label] = merge_dim(
                        ctx, dims.get(label), shape[pos], f"label '{label}' has different sizes"
                    )
                    pos += 1
        out: list[Dim] = []
        for label in output:
            if label == _ELLIPSIS:
                if ellipsis is None:
                    return [TensorSpec(t, PartialShape.dynamic())]
                out.extend(ellipsis.dims)
            else:
                out.append(dims.get(label))
        return [TensorSpec(t, PartialShape(out))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        dtype = inputs[0].dtype
        work = dtype if dtype.kind in "iu" or dtype in (np.float32, np.float64) else np.dtype(np.float32)
        ops = [x.astype(work, copy=False) for x in inputs]
        eq = attrs.equation.replace(" ", "")
        if "->" not in eq:
            # Make the implicit output explicit: NumPy's implicit rules drop the ellipsis when no
            # operand's ellipsis covers any axis, while OpenVINO's always place it first.
            lhs = eq
            labels = [c for c in lhs if c.isalpha()]
            singles = sorted(c for c in set(labels) if labels.count(c) == 1)
            eq = lhs + "->" + ("..." if "..." in lhs else "") + "".join(singles)
        y = np.einsum(eq, *ops, optimize=len(ops) > 2)
        return [np.asarray(y).astype(dtype)]
