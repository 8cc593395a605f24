"""Einsum: one kernel for up to four operands (``kernels/einsum.cl``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from opforge.element_type import Type
from opforge.graph import Node

from opforge_gpu.library import kernel
from opforge_gpu.storage import supported_type

if TYPE_CHECKING:
    from opforge_gpu.lowering import Epilogue, Lowering

FILE = "einsum.cl"
WG = 128


MAX_EINSUM_OPERANDS = 4


def _subscripts(equation: str) -> tuple[list[list[str]], list[str]]:
    """(labels of each operand, output labels), '...' as one label; implicit output as OpenVINO."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")

    def labels(s: str) -> list[str]:
        out: list[str] = []
        while s:
            if s.startswith("..."):
                out.append("...")
                s = s[3:]
            else:
                out.append(s[0])
                s = s[1:]
        return out

    ins = [labels(s) for s in lhs.split(",")]
    if arrow:
        return ins, labels(rhs)
    letters = [c for c in lhs if c.isalpha()]
    singles = sorted(c for c in set(letters) if letters.count(c) == 1)
    return ins, (["..."] if "..." in lhs else []) + singles


def _einsum_supports(node: Node) -> str | None:
    t = node.inputs[0].element_type
    if not supported_type(t) or t is Type.boolean:
        return f"Einsum of {t} has no GPU kernel"
    if len(node.inputs) > MAX_EINSUM_OPERANDS:
        return f"Einsum of {len(node.inputs)} operands: the GPU kernel takes at most {MAX_EINSUM_OPERANDS}"
    return None


def einsum_plan(equation: str, shapes: list[tuple[int, ...]]) -> tuple[list[int], list[int], list[list[int]]]:
    """(output dims, summed dims, per operand the strides of every output then summed label)."""
    ins, out = _subscripts(equation)
    named = [[lb for lb in s if lb != "..."] for s in ins]
    widths = [len(shp) - len(nm) for shp, nm in zip(shapes, named)]
    ell = max(widths) if widths else 0
    # every operand as (label, dim, stride) per axis, ellipsis axes labelled ('...', j) right-aligned
    axes: list[list[tuple[Any, int, int]]] = []
    sizes: dict[Any, int] = {}
    for s, shp, w in zip(ins, shapes, widths):
        strides = [int(np.prod(shp[d + 1:])) for d in range(len(shp))]
        row: list[tuple[Any, int, int]] = []
        pos = 0
        for lb in s:
            if lb == "...":
                for j in range(w):
                    row.append((("...", ell - w + j), shp[pos], strides[pos]))
                    pos += 1
            else:
                row.append((lb, shp[pos], strides[pos]))
                pos += 1
        for lb, dim, _ in row:
            sizes[lb] = dim if sizes.get(lb, 1) == 1 else sizes[lb]
        axes.append(row)
    out_labels: list[Any] = []
    for lb in out:
        out_labels += [("...", j) for j in range(ell)] if lb == "..." else [lb]
    sum_labels = [lb for lb in sizes if lb not in out_labels]
    order = out_labels + sum_labels
    table: list[list[int]] = []
    for row in axes:
        st = dict.fromkeys(order, 0)
        for lb, dim, stride in row:
            if not (dim == 1 and sizes[lb] != 1):
                st[lb] += stride
        table.append([st[lb] for lb in order])
    return [sizes[lb] for lb in out_labels], [sizes[lb] for lb in sum_labels], table


@kernel("Einsum", supports=_einsum_supports)
def lower_einsum(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    ops = [lw.input(node, i) for i in range(len(node.inputs))]
    y = lw.new_output(node)
    out_dims, sum_dims, table = einsum_plan(str(node.attrs.equation),  # type: ignore[attr-defined]
                                            [tuple(t.shape) for t in ops])
    st = ops[0].storage
    defines: dict[str, Any] = {"EINSUM": 1, "NOPS": len(ops), "ACC_T": "float" if st.is_float else st.compute}
    defines.update(st.macros("X"))
    defines.update(y.storage.macros("Y"))
    args: list[Any] = [*ops, *[lw.dummy()] * (MAX_EINSUM_OPERANDS - len(ops))]
    prm = lw.params([y.size, len(out_dims), *out_dims, len(sum_dims), *sum_dims, *[v for row in table for v in row]])
    lw.launch(FILE, "einsum", defines, [*args, y, prm], [max(y.size, 1)], [WG], node=node)
