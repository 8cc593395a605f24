"""Sub-graph patterns, a matcher, and the passes built on them (OpenVINO's ``MatcherPass`` and
``GraphRewrite``; the successor of Model Optimizer's ``FrontReplacementSubgraph``).

A pattern is a small tree (or DAG) of pattern nodes that describes the producer of one output
port::

    from opforge.transformations import pattern as p

    x = p.any_input(predicate=lambda out: out.element_type is Type.f32)
    add = p.op("Add", x, p.capture("bias", p.constant()), predicate=p.has_single_consumer)
    root = p.op(["Relu", "Clamp"], add)

A :class:`MatcherPass` returns such a root from ``pattern()`` and receives a :class:`Match` in
``callback(match, model)`` for every place in the graph where it matches, in deterministic
topological order. A pattern node object used twice in one pattern must match the same port
both times (that is how a DAG pattern says "the same tensor"); so must two captures of one name.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Union

import numpy as np

from opforge.element_type import Type
from opforge.errors import OpforgeError
from opforge.graph import Node, Output, Value, as_output
from opforge.op import Op
from opforge.transformations.base import Transformation

if TYPE_CHECKING:
    from opforge.graph import Model


class PatternError(OpforgeError, ValueError):
    """A pattern is malformed, or a match was asked for something it did not capture."""


class TransformationError(OpforgeError, RuntimeError):
    """A transformation failed as a whole (e.g. a :class:`GraphRewrite` that does not converge)."""


#: Element-wise binary ops whose two inputs may be swapped. An op class can also declare
#: ``commutative = True`` itself (plugins' ops are not listed here).
COMMUTATIVE_TYPES: frozenset[str] = frozenset({
    "Add", "Multiply", "Maximum", "Minimum", "Equal", "NotEqual",
    "LogicalAnd", "LogicalOr", "LogicalXor", "SquaredDifference",
})


# ============================================================================ match context
class MatchContext:
    """What predicates may consult besides the port itself: the model, and who reads each port.

    The consumer map is built on first use only (most patterns never ask), and is rebuilt after
    every successful replacement because the graph changed under it.
    """

    def __init__(self, model: Model) -> None:
        self.model = model
        self._consumers: dict[Output, list[tuple[Node, int]]] | None = None

    def consumers(self, out: Output) -> list[tuple[Node, int]]:
        """The (node, input index) pairs that read ``out``; a ``Result`` counts as a reader."""
        if self._consumers is None:
            self._consumers = self.model.consumers()
        return self._consumers.get(out, [])

    def invalidate(self) -> None:
        self._consumers = None


class Predicate:
    """A test on a matched port that may use the :class:`MatchContext` (e.g. consumer counts).

    Plain ``Callable[[Output], bool]`` functions are accepted wherever a predicate is, and are
    wrapped; build a ``Predicate`` directly only when the test needs the context. Predicates
    combine with ``&`` and ``|``.
    """

    def __init__(self, fn: Callable[[Output, MatchContext], bool], description: str = "predicate") -> None:
        self.fn = fn
        self.description = description

    def __call__(self, out: Output, ctx: MatchContext) -> bool:
        return bool(self.fn(out, ctx))

    def __and__(self, other: PredicateLike) -> Predicate:
        o = as_predicate(other)
        return Predicate(lambda out, ctx: self(out, ctx) and o(out, ctx),
                         f"({self.description} & {o.description})")

    def __or__(self, other: PredicateLike) -> Predicate:
        o = as_predicate(other)
        return Predicate(lambda out, ctx: self(out, ctx) or o(out, ctx),
                         f"({self.description} | {o.description})")

    def __repr__(self) -> str:
        return f"<Predicate {self.description}>"


PredicateLike = Union[Predicate, Callable[[Output], bool]]


def as_predicate(p: PredicateLike) -> Predicate:
    if isinstance(p, Predicate):
        return p
    if callable(p):
        fn = p
        return Predicate(lambda out, _ctx: fn(out), getattr(fn, "__name__", "predicate"))
    raise PatternError(f"a predicate must be callable, got {type(p).__name__}")


def consumers_count(n: int) -> Predicate:
    """The port is read by exactly ``n`` inputs (a ``Result`` counts)."""
    return Predicate(lambda out, ctx: len(ctx.consumers(out)) == n, f"consumers_count({n})")


#: The port has one reader: fusing its producer into that reader duplicates no computation.
has_single_consumer: Predicate = consumers_count(1)


def element_type_is(*types: Type) -> Predicate:
    """The port's element type is one of ``types``."""
    allowed = frozenset(types)
    return Predicate(lambda out, _ctx: out.element_type in allowed,
                     "element_type_is(" + ", ".join(t.ir for t in types) + ")")


