"""Scan, unrolled over a sequence length known while converting; otherwise (a run-time length,
or longer than the unroll limit) an opforge Loop over slices of the scan inputs.

Scan-8 puts a batch axis first on every state and scan input (the body sees one batch element)
and takes optional ``sequence_lens``: it is unrolled per batch element as well, and supported when
every sequence has the full length (``sequence_lens`` absent or a constant equal to it)."""

from __future__ import annotations

from typing import Any

import numpy as np
from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext
from opforge.graph import Node, Output
from opforge.opset.loop import Loop
from opforge.shape import PartialShape

from opforge_onnx.ops._body import capture_body, param, stable_shapes
from opforge_onnx.ops._helpers import const_value, i64, norm_axis, out, require_rank, translator

MAX_UNROLL = 1024


def _stack(ctx: NodeContext, parts: list[Output], axis: int) -> Output:
    stacked = [out(ctx.op("Unsqueeze", p, i64(ctx, [axis]))) for p in parts]
    return out(ctx.op("Concat", *stacked, axis=axis)) if len(stacked) > 1 else stacked[0]


def _unroll(ctx: NodeContext, states: list[Output], xs: list[Output], axes: list[int], in_dirs: list[int],
            out_axes: list[int], out_dirs: list[int], prefix: str) -> list[Output]:
    body = ctx.get_attribute("body")
    sub = ctx.extra["subgraph"]
    n_state = len(states)
    n_out = len(body.output) - n_state
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
        outs = sub(body, [*states, *slices], f"{prefix}t{t}/")
        states = list(outs[:n_state])
        for k in range(n_out):
            collected[k].append(outs[n_state + k])
    results: list[Output] = list(states)
    for k in range(n_out):
        parts = collected[k][::-1] if out_dirs[k] else collected[k]
        r = require_rank(ctx, parts[0], "a scan output") + 1
        results.append(_stack(ctx, parts, norm_axis(ctx, out_axes[k], r)))
    return results


def _convert_scan8(ctx: NodeContext) -> ConversionResult:
    m = int(ctx.get_attribute("num_scan_inputs"))
    ins = [ctx.get_input(i) if ctx.has_input(i) else None for i in range(ctx.get_input_size())]
    lens, rest = ins[0], [i for i in ins[1:] if i is not None]
    n_state = len(rest) - m
    states, xs = rest[:n_state], rest[n_state:]
    dirs = list(ctx.get_attribute("directions", [0] * m))
    batch = {out(v).partial_shape[0] for v in rest}
    if len(batch) != 1 or None in batch:
        raise ctx.error(f"Scan-8 needs one static batch size to unroll, got {sorted(map(str, batch))}")
    nb = int(batch.pop())  # type: ignore[arg-type]
    if lens is not None:
        lv = const_value(lens)
        seqs = {out(x).partial_shape[1] for x in xs}
        if lv is None or len(seqs) != 1 or any(int(v) != next(iter(seqs)) for v in lv.reshape(-1)):
            raise ctx.error("Scan-8 with sequence_lens shorter than the inputs (or computed at run time) is not supported")
    per_batch: list[list[Output]] = []
    for b in range(nb):
        sb = [out(ctx.op("Gather", s, i64(ctx, b), i64(ctx, 0), batch_dims=0)) for s in states]
        xb = [out(ctx.op("Gather", x, i64(ctx, b), i64(ctx, 0), batch_dims=0)) for x in xs]
        n_out = len(ctx.get_attribute("body").output) - n_state
        per_batch.append(_unroll(ctx, sb, xb, [0] * m, dirs, [0] * n_out, [0] * n_out, f"{ctx.get_name()}/b{b}/"))
    return [_stack(ctx, [pb[k] for pb in per_batch], 0) for k in range(len(per_batch[0]))]


def _reverse(ctx: NodeContext, x: Output, axis: int) -> Output:
    return out(ctx.op("Reverse", x, i64(ctx, [axis]), mode="index"))


