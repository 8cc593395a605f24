"""Turning an ONNX body graph (Loop, Scan) into a self-contained opforge model for the ``Loop``
op: the body is converted with the same translators as the outer graph, then every value it
reads from the outer scope is cut off and fed in as an extra (invariant) Parameter, or copied in
when it is a constant."""

from __future__ import annotations

from collections.abc import Callable

from opforge.element_type import Type
from opforge.frontend.node_context import NodeContext
from opforge.graph import Model, Node, Output, _ids
from opforge.opset.constant import Constant
from opforge.opset.parameter import Parameter
from opforge.shape import PartialShape


def param(name: str, t: Type, shape: PartialShape) -> Node:
    return Node.create(Parameter, [], {"element_type": t, "shape": shape}, name=name)


def capture_body(ctx: NodeContext, params: list[Node], build: Callable[[], list[Output]],
                 prefix: str) -> tuple[Model, list[Output]]:
    """``build()`` converts the body (reading ``params``) and returns its outputs. Returns the
    body model, whose parameters are ``params`` plus one per outer value read (appended to
    ``params``), and those outer values, in that order."""
    first_id = next(_ids)  # nodes created from here on belong to the body
    outs = build()
    own = {p.id for p in params}
    outer: dict[Output, Output] = {}
    invariants: list[Output] = []

    def inner(o: Output) -> Output:
        if o.node.id >= first_id or o.node.id in own:
            return o
        if o not in outer:
            v = o.node.constant_value()
            if v is not None:
                outer[o] = Node.create(Constant, [], {"value": v}, name=f"{prefix}{o.node.name}").output(0)
            else:
                p = param(f"{prefix}outer/{o.node.name}/{o.index}", o.element_type, o.partial_shape)
                params.append(p)
                invariants.append(o)
                outer[o] = p.output(0)
        return outer[o]

    outs = [inner(o) for o in outs]
    seen: set[int] = set()
    stack = [o.node for o in outs]
    while stack:
        n = stack.pop()
        if n.id in seen or n.id in own:
            continue
        seen.add(n.id)
        n.inputs = [inner(i) for i in n.inputs]
        stack.extend(i.node for i in n.inputs)
    return Model(outs, parameters=params, name=f"{ctx.get_name()}/body"), invariants


def stable_shapes(got: list[PartialShape], shapes: list[PartialShape]) -> list[PartialShape] | None:
    """None when every loop-carried value keeps its shape; else the shapes to give the body's
    parameters instead (dynamic where a value changes: the body then takes any of that rank)."""
    if all(g == s for g, s in zip(got, shapes)):
        return None
    return [s if g == s else PartialShape.dynamic(s.rank if g.rank == s.rank else None) for g, s in zip(got, shapes)]