def rank_is(rank: int) -> Predicate:
    """The port has a static rank equal to ``rank``."""
    return Predicate(lambda out, _ctx: out.partial_shape.rank == rank, f"rank_is({rank})")


#: The port's shape is fully static.
has_static_shape: Predicate = Predicate(
    lambda out, _ctx: out.partial_shape.rank is not None and None not in out.partial_shape.dims,
    "has_static_shape",
)


# ============================================================================ pattern nodes
#: What a partial match has bound so far: pattern nodes (by identity) and capture names -> ports.
Bindings = dict[Union["PatternNode", str], Output]


class PatternNode(abc.ABC):
    """One node of a pattern. It matches an output port of the graph."""

    def __init__(self, predicate: PredicateLike | None = None) -> None:
        self.predicate = as_predicate(predicate) if predicate is not None else None

    # Identity hashing (the object default) is what DAG patterns rely on: don't define __eq__.

    def match(self, out: Output, bindings: Bindings, ctx: MatchContext) -> Iterator[Bindings]:
        """Every way this pattern matches ``out`` consistently with ``bindings`` (backtracking)."""
        bound = bindings.get(self)
        if bound is not None:
            if bound == out:
                yield bindings
            return
        # Bind before descending so the node order of a match is root first, and so a pattern
        # node reused deeper in a DAG pattern sees this binding.
        yield from self._match(out, {**bindings, self: out}, ctx)

    @abc.abstractmethod
    def _match(self, out: Output, bindings: Bindings, ctx: MatchContext) -> Iterator[Bindings]:
        """Structure-specific matching; ``bindings`` already holds ``self -> out``. Checks the
        predicate after the structure, so a predicate may rely on e.g. the node's op type."""

    def _check_predicate(self, out: Output, ctx: MatchContext) -> bool:
        return self.predicate is None or self.predicate(out, ctx)


class AnyInput(PatternNode):
    """Any port (optionally filtered by a predicate)."""

    def _match(self, out: Output, bindings: Bindings, ctx: MatchContext) -> Iterator[Bindings]:
        if self._check_predicate(out, ctx):
            yield bindings

    def __repr__(self) -> str:
        return "any_input()"


class ConstantPattern(PatternNode):
    """The output of a ``Constant`` node, optionally with a given value or a value test."""

    def __init__(self, value: Any = None, predicate: PredicateLike | None = None) -> None:
        super().__init__(predicate)
        self.value = value

    def _match(self, out: Output, bindings: Bindings, ctx: MatchContext) -> Iterator[Bindings]:
        arr = out.node.constant_value()
        if arr is None or not self._value_ok(arr) or not self._check_predicate(out, ctx):
            return
        yield bindings

    def _value_ok(self, arr: np.ndarray) -> bool:
        if self.value is None:
            return True
        if callable(self.value):
            return bool(self.value(arr))
        want = np.asarray(self.value)
        # A scalar ``value`` matches a constant of any shape filled with it (``value=1`` finds
        # every multiply-by-one); an array must broadcast to the constant's shape.
        try:
            want = np.broadcast_to(want, arr.shape)
        except ValueError:
            return False
        return bool(np.array_equal(arr, want))

    def __repr__(self) -> str:
        return "constant()" if self.value is None else f"constant(value={self.value!r})"