def _scan_loop(ctx: NodeContext, states: list[Output], xs: list[Output], axes: list[int], in_dirs: list[int],
               out_axes: list[int], out_dirs: list[int]) -> ConversionResult:
    """A Scan whose sequence length is known only at run time: an opforge Loop that slices each
    scan input along its axis (one element per iteration, squeezed in the body) and concatenates
    the scan outputs (unsqueezed at their axis); reversed directions reverse outside the loop."""
    body = ctx.get_attribute("body")
    sub = ctx.extra["subgraph"]
    n, m = len(states), len(xs)
    xs = [_reverse(ctx, x, a) if d else x for x, a, d in zip(xs, axes, in_dirs)]
    length = out(ctx.op("Gather", out(ctx.op("ShapeOf", xs[0], output_type=Type.i64)), i64(ctx, axes[0]),
                        i64(ctx, 0), batch_dims=0))
    shapes = [s.partial_shape for s in states]
    slice_shapes = []
    for x, a in zip(xs, axes):
        dims = list(x.partial_shape.dims)
        dims[a] = 1
        slice_shapes.append(PartialShape(dims))
    scan_axes: list[int] = []
    for attempt in range(2):
        prefix = f"{ctx.get_name()}/body{attempt or ''}/"
        params = [param(f"{prefix}state{k}", s.element_type, sh) for k, (s, sh) in enumerate(zip(states, shapes))]
        params += [param(f"{prefix}slice{j}", x.element_type, sh) for j, (x, sh) in enumerate(zip(xs, slice_shapes))]

        def build(params: list[Node] = params, prefix: str = prefix) -> list[Output]:
            slices = [out(ctx.op("Squeeze", p.output(0), i64(ctx, [a]))) for p, a in zip(params[n:], axes)]
            outs = list(sub(body, [*(p.output(0) for p in params[:n]), *slices], prefix))
            scan_axes.clear()
            for k in range(n, len(outs)):
                r = require_rank(ctx, outs[k], "a scan output") + 1
                scan_axes.append(norm_axis(ctx, out_axes[k - n], r))
                outs[k] = out(ctx.op("Unsqueeze", outs[k], i64(ctx, [scan_axes[-1]])))
            return outs

        model, invariants = capture_body(ctx, params, build, prefix)
        changed = stable_shapes([model.outputs[k].partial_shape for k in range(n)], shapes)
        if changed is None:
            break
        shapes = changed
    else:
        raise ctx.error("the shapes of the scan states are not stable across iterations")
    inputs: list[dict[str, Any]] = [{"kind": "merged", "external_port_id": 2 + k, "body_parameter_index": k,
                                     "back_edge_result_index": k} for k in range(n)]
    inputs += [{"kind": "sliced", "external_port_id": 2 + n + j, "body_parameter_index": n + j, "axis": axes[j]}
               for j in range(m)]
    inputs += [{"kind": "invariant", "external_port_id": 2 + n + m + i, "body_parameter_index": n + m + i}
               for i in range(len(invariants))]
    n_out = len(model.outputs) - n
    outs = [{"external_port_id": k, "body_result_index": k} for k in range(n)]
    outs += [{"external_port_id": n + k, "body_result_index": n + k, "axis": scan_axes[k]} for k in range(n_out)]
    node = ctx.op(Loop, length, ctx.const(np.asarray(True)), *states, *xs, *invariants, body=model,
                  input_descriptions=inputs, output_descriptions=outs)
    results = [Output(node, i) for i in range(n + n_out)]
    for k in range(n_out):
        if out_dirs[k]:
            results[n + k] = _reverse(ctx, results[n + k], scan_axes[k])
    return results


def convert(ctx: NodeContext) -> ConversionResult:
    if (ctx.get_opset_version() or 9) < 9:
        return _convert_scan8(ctx)
    body = ctx.get_attribute("body")
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
    if len(lengths) == 1 and None not in lengths and int(lengths.pop()) <= MAX_UNROLL:  # type: ignore[arg-type]
        return _unroll(ctx, states, xs, axes, in_dirs, out_axes, out_dirs, f"{ctx.get_name()}/")
    return _scan_loop(ctx, states, xs, axes, in_dirs, out_axes, out_dirs)


EXTENSION = translator("Scan", convert)
