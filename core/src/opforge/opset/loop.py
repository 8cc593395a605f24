"""Loop-5: runs a body sub-model while a trip count and a condition allow (OpenVINO opset5).

Inputs: 0 the trip count (an integer scalar; negative means unbounded), 1 the execution condition
(a boolean scalar), 2... the initial values. The port maps say how the outer inputs feed the
body's Parameters and how its Results become the Loop's outputs:

* an **invariant** input feeds the same value every iteration;
* a **merged** input feeds its initial value to the first iteration and then the value of a body
  Result (the back edge) to the next one — loop-carried state;
* a **sliced** input feeds one slice of size 1 along ``axis`` per iteration (the slice keeps the
  axis, as OpenVINO's ``part_size`` 1).

An output is either a body Result's value after the last iteration (``axis`` None) or its values
of every iteration concatenated along ``axis``. The special body ports name the Parameter that
receives the iteration number (``current_iteration_input_idx``) and the boolean Result that
decides whether another iteration runs (``body_condition_output_idx``); -1 means none.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, model_validator

from opforge.element_type import Type
from opforge.graph import Model
from opforge.op import CostClass, InferContext, Op, OpAttrs, TensorSpec
from opforge.shape import PartialShape

#: an unbounded loop that runs more iterations than this is stopped with an error, not a hang
MAX_ITERATIONS = 1 << 20


class LoopInputDesc(BaseModel):
    """How outer input ``external_port_id`` feeds body Parameter ``body_parameter_index``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["invariant", "merged", "sliced"]
    external_port_id: int
    body_parameter_index: int
    #: merged: the body Result whose value feeds the Parameter on the next iteration
    back_edge_result_index: int | None = None
    #: sliced: the axis iterated over
    axis: int | None = None