class OpPattern(PatternNode):
    """An output of a node of one of ``types``, whose inputs match ``inputs`` (if given)."""

    def __init__(
        self,
        types: Sequence[str | type[Op]],
        inputs: Sequence[PatternNode] | None,
        predicate: PredicateLike | None = None,
        *,
        output: int | None = None,
        commutative: bool | None = None,
    ) -> None:
        super().__init__(predicate)
        if not types:
            raise PatternError("pattern.op() needs at least one op type")
        for t in types:
            if not (isinstance(t, str) or (isinstance(t, type) and issubclass(t, Op))):
                raise PatternError(f"pattern.op(): op types are type names or Op classes, got {t!r}")
        if inputs is not None:
            for i in inputs:
                if not isinstance(i, PatternNode):
                    raise PatternError(
                        f"pattern.op({_types_str(types)}): inputs must be pattern nodes "
                        f"(pattern.any_input(), pattern.constant(), ...), got {type(i).__name__}"
                    )
        self.types = tuple(types)
        self.inputs = tuple(inputs) if inputs is not None else None
        self.output = output
        self.commutative = commutative

    def type_matches(self, node: Node) -> bool:
        for t in self.types:
            if isinstance(t, str):
                if node.type_name == t:
                    return True
            elif issubclass(node.op, t):
                return True
        return False

    def _is_commutative(self, node: Node) -> bool:
        if self.commutative is not None:
            return self.commutative
        declared = getattr(node.op, "commutative", None)
        if isinstance(declared, bool):
            return declared
        # PaddlePaddle-style broadcast aligns the second input to the first: not symmetric.
        return node.type_name in COMMUTATIVE_TYPES and getattr(node.attrs, "auto_broadcast", "numpy") != "pdpd"

    def _match(self, out: Output, bindings: Bindings, ctx: MatchContext) -> Iterator[Bindings]:
        node = out.node
        if (self.output is not None and out.index != self.output) or not self.type_matches(node):
            return
        if not self._check_predicate(out, ctx):
            return
        if self.inputs is None:
            yield bindings
            return
        if len(node.inputs) != len(self.inputs):
            return
        yield from _match_inputs(self.inputs, node.inputs, bindings, ctx)
        if len(self.inputs) == 2 and node.inputs[0] != node.inputs[1] and self._is_commutative(node):
            swapped = [node.inputs[1], node.inputs[0]]
            yield from _match_inputs(self.inputs, swapped, bindings, ctx)

    def __repr__(self) -> str:
        ins = "" if self.inputs is None else ", " + ", ".join(repr(i) for i in self.inputs)
        return f"op({_types_str(self.types)}{ins})"


class Capture(PatternNode):
    """Names what ``inner`` matched, so the callback can ask ``match["name"]``."""

    def __init__(self, name: str, inner: PatternNode) -> None:
        super().__init__(None)
        if not isinstance(name, str) or not name:
            raise PatternError(f"pattern.capture(): the name must be a non-empty string, got {name!r}")
        if not isinstance(inner, PatternNode):
            raise PatternError(f"pattern.capture('{name}', ...): expected a pattern node, got {inner!r}")
        self.name = name
        self.inner = inner

    def _match(self, out: Output, bindings: Bindings, ctx: MatchContext) -> Iterator[Bindings]:
        bound = bindings.get(self.name)
        if bound is not None and bound != out:
            return  # two captures of one name must be the same tensor
        for b in self.inner.match(out, bindings, ctx):
            yield {**b, self.name: out}

    def __repr__(self) -> str:
        return f"capture({self.name!r}, {self.inner!r})"


class AnyOf(PatternNode):
    """The first of several sub-patterns that matches (tried in order, with backtracking)."""

    def __init__(self, alternatives: Sequence[PatternNode]) -> None:
        super().__init__(None)
        if not alternatives or not all(isinstance(a, PatternNode) for a in alternatives):
            raise PatternError("pattern.any_of() needs one or more pattern nodes")
        self.alternatives = tuple(alternatives)

    def _match(self, out: Output, bindings: Bindings, ctx: MatchContext) -> Iterator[Bindings]:
        for alt in self.alternatives:
            yield from alt.match(out, bindings, ctx)

    def __repr__(self) -> str:
        return "any_of(" + ", ".join(repr(a) for a in self.alternatives) + ")"


def _match_inputs(pats: Sequence[PatternNode], outs: Sequence[Output], bindings: Bindings,
                  ctx: MatchContext) -> Iterator[Bindings]:
    if not pats:
        yield bindings
        return
    for b in pats[0].match(outs[0], bindings, ctx):
        yield from _match_inputs(pats[1:], outs[1:], b, ctx)


def _types_str(types: Sequence[str | type[Op]]) -> str:
    names = [t if isinstance(t, str) else t.type_name for t in types]
    return repr(names[0]) if len(names) == 1 else repr(names)


# ============================================================================ constructors
def any_input(predicate: PredicateLike | None = None) -> AnyInput:
    """Any output port, e.g. ``any_input(predicate=lambda out: out.element_type is Type.f32)``."""
    return AnyInput(predicate)


def constant(value: Any = None, *, predicate: PredicateLike | None = None) -> ConstantPattern:
    """A ``Constant``'s output. ``value``: an array-like it must equal (a scalar matches a tensor
    filled with it), or a function ``(ndarray) -> bool`` on its value."""
    return ConstantPattern(value, predicate)


