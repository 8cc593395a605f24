"""Loop: unrolled while converting when every iteration's condition folds to a constant and the
trip count is a small constant (the graph stays static, so devices plan it whole); otherwise an
opforge ``Loop`` node (:mod:`opforge.opset.loop`) whose body is a sub-model.

ONNX's body takes (iteration, condition, carried...) and returns (condition, carried...,
scans...): the carried values are merged (back-edge) inputs, the iteration number is the
current-iteration port, the returned condition is the body-condition port, scan outputs are
unsqueezed in the body and concatenated on axis 0, and values the body reads from the outer scope
become invariant inputs. The incoming condition is a constant true in the body: an iteration
runs only while the condition holds (as OpenVINO's ONNX frontend does)."""

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
from opforge_onnx.ops._helpers import const_value, i64, out, translator

#: unrolling more iterations than this would make the graph unreasonably large
MAX_UNROLL = 1024


class _NotUnrollable(Exception):
    """The loop's iteration count is not known while converting."""


def _unroll(ctx: NodeContext, trip: int | None, cond_v: bool) -> ConversionResult:
    body = ctx.get_attribute("body")
    sub = ctx.extra["subgraph"]
    carried: list[Output] = [ctx.get_input(i) for i in range(2, ctx.get_input_size())]
    n_carried = len(carried)
    scans: list[list[Output]] = []
    it = 0
    limit = trip if trip is not None else MAX_UNROLL + 1
    while cond_v and it < limit:
        if it >= MAX_UNROLL:
            raise _NotUnrollable
        cond_in = ctx.const(np.asarray(cond_v))
        outs = sub(body, [i64(ctx, it), cond_in, *carried], f"{ctx.get_name()}/iter{it}/")
        c = const_value(outs[0])
        if c is None:
            raise _NotUnrollable
        cond_v = bool(_first_element(c))
        carried = list(outs[1:1 + n_carried])
        scans.append(list(outs[1 + n_carried:]))
        it += 1
    n_scan = len(body.output) - 1 - n_carried
    results: list[Output | None] = list(carried)
    for k in range(n_scan):
        if not scans:
            raise _NotUnrollable  # zero iterations: the loop op knows the scan outputs' shapes
        parts = [out(ctx.op("Unsqueeze", s[k], i64(ctx, [0]))) for s in scans]
        results.append(out(ctx.op("Concat", *parts, axis=0)) if len(parts) > 1 else parts[0])
    return results


def _loop_op(ctx: NodeContext) -> ConversionResult:
    body = ctx.get_attribute("body")
    carried = [ctx.get_input(i) for i in range(2, ctx.get_input_size())]
    n = len(carried)
    trip = to_scalar(ctx, ctx.get_input(0), Type.i64) if ctx.has_input(0) else i64(ctx, -1)
    cond = to_scalar(ctx, ctx.get_input(1), Type.boolean) if ctx.has_input(1) else ctx.const(np.asarray(True))
    shapes = [c.partial_shape for c in carried]
    sub = ctx.extra["subgraph"]
    for attempt in range(2):
        prefix = f"{ctx.get_name()}/body{attempt or ''}/"
        params = [param(f"{prefix}iteration", Type.i64, PartialShape([]))]
        params += [param(f"{prefix}carried{k}", c.element_type, s) for k, (c, s) in enumerate(zip(carried, shapes))]

        def build(params: list[Node] = params, prefix: str = prefix) -> list[Output]:
            true = ctx.const(np.asarray(True), name=f"{prefix}condition")
            outs = list(sub(body, [params[0].output(0), out(true), *(p.output(0) for p in params[1:])], prefix))
            for k in range(1 + n, len(outs)):  # scan outputs: stacked on a new axis 0
                outs[k] = out(ctx.op("Unsqueeze", outs[k], i64(ctx, [0])))
            return outs

        model, invariants = capture_body(ctx, params, build, prefix)
        got = [model.outputs[1 + k].partial_shape for k in range(n)]
        changed = stable_shapes(got, shapes)
        if changed is None:
            break
        shapes = changed
    else:
        raise ctx.error(f"the shapes of the loop-carried values are not stable across iterations: {got}")
    outputs = model.outputs
    if outputs[0].element_type is not Type.boolean:
        raise ctx.error(f"the body's condition output is {outputs[0].element_type}, expected bool")
    inputs: list[dict[str, Any]] = [{"kind": "merged", "external_port_id": 2 + k, "body_parameter_index": 1 + k,
                                     "back_edge_result_index": 1 + k} for k in range(n)]
    inputs += [{"kind": "invariant", "external_port_id": 2 + n + j, "body_parameter_index": 1 + n + j}
               for j in range(len(invariants))]
    n_scan = len(outputs) - 1 - n
    outs = [{"external_port_id": k, "body_result_index": 1 + k} for k in range(n)]
    outs += [{"external_port_id": n + k, "body_result_index": 1 + n + k, "axis": 0} for k in range(n_scan)]
    node = ctx.op(Loop, trip, cond, *carried, *invariants, body=model, input_descriptions=inputs,
                  output_descriptions=outs, current_iteration_input_idx=0, body_condition_output_idx=0)
    return [Output(node, i) for i in range(n + n_scan)]


def to_scalar(ctx: NodeContext, v: Output, t: Type) -> Output:
    """ONNX gives M and cond as scalars or one-element tensors; the loop takes scalars."""
    if v.element_type is not t:
        v = out(ctx.op("Convert", v, destination_type=t))
    if v.partial_shape.rank != 0:
        v = out(ctx.op("Reshape", v, i64(ctx, []), special_zero=False))
    return v


class _Unknown:
    """An optional input whose value is not known while converting."""


_UNKNOWN = _Unknown()


def _first_element(v: Any) -> Any:
    """ONNX gives M and cond as scalars or one-element tensors: their one value."""
    return np.asarray(v).reshape(-1)[0]


def _constant_input(ctx: NodeContext, index: int) -> Any:
    """Input ``index`` (M or cond)'s one value as a NumPy scalar, None when the input is absent,
    or ``_UNKNOWN`` when it is computed at run time."""
    if not ctx.has_input(index):
        return None
    v = const_value(ctx.get_input(index))
    if v is None:
        return _UNKNOWN
    if np.size(v) != 1:
        raise ctx.error(f"input {index} ({('M', 'cond')[index]}) must hold one value, got shape {np.shape(v)}")
    return _first_element(v)


def convert(ctx: NodeContext) -> ConversionResult:
    trip, cond = _constant_input(ctx, 0), _constant_input(ctx, 1)
    if trip is not _UNKNOWN and cond is not _UNKNOWN:
        try:
            return _unroll(ctx, None if trip is None else int(trip), True if cond is None else bool(cond))
        except _NotUnrollable:
            pass  # the nodes made so far are unreachable: nothing reads them
    return _loop_op(ctx)


EXTENSION = translator("Loop", convert)
