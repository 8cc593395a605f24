"""A parallel block's residual (m + a) + x -> (m + x) + a, so both Adds become MatMul sum post-ops.

GPT-NeoX (and GPT-J, Phi, Falcon) compute attention and MLP side by side from one input x and
add both projections to it: Add(Add(mlp_out, attn_out), x). The emitter gives a MatMul one sum
post-op (oneDNN's sum, in place over a tensor already computed), so the inner Add becomes the
second projection's sum of the first one's result and the outer Add, x plus that, is left as an
element-wise step of its own: hf_gpt_neox_small, four 'Add/ref' steps of 17-21 us at 1 thread.
Associated as (m + x) + a, the first projection (in program order) adds x as its sum and the
second adds the first's result: no Add step is left, and x is read once inside a MatMul instead
of three tensors streamed once more.

The program order follows the graph's (a depth-first walk of each node's inputs in order), so the
inner Add keeps the operand it had first and takes x as its second; the other projection is
added last. f32 additions in another order: results within one f32 rounding per element of the
unchanged graph's (an exact reassociation only in real arithmetic).

Only when both operands of the inner Add are projections (a MatMul with constant weights,
optionally followed by an Add of a constant bias) read by that Add alone, the inner Add is read
by the outer one alone, x is a run-time tensor, and all four tensors are f32 of one static shape
(no broadcast). OPFORGE_CPU_PARALLEL_RESIDUAL=0 turns it off (read at each compile)."""

from __future__ import annotations

import os
from typing import ClassVar

from opforge.element_type import Type
from opforge.graph import Model, Node, Output
from opforge.opset.add import Add
from opforge.transformations import pattern as p


def _shape(out: Output) -> tuple[int, ...] | None:
    shape = out.partial_shape
    return tuple(int(d) for d in shape.to_tuple()) if shape.is_static else None


def _sole_reader(uses: dict[Output, list[tuple[Node, int]]], out: Output) -> Node | None:
    readers = uses.get(out, [])
    return readers[0][0] if len(readers) == 1 else None


def _plain_add(node: Node) -> bool:
    return (node.type_name == "Add" and node.op.is_standard
            and getattr(node.attrs, "auto_broadcast", "numpy") == "numpy")


def _projection(out: Output, uses: dict[Output, list[tuple[Node, int]]]) -> bool:
    """Whether ``out`` is a MatMul with constant weights, or such a MatMul plus a constant (its
    bias), each read by the next alone: what the emitter turns into one MatMul step."""
    node = out.node
    if _plain_add(node):
        a, b = node.inputs
        src = a if b.node.constant_value() is not None else b if a.node.constant_value() is not None else None
        if src is None or _sole_reader(uses, src) is not node:
            return False
        node = src.node
    return (node.type_name == "MatMul" and node.op.is_standard and len(node.inputs) == 2
            and node.inputs[1].node.constant_value() is not None and node.inputs[0].node.constant_value() is None)


def _matmul_like(out: Output) -> bool:
    """A MatMul's result or an Add of one (a cheap screen before ``_projection``)."""
    node = out.node
    return node.type_name == "MatMul" or (node.type_name == "Add" and any(i.node.type_name == "MatMul" for i in node.inputs))


class ParallelResidual(p.MatcherPass):
    """Add(Add(P, Q), X) -> Add(Add(P, X), Q) for projections P and Q and a run-time X."""

    name: ClassVar[str] = "cpu_parallel_residual"
    order: ClassVar[int] = 104  # after cpu_qkv_split (103); independent of the other CPU passes

    def pattern(self) -> p.PatternNode:
        return p.op("Add")

    def callback(self, match: p.Match, model: Model) -> bool:
        if os.environ.get("OPFORGE_CPU_PARALLEL_RESIDUAL", "1") == "0":
            return False
        outer = match.root.node
        if not _plain_add(outer) or outer.inputs[0] == outer.inputs[1]:
            return False
        # (the graph walk for the readers only where an Add of two MatMul results is an operand:
        # every Add of a model is a match)
        if not any(_plain_add(i.node) and all(_matmul_like(j) for j in i.node.inputs) for i in outer.inputs):
            return False
        uses = model.consumers()
        for k in (0, 1):
            inner, x = outer.inputs[k].node, outer.inputs[1 - k]
            if (not _plain_add(inner) or _sole_reader(uses, outer.inputs[k]) is not outer
                    or x.node.constant_value() is not None):
                continue
            first, second = inner.inputs
            tensors = (first, second, x, inner.output(0), outer.output(0))
            shape = _shape(outer.output(0))
            if (first == second or shape is None or any(_shape(t) != shape for t in tensors)
                    or any(t.element_type is not Type.f32 for t in tensors)
                    or not all(_sole_reader(uses, t) is inner and _projection(t, uses) for t in (first, second))):
                continue
            summed = Node.create(Add, [first, x], {}, name=f"{inner.name}/residual")
            total = Node.create(Add, [summed.output(0), second], {}, name=outer.name)
            model.replace_output(outer.output(0), total.output(0))
            return True
        return False