def op(
    types: str | type[Op] | Sequence[str | type[Op]],
    *inputs: PatternNode,
    predicate: PredicateLike | None = None,
    output: int | None = None,
    commutative: bool | None = None,
) -> OpPattern:
    """A node of ``types`` (a type name, an Op class matching it and its subclasses, or a list of
    alternatives). With no ``inputs`` the node's inputs are not checked; with inputs, the node
    must have exactly that many and each must match. ``output`` restricts which output port of a
    multi-output node matches. ``commutative`` (default: by op type) also tries the two inputs of
    a binary op swapped."""
    seq: Sequence[str | type[Op]] = [types] if isinstance(types, (str, type)) else list(types)
    return OpPattern(seq, inputs if inputs else None, predicate, output=output, commutative=commutative)


def scalar(want: float, tolerance: float = 0.0) -> ConstantPattern:
    """A one-element ``Constant`` (of any rank) within ``tolerance`` of ``want``: the 0.5, 1.0 and
    sqrt(2) of decomposed activations, which exporters store rounded."""
    def near(v: np.ndarray) -> bool:
        return v.size == 1 and abs(float(np.asarray(v, np.float64).reshape(-1)[0]) - want) <= tolerance

    return ConstantPattern(near)


def capture(name: str, inner: PatternNode | None = None) -> Capture:
    """Name a sub-pattern (``any_input()`` if omitted) so the callback can read ``match[name]``."""
    return Capture(name, inner if inner is not None else AnyInput())


def any_of(*alternatives: PatternNode) -> AnyOf:
    """Whichever of ``alternatives`` matches first."""
    return AnyOf(alternatives)


# ============================================================================ matching
class Match:
    """One place where a pattern matched: the root port, captured ports, and matched nodes."""

    def __init__(self, root: Output, bindings: Bindings, model: Model) -> None:
        self.root = root
        self.model = model
        self._bindings = bindings

    def __getitem__(self, key: str | PatternNode) -> Output:
        """The port a capture name, or a pattern node object of the pattern, matched."""
        out = self._bindings.get(key)
        if out is None:
            known = ", ".join(repr(k) for k in self.captures) or "none"
            raise PatternError(f"the match has no capture {key!r}; captured: {known}")
        return out

    def get(self, key: str | PatternNode) -> Output | None:
        return self._bindings.get(key)

    def __contains__(self, key: object) -> bool:
        return key in self._bindings

    def node(self, key: str | PatternNode) -> Node:
        return self[key].node

    def value(self, key: str | PatternNode) -> np.ndarray:
        """The constant value of a captured port."""
        out = self[key]
        v = out.node.constant_value()
        if v is None:
            raise PatternError(f"capture {key!r} is '{out.node.name}' ({out.node.type_name}), not a Constant")
        return v

    @property
    def captures(self) -> dict[str, Output]:
        return {k: v for k, v in self._bindings.items() if isinstance(k, str)}

    @property
    def nodes(self) -> list[Node]:
        """The nodes matched by op and constant patterns, root first, each once."""
        seen: dict[int, Node] = {}
        for k, v in self._bindings.items():
            if isinstance(k, (OpPattern, ConstantPattern)):
                seen.setdefault(v.node.id, v.node)
        return list(seen.values())

    @property
    def all_standard(self) -> bool:
        """Whether every matched node is a standard opset op. Fusions check this because a
        plugin's op that subclasses a standard one may mean something else."""
        return all(n.op.is_standard for n in self.nodes)

    def root_keeps_shape_of(self, key: str | PatternNode) -> bool:
        """Whether the root port has the partial shape of capture ``key``: a fusion that replaces
        the root by an op of ``x`` alone is wrong where a constant broadcast ``x`` to a larger shape."""
        return self.root.partial_shape == self[key].partial_shape

    def replace_root(self, new: Value) -> int:
        """Make every reader of the root port read ``new`` (tensor names move with it, see
        ``Model.replace_output``). Returns the number of uses changed. ``rt_info`` is not copied:
        ``new`` may be an existing node (``match["x"]``) whose info must not change."""
        return self.model.replace_output(self.root, as_output(new))

    def __repr__(self) -> str:
        caps = ", ".join(f"{k}={v.node.name}:{v.index}" for k, v in self.captures.items())
        return f"<Match root={self.root.node.name}:{self.root.index} {caps}>"


