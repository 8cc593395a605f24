"""Det: the determinant of the trailing [n, n] matrices by the Leibniz formula, a signed sum of
n! products of gathered elements. That is exact in its arithmetic and cheap for the small
matrices it is meant for; n must be static and at most 4 (24 terms)."""

from __future__ import annotations

import itertools

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext
from opforge.graph import Output

from opforge_onnx.ops._helpers import i64, out, require_rank, translator

MAX_N = 4


def _sign(perm: tuple[int, ...]) -> int:
    inversions = sum(1 for i in range(len(perm)) for j in range(i + 1, len(perm)) if perm[i] > perm[j])
    return -1 if inversions % 2 else 1


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input(0)
    r = require_rank(ctx, x)
    if r < 2:
        raise ctx.error(f"the input must have rank 2 or more, got {r}")
    dims = out(x).partial_shape.dims
    n = dims[-1] if dims[-1] is not None else dims[-2]
    if n is None or (dims[-2] not in (None, n)):
        raise ctx.error(f"the matrices must be square with a static size, got {out(x).partial_shape}")
    if n > MAX_N:
        raise ctx.error(f"{n}x{n} matrices are not supported (the Leibniz expansion is limited to {MAX_N}x{MAX_N})")
    rows = [out(ctx.op("Gather", x, i64(ctx, i), i64(ctx, -2), batch_dims=0)) for i in range(n)]
    cells = {(i, j): out(ctx.op("Gather", rows[i], i64(ctx, j), i64(ctx, -1), batch_dims=0))
             for i in range(n) for j in range(n)}
    total: Output | None = None
    for perm in itertools.permutations(range(n)):
        term = cells[(0, perm[0])]
        for i in range(1, n):
            term = out(ctx.op("Multiply", term, cells[(i, perm[i])]))
        if total is None:
            total = term if _sign(perm) > 0 else out(ctx.op("Negative", term))
        else:
            total = out(ctx.op("Add" if _sign(perm) > 0 else "Subtract", total, term))
    return [total]


EXTENSION = translator("Det", convert)
