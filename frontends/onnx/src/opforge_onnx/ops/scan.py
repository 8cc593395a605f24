"""Scan (opset 9+), unrolled over the static sequence length: opforge has no loop op yet."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext
from opforge.graph import Output

from opforge_onnx.ops._helpers import i64, norm_axis, out, require_rank, translator

MAX_UNROLL = 1024


def convert(ctx: NodeContext) -> ConversionResult:
    if (ctx.get_opset_version() or 9) < 9:
        raise ctx.error("Scan-8 (with a batch axis and sequence_lens) is not supported; re-export with opset 9+")
    body = ctx.get_attribute("body")
    sub = ctx.extra["subgraph"]
    m = int(ctx.get_attribute("num_scan_inputs"))
    ins = [ctx.get_input(i) for i in range(ctx.get_input_size())]
    n_state = len(ins) - m
    states, xs = ins[:n_state], ins[n_state:]
    in_axes = list(ctx.get_attribute("scan_input_axes", [0] * m))
    in_dirs = list(ctx.get_attribute("scan_input_directions", [0] * m))
    n_out = len(body.output) - n_state
    out_axes = list(ctx.get_attribute("scan_output_axes", [0] * n_out))
    out_dirs = list(ctx.get_attribute("scan_output_directions", [0] * n_out))
    axes = [norm_axis(ctx, a, require_rank(ctx, x)) for a, x in zip(in_axes, xs)]
    lengths = {out(x).partial_shape[a] for x, a in zip(xs, axes)}
    if len(lengths) != 1 or None in lengths:
        raise ctx.error(f"scan inputs need one static sequence length to unroll, got {sorted(map(str, lengths))}")
    seq = int(lengths.pop())  # type: ignore[arg-type]
    if seq > MAX_UNROLL:
        raise ctx.error(f"sequence length {seq} exceeds the unroll limit {MAX_UNROLL}")
    collected: list[list[Output]] = [[] for _ in range(n_out)]
    for t in range(seq):
        slices = []
        for x, a, d in zip(xs, axes, in_dirs):
            idx = seq - 1 - t if d else t
            slices.append(out(ctx.op("Gather", x, i64(ctx, idx), i64(ctx, a), batch_dims=0)))
        outs = sub(body, [*states, *slices], f"{ctx.get_name()}/t{t}/")
        states = list(outs[:n_state])
        for k in range(n_out):
            collected[k].append(outs[n_state + k])
    results: list[Output] = list(states)
    for k in range(n_out):
        parts = collected[k][::-1] if out_dirs[k] else collected[k]
        r = require_rank(ctx, parts[0], "a scan output") + 1
        axis = norm_axis(ctx, out_axes[k], r)
        stacked = [out(ctx.op("Unsqueeze", p, i64(ctx, [axis]))) for p in parts]
        results.append(out(ctx.op("Concat", *stacked, axis=axis)) if len(stacked) > 1 else stacked[0])
    return results


EXTENSION = translator("Scan", convert)