def find_matches(model: Model, root: PatternNode) -> list[Match]:
    """Every root port that ``root`` matches, in topological order (first binding each); for
    inspection and tests, as it does not change the model."""
    ctx = MatchContext(model)
    found = []
    for node in model.get_ordered_ops():
        for out in node.outputs():
            for b in root.match(out, {}, ctx):
                found.append(Match(out, b, model))
                break
    return found


class MatcherPass(Transformation):
    """A pass that replaces every match of ``pattern()`` through ``callback``.

    Subclasses set ``name``, ``stage`` and ``order`` and implement ``pattern()`` and
    ``callback(match, model) -> bool``; the callback builds the replacement (``opforge.op`` /
    ``Node.create``), rewires with ``model.replace_output`` (or ``match.replace_root``) and
    returns True, or returns False having changed nothing. When it declines, the next way the
    pattern matches at the same port (e.g. with commutative inputs swapped) is offered.

    One ``apply`` visits the nodes that existed when it started, producers first. After each
    replacement it skips nodes that the graph no longer reaches and refreshes consumer counts,
    so matches never overlap a replaced region; nodes the callback created are not visited until
    the next ``apply`` (a :class:`GraphRewrite` repeats to a fixed point).
    """

    @abc.abstractmethod
    def pattern(self) -> PatternNode:
        """The pattern's root."""

    @abc.abstractmethod
    def callback(self, match: Match, model: Model) -> bool:
        """Replace the matched sub-graph; return whether the model changed."""

    def apply(self, model: Model) -> bool:
        return self.run(model) > 0

    def run(self, model: Model) -> int:
        """Apply once; returns how many replacements the callback made."""
        root = self.pattern()
        if not isinstance(root, PatternNode):
            raise PatternError(
                f"transformation '{self.name or type(self).__name__}': pattern() returned "
                f"{type(root).__name__}, expected a pattern node (pattern.op(...))"
            )
        ctx = MatchContext(model)
        order = model.get_ordered_ops()
        live: set[int] | None = None  # None: everything in ``order`` is still in the graph
        count = 0
        for node in order:
            if live is not None and node.id not in live:
                continue
            if self._rewrite_at(node, root, model, ctx):
                count += 1
                ctx.invalidate()
                live = {n.id for n in model.get_ordered_ops()}
        return count

    def _rewrite_at(self, node: Node, root: PatternNode, model: Model, ctx: MatchContext) -> bool:
        for out in node.outputs():
            for bindings in root.match(out, {}, ctx):
                if self.callback(Match(out, bindings, model), model):
                    return True
        return False


class GraphRewrite(Transformation):
    """Runs matcher passes, in the order given, until none changes the model.

    A set of rewrites that keeps undoing each other never reaches a fixed point; after
    ``max_iterations`` rounds a :class:`TransformationError` names the passes still changing it.
    Subclasses set ``name``/``stage``/``order`` like any transformation.
    """

    name: ClassVar[str] = "graph_rewrite"
    max_iterations: ClassVar[int] = 100

    def __init__(self, *passes: MatcherPass, max_iterations: int | None = None) -> None:
        for p in passes:
            if not isinstance(p, MatcherPass):
                raise PatternError(
                    f"GraphRewrite '{self.name}': expected MatcherPass instances, got {type(p).__name__}"
                )
        self.passes: list[MatcherPass] = list(passes)
        self.iteration_limit = self.max_iterations if max_iterations is None else max_iterations
        if self.iteration_limit < 1:
            raise PatternError(f"GraphRewrite '{self.name}': max_iterations must be at least 1")

    def add(self, matcher: MatcherPass) -> MatcherPass:
        """Append a pass; returns it (OpenVINO's ``add_matcher``)."""
        if not isinstance(matcher, MatcherPass):
            raise PatternError(
                f"GraphRewrite '{self.name}': expected a MatcherPass instance, got {type(matcher).__name__}"
            )
        self.passes.append(matcher)
        return matcher

    def apply(self, model: Model) -> bool:
        changed_any = False
        last: list[str] = []
        for _ in range(self.iteration_limit):
            last = [p.name or type(p).__name__ for p in self.passes if p.apply(model)]
            if not last:
                return changed_any
            changed_any = True
        raise TransformationError(
            f"graph rewrite '{self.name}' did not converge after {self.iteration_limit} iterations: "
            f"pass(es) {', '.join(repr(n) for n in last)} still changed model '{model.name}' in the "
            "last one. Two rewrites probably undo each other, or a callback returns True without "
            "removing its match; fix the pattern or raise max_iterations."
        )
