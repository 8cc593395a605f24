"""Loop, unrolled while converting: opforge has no loop op yet. It needs a constant trip count
(or a condition that folds to a constant each iteration); scan outputs are stacked on axis 0."""

from __future__ import annotations

import numpy as np
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext
from opforge.graph import Output

from opforge_onnx.ops._helpers import const_value, i64, out, translator

#: unrolling more iterations than this would make the graph unreasonably large
MAX_UNROLL = 1024


def convert(ctx: NodeContext) -> ConversionResult:
    body = ctx.get_attribute("body")
    sub = ctx.extra["subgraph"]
    trip: int | None = None
    if ctx.has_input(0):
        v = const_value(ctx.get_input(0))
        if v is None:
            raise ctx.error("the trip count is computed at run time; opforge unrolls loops and needs a constant")
        trip = int(np.asarray(v).reshape(-1)[0])
    cond_v = True
    if ctx.has_input(1):
        c = const_value(ctx.get_input(1))
        if c is None:
            raise ctx.error("the initial condition is computed at run time; opforge needs a constant to unroll")
        cond_v = bool(np.asarray(c).reshape(-1)[0])
    carried: list[Output] = [ctx.get_input(i) for i in range(2, ctx.get_input_size())]
    n_carried = len(carried)
    scans: list[list[Output]] = []
    it = 0
    limit = trip if trip is not None else MAX_UNROLL + 1
    while cond_v and it < limit:
        if it >= MAX_UNROLL:
            raise ctx.error(f"unrolling would exceed {MAX_UNROLL} iterations")
        cond_in = ctx.const(np.asarray(cond_v))
        outs = sub(body, [i64(ctx, it), cond_in, *carried], f"{ctx.get_name()}/iter{it}/")
        c = const_value(outs[0])
        if c is None:
            if trip is None:
                raise ctx.error("the loop condition depends on run-time values; opforge cannot unroll it")
            c = np.asarray(True)  # condition ignored only when every trip count is known... keep going
        cond_v = bool(np.asarray(c).reshape(-1)[0])
        carried = list(outs[1:1 + n_carried])
        scans.append(list(outs[1 + n_carried:]))
        it += 1
    n_scan = len(body.output) - 1 - n_carried
    results: list[Output | None] = list(carried)
    for k in range(n_scan):
        if not scans:
            raise ctx.error("the loop runs zero iterations, so its scan outputs have no known shape")
        parts = [out(ctx.op("Unsqueeze", s[k], i64(ctx, [0]))) for s in scans]
        results.append(out(ctx.op("Concat", *parts, axis=0)) if len(parts) > 1 else parts[0])
    return results


EXTENSION = translator("Loop", convert)