class LoopOutputDesc(BaseModel):
    """How body Result ``body_result_index`` becomes output ``external_port_id``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    external_port_id: int
    body_result_index: int
    #: None: the value of the last iteration; else every iteration's value concatenated on it
    axis: int | None = None


class LoopAttrs(OpAttrs):
    body: Model
    input_descriptions: tuple[LoopInputDesc, ...] = ()
    output_descriptions: tuple[LoopOutputDesc, ...] = ()
    current_iteration_input_idx: int = -1
    body_condition_output_idx: int = -1

    @model_validator(mode="after")
    def _ports(self) -> LoopAttrs:
        n_par, n_res = len(self.body.parameters), len(self.body.results)
        fed = [d.body_parameter_index for d in self.input_descriptions]
        if self.current_iteration_input_idx >= 0:
            fed.append(self.current_iteration_input_idx)
        for i in fed:
            if not 0 <= i < n_par:
                raise ValueError(f"body parameter index {i} out of range: the body has {n_par} parameters")
        if sorted(fed) != list(range(n_par)):
            raise ValueError(f"each of the body's {n_par} parameters must be fed exactly once, got {sorted(fed)}")
        for d in self.input_descriptions:
            if d.kind == "merged" and (d.back_edge_result_index is None or not 0 <= d.back_edge_result_index < n_res):
                raise ValueError(f"merged input {d.external_port_id} needs a back edge from one of {n_res} results")
            if d.kind == "sliced" and d.axis is None:
                raise ValueError(f"sliced input {d.external_port_id} needs an axis")
        outs = [d.external_port_id for d in self.output_descriptions]
        if sorted(outs) != list(range(len(outs))):
            raise ValueError(f"output port ids must be 0..{len(outs) - 1}, got {sorted(outs)}")
        for od in self.output_descriptions:
            if not 0 <= od.body_result_index < n_res:
                raise ValueError(f"body result index {od.body_result_index} out of range: the body has {n_res} results")
        if not -1 <= self.body_condition_output_idx < n_res:
            raise ValueError(f"body_condition_output_idx {self.body_condition_output_idx} out of range")
        return self


class Loop(Op):
    type_name = "Loop"
    version = "opset5"
    Attrs = LoopAttrs
    min_inputs = 2
    max_inputs = None
    value_inputs = (0, 1)
    scalar_inputs = (0, 1)
    data_dependent_shape = True
    host_stage = True
    cost_class = CostClass.COMPUTE

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: LoopAttrs = ctx.attrs  # type: ignore[assignment]
        for i, want in ((0, "an integer"), (1, "a boolean")):
            t = ctx.input_type(i)
            ok = t is Type.dynamic or (t is Type.boolean if i == 1 else t.is_integral)
            if not ok or (ctx.input_shape(i).is_static and int(np.prod(ctx.input_shape(i).to_tuple())) != 1):
                what = "trip count" if i == 0 else "execution condition"
                raise ctx.error(f"input {i} ({what}) must be {want} scalar, got {t} {ctx.input_shape(i)}")
        params = a.body.parameters
        for d in a.input_descriptions:
            if not 0 <= d.external_port_id < ctx.num_inputs:
                raise ctx.error(f"input description names input {d.external_port_id}; the node has {ctx.num_inputs}")
            pt = params[d.body_parameter_index].output(0).element_type
            if pt is not Type.dynamic and ctx.input_type(d.external_port_id) not in (pt, Type.dynamic):
                raise ctx.error(f"input {d.external_port_id} is {ctx.input_type(d.external_port_id)}, "
                                f"body parameter {d.body_parameter_index} expects {pt}")
        trip = ctx.input_value(0)
        cond = ctx.input_value(1)
        fixed_count: int | None = None
        if trip is not None and a.body_condition_output_idx < 0 and cond is not None:
            fixed_count = max(0, int(np.asarray(trip).reshape(-1)[0])) if bool(np.asarray(cond).reshape(-1)[0]) else 0
        results = a.body.outputs
        merged_init = {d.back_edge_result_index: ctx.input_shape(d.external_port_id)
                       for d in a.input_descriptions if d.kind == "merged"}
        specs: list[TensorSpec | None] = [None] * len(a.output_descriptions)
        for od in a.output_descriptions:
            r = results[od.body_result_index]
            shape = r.partial_shape
            if od.axis is None:
                init = merged_init.get(od.body_result_index)
                if init is not None and shape != init:
                    # the state may keep its initial value (zero iterations) or change shape
                    shape = _join(shape, init)
            else:
                if shape.rank is None:
                    shape = PartialShape.dynamic()
                else:
                    axis = od.axis % shape.rank if shape.rank else 0
                    dims = list(shape.dims)
                    size = dims[axis]
                    dims[axis] = size * fixed_count if fixed_count is not None and size is not None else None
                    shape = PartialShape(dims)
            specs[od.external_port_id] = TensorSpec(r.element_type, shape)
        return [s for s in specs if s is not None]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        from opforge.reference import evaluate_model

        return run_loop(attrs, inputs, lambda feed: evaluate_model(attrs.body, feed), "reference")

    @classmethod
    def run_host_stage(cls, attrs: Any, inputs: list[np.ndarray], run_subgraph: Any, where: str) -> list[np.ndarray]:
        """The iterations run on the host; each runs the body on the device."""
        return run_loop(attrs, inputs, lambda feed: run_subgraph(attrs.body, feed), where)


def _join(a: PartialShape, b: PartialShape) -> PartialShape:
    """The shape that covers both (dimensions that differ become dynamic)."""
    if a.rank is None or b.rank is None or a.rank != b.rank:
        return PartialShape.dynamic()
    return PartialShape([x if x == y else None for x, y in zip(a.dims, b.dims)])


def run_loop(attrs: LoopAttrs, inputs: list[np.ndarray], run_body: Any, where: str) -> list[np.ndarray]:
    """Iterate the body: ``run_body(list of body inputs) -> list of body outputs``. Shared by the
    reference and devices that run the body as a compiled model (``where`` names them in errors)."""
    from opforge.errors import KernelError

    trip = int(np.asarray(inputs[0]).reshape(-1)[0])
    go = bool(np.asarray(inputs[1]).reshape(-1)[0])
    limit = trip if trip >= 0 else MAX_ITERATIONS
    params = attrs.body.parameters
    feed: list[np.ndarray | None] = [None] * len(params)
    sliced: list[LoopInputDesc] = []
    for d in attrs.input_descriptions:
        if d.kind == "sliced":
            sliced.append(d)
            ax = int(d.axis or 0) % max(1, np.ndim(inputs[d.external_port_id]))
            limit = min(limit, inputs[d.external_port_id].shape[ax])
        else:
            feed[d.body_parameter_index] = inputs[d.external_port_id]
    last: dict[int, np.ndarray] = {}
    per_iter: dict[int, list[np.ndarray]] = {od.body_result_index: [] for od in attrs.output_descriptions
                                             if od.axis is not None}
    # Everything the iterations look up, resolved once (the CPU runs small bodies in microseconds).
    it_idx, cond_idx = attrs.current_iteration_input_idx, attrs.body_condition_output_idx
    it_type = np.dtype(np.int64)
    if it_idx >= 0:
        pt = params[it_idx].output(0).element_type
        it_type = np.dtype(pt.np) if pt is not Type.dynamic else it_type
    slicing = [(d.body_parameter_index, inputs[d.external_port_id], int(d.axis or 0) % max(1, np.ndim(inputs[d.external_port_id])))
               for d in sliced]
    back_edges = [(d.body_parameter_index, int(d.back_edge_result_index or 0)) for d in attrs.input_descriptions
                  if d.kind == "merged"]
    kept = [od.body_result_index for od in attrs.output_descriptions]
    it = 0
    while go and it < limit:
        if it_idx >= 0:
            feed[it_idx] = np.asarray(it, dtype=it_type)
        for pi, x, ax in slicing:
            feed[pi] = np.take(x, [it], axis=ax)
        outs = run_body(feed)
        for pi, ri in back_edges:
            feed[pi] = outs[ri]
        for k, lst in per_iter.items():
            lst.append(outs[k])
        for ri in kept:
            last[ri] = outs[ri]
        if cond_idx >= 0:
            go = bool(np.asarray(outs[cond_idx]).reshape(-1)[0])
        it += 1
    if go and trip < 0 and it >= MAX_ITERATIONS and not sliced:
        raise KernelError(f"{where}: Loop ran {MAX_ITERATIONS} iterations without its condition turning false")
    results: list[np.ndarray] = [np.empty(0)] * len(attrs.output_descriptions)
    body_results = attrs.body.outputs
    merged_from = {d.back_edge_result_index: d.external_port_id for d in attrs.input_descriptions
                   if d.kind == "merged"}
    for od in attrs.output_descriptions:
        r = body_results[od.body_result_index]
        if od.axis is not None:
            parts = per_iter[od.body_result_index]
            if parts:
                results[od.external_port_id] = np.concatenate(parts, axis=od.axis)
            else:  # zero iterations: an empty tensor, sized where the body's shape is known
                dims = [0 if k == od.axis % max(1, r.partial_shape.rank or 1) or dim is None else dim
                        for k, dim in enumerate(r.partial_shape.dims)] if r.partial_shape.rank is not None else [0]
                results[od.external_port_id] = np.zeros(dims, dtype=r.element_type.np)
        elif od.body_result_index in last:
            results[od.external_port_id] = last[od.body_result_index]
        elif od.body_result_index in merged_from:  # zero iterations: the state keeps its initial value
            results[od.external_port_id] = np.asarray(inputs[merged_from[od.body_result_index]])
        else:
            raise KernelError(f"{where}: Loop ran zero iterations, so output {od.external_port_id} "
                              f"(body result {od.body_result_index}, not loop-carried) has no value")
    return results
