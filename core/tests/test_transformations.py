"""Constant folding, dead-code elimination, the pattern matcher and pass ordering."""

from __future__ import annotations

import types
from typing import Any, ClassVar

import numpy as np
import opforge
import pytest
from opforge import Model, Node, Op, Output, TensorSpec, Type
from opforge.graph import Value
from opforge.op import InferContext
from opforge.opset._elementwise import UnaryElementwise
from opforge.plugins import PluginInfo, PluginSystem
from opforge.reference import evaluate_model
from opforge.transformations import (
    ConstantFolding,
    DeadCodeElimination,
    GraphRewrite,
    Match,
    MatcherPass,
    PatternError,
    PatternNode,
    Transformation,
    TransformationError,
    find_matches,
    run_transformations,
)
from opforge.transformations import pattern as p


# ============================================================================ helpers
def param(name: str = "x", shape: tuple[int, ...] = (2, 3), et: Type = Type.f32) -> Node:
    return opforge.op("Parameter", element_type=et, shape=list(shape), name=name)


def const(value: Any, name: str | None = None, dtype: Any = np.float32) -> Node:
    return opforge.op("Constant", value=np.asarray(value, dtype=dtype), name=name)


def add(a: Value, b: Value, name: str | None = None) -> Node:
    return opforge.op("Add", a, b, name=name)


def relu(a: Value, name: str | None = None) -> Node:
    return opforge.op("Relu", a, name=name)


def layout(model: Model) -> list[tuple[str, str]]:
    return [(n.name, n.type_name) for n in model.get_ordered_ops()]


def types_of(model: Model) -> list[str]:
    return [n.type_name for n in model.get_ordered_ops()]


class AddRelu(Op):
    """Test-only fused op: max(x + b, 0)."""

    type_name = "AddRelu"
    version = "test_ext"
    min_inputs = 2
    max_inputs = 2

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        return [TensorSpec(ctx.input_type(0), ctx.input_shape(0))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        x, b = inputs
        return [np.maximum(x + b, 0).astype(x.dtype)]


class TestNeg(UnaryElementwise):
    """Test-only unary op: -x."""

    __test__ = False  # not a pytest test class
    type_name = "TestNeg"
    version = "test_ext"

    @classmethod
    def compute(cls, attrs: Any, x: np.ndarray) -> np.ndarray:
        return np.negative(x)


class FuseAddRelu(MatcherPass):
    """Relu(Add(x, const)) -> AddRelu(x, const), when the Add feeds only the Relu."""

    name: ClassVar[str] = "fuse_add_relu"
    stage: ClassVar[str] = "middle"
    order: ClassVar[int] = 50

    def pattern(self) -> PatternNode:
        add_p = p.op("Add", p.capture("x"), p.capture("bias", p.constant()),
                     predicate=p.has_single_consumer)
        return p.op("Relu", add_p)

    def callback(self, match: Match, model: Model) -> bool:
        root = match.root.node
        fused = Node.create(AddRelu, [match["x"], match["bias"]], name=f"{root.name}/fused")
        match.replace_root(fused)
        return True


def relu_add_model() -> Model:
    x = param("x")
    a = add(x, const(np.ones((2, 3)), "b"), "add")
    r = relu(a, "relu")
    r.output(0).set_names(["y"])
    return Model([r], name="m")


# ============================================================================ constant folding
def test_constant_chain_folds_to_one_constant() -> None:
    c1 = const([[1, -2, 3]], "c1")
    c2 = const([[1, 1, -5]], "c2")
    r = relu(add(c1, c2, "a1"), "r1")
    out = add(r, const([[10, 10, 10]], "c3"), "a2")
    model = Model([out])

    assert ConstantFolding().apply(model) is True
    assert types_of(model) == ["Constant", "Result"]
    folded = model.output(0).node
    np.testing.assert_array_equal(folded.constant_value(), np.array([[12, 10, 10]], np.float32))
    assert folded.name == "a2"
    assert ConstantFolding().apply(model) is False


def test_folding_keeps_tensor_names_and_rt_info() -> None:
    r = relu(const([-1.0, 2.0], "c"), "r")
    r.output(0).set_names(["out", "out_alias"])
    r.rt_info["origin"] = "frontend"
    model = Model([r])
    ConstantFolding().apply(model)
    port = model.output("out")
    assert port.node.type_name == "Constant"
    assert port.names == ["out", "out_alias"]
    assert port.node.rt_info["origin"] == "frontend"
    model.validate()


def test_node_with_a_parameter_input_is_not_folded() -> None:
    model = Model([add(param("x"), const(np.ones((2, 3)), "c"), "a")])
    before = layout(model)
    assert ConstantFolding().apply(model) is False
    assert layout(model) == before


def test_disable_constant_folding_is_respected() -> None:
    a = add(const([1.0], "c1"), const([2.0], "c2"), "a")
    r = relu(a, "r")
    r.rt_info["disable_constant_folding"] = True
    model = Model([r])
    assert ConstantFolding().apply(model) is True  # the Add still folds...
    assert types_of(model) == ["Constant", "Relu", "Result"]  # ...the marked Relu does not
    assert model.node("r").inputs[0].node.name == "a"


# ============================================================================ dead code
def test_duplicate_small_constants_are_merged() -> None:
    x = param("x")
    a1 = add(x, const(np.full((2, 3), 2.0), "k1"), "a1")
    a2 = add(a1, const(np.full((2, 3), 2.0), "k2"), "a2")
    model = Model([a2])
    assert DeadCodeElimination().apply(model) is True
    consts = [n for n in model.get_ordered_ops() if n.type_name == "Constant"]
    assert [c.name for c in consts] == ["k1"]
    assert model.node("a2").inputs[1] == model.node("a1").inputs[1]
    np.testing.assert_array_equal(evaluate_model(model, [np.zeros((2, 3), np.float32)])[0],
                                  np.full((2, 3), 4.0, np.float32))
    assert DeadCodeElimination().apply(model) is False


def test_named_large_or_different_constants_are_not_merged() -> None:
    x = param("x", (1024,))
    named = const(np.ones(3), "named")
    named.output(0).set_names(["w"])
    a = add(param("y", (3,)), named, "a")
    b = add(a, const(np.ones(3), "plain"), "b")
    big1 = add(x, const(np.ones(1024), "big1"), "big_a")
    big2 = add(big1, const(np.ones(1024), "big2"), "big_b")
    other = add(b, const(np.zeros(3), "zeros"), "c")
    int_c = add(param("z", (3,), Type.i32), const(np.ones(3), "ints", np.int32), "d")
    model = Model([other, big2, int_c])
    before = layout(model)
    assert DeadCodeElimination().apply(model) is False
    assert layout(model) == before


# ============================================================================ pattern matcher
def test_fusion_pass_replaces_and_preserves_semantics() -> None:
    model = relu_add_model()
    xs = np.array([[-3, 0, 1], [2, -1, -0.5]], np.float32)
    expected = evaluate_model(model, [xs])[0]

    assert FuseAddRelu().apply(model) is True
    assert layout(model) == [("x", "Parameter"), ("b", "Constant"), ("relu/fused", "AddRelu"),
                             ("relu/result", "Result")]
    assert model.output(0).names == ["y"]
    model.validate()
    np.testing.assert_array_equal(evaluate_model(model, [xs])[0], expected)
    assert FuseAddRelu().apply(model) is False


def test_replacement_is_order_deterministic() -> None:
    def build() -> Model:
        x = param("x")
        outs = []
        for i in range(4):
            r = relu(add(x, const(np.full((2, 3), float(i)), f"b{i}"), f"add{i}"), f"relu{i}")
            outs.append(r)
        chained = relu(add(outs[0], const(np.ones((2, 3)), "bc"), "addc"), "reluc")
        return Model([*outs[1:], chained], name="det")

    seen: list[list[str]] = []

    class Recording(FuseAddRelu):
        def callback(self, match: Match, model: Model) -> bool:
            seen[-1].append(match.root.node.name)
            return super().callback(match, model)

    results = []
    for _ in range(2):
        seen.append([])
        m = build()
        assert Recording().apply(m)
        results.append(layout(m))
    assert results[0] == results[1]
    assert seen[0] == seen[1]
    assert sorted(seen[0]) == ["relu0", "relu1", "relu2", "relu3", "reluc"]
    assert seen[0].index("relu0") < seen[0].index("reluc")  # producers are visited first


def test_captures_and_match_accessors() -> None:
    model = relu_add_model()
    x_p = p.any_input()
    bias = p.capture("bias", p.constant())
    add_p = p.op("Add", x_p, bias)
    (m,) = find_matches(model, p.op("Relu", add_p))
    assert m.root == model.node("relu").output(0)
    assert m["bias"].node.name == "b" and m.node("bias").name == "b"
    np.testing.assert_array_equal(m.value("bias"), np.ones((2, 3), np.float32))
    assert m[x_p].node.name == "x"  # pattern node objects work as keys too
    assert m[add_p].node.name == "add"
    assert set(m.captures) == {"bias"}
    assert [n.name for n in m.nodes] == ["relu", "add", "b"]
    assert "bias" in m and "nope" not in m and m.get("nope") is None
    with pytest.raises(PatternError, match="no capture 'nope'"):
        m["nope"]
    with pytest.raises(PatternError, match="not a Constant"):
        m.value(x_p)


def test_same_pattern_node_or_capture_name_must_bind_the_same_port() -> None:
    x, y = param("x"), param("y")
    model = Model([add(x, x, "xx"), add(x, y, "xy")])
    same = p.any_input()
    assert [m.root.node.name for m in find_matches(model, p.op("Add", same, same))] == ["xx"]
    named = p.op("Add", p.capture("t"), p.capture("t"))
    assert [m.root.node.name for m in find_matches(model, named)] == ["xx"]


def test_predicates_filter_matches() -> None:
    x32 = param("x32")
    xi = param("xi", (2, 3), Type.i32)
    model = Model([
        add(x32, const(np.zeros((2, 3)), "zero"), "a_zero"),
        add(x32, const([1.0, 2.0, 3.0], "pos"), "a_pos"),
        add(xi, const(np.full((2, 3), -1), "neg", np.int32), "a_int"),
    ])

    def roots(pat: PatternNode) -> list[str]:
        return [m.root.node.name for m in find_matches(model, pat)]

    f32 = p.any_input(predicate=lambda out: out.element_type is Type.f32)
    assert roots(p.op("Add", f32, p.constant())) == ["a_zero", "a_pos"]
    assert roots(p.op("Add", p.any_input(), p.constant(value=0))) == ["a_zero"]
    assert roots(p.op("Add", p.any_input(), p.constant(value=[1, 2, 3]))) == ["a_pos"]
    assert roots(p.op("Add", p.any_input(), p.constant(value=lambda v: bool((v < 0).all())))) == ["a_int"]
    assert roots(p.op("Add", p.any_input(predicate=p.element_type_is(Type.i32)), p.any_input())) == ["a_int"]
    assert roots(p.op("Add", predicate=lambda out: out.node.name.endswith("pos"))) == ["a_pos"]
    assert roots(p.op("Add", p.any_input(predicate=p.rank_is(2) & p.has_static_shape),
                      p.constant(predicate=p.rank_is(1)))) == ["a_pos"]
    assert roots(p.op("Add", p.any_input(), p.constant(predicate=p.rank_is(1) | p.element_type_is(Type.i32)))) \
        == ["a_pos", "a_int"]
    # x32 feeds two Adds; xi feeds one.
    assert roots(p.op("Add", p.any_input(predicate=p.has_single_consumer), p.constant())) == ["a_int"]
    assert roots(p.op("Add", p.any_input(predicate=p.consumers_count(2)), p.constant())) \
        == ["a_zero", "a_pos"]


def test_single_consumer_check_blocks_a_fusion_that_would_duplicate_work() -> None:
    x = param("x")
    a = add(x, const(np.ones((2, 3)), "b"), "add")
    model = Model([relu(a, "relu"), a])  # the Add is also a model output
    before = layout(model)
    assert FuseAddRelu().apply(model) is False
    assert layout(model) == before


def test_type_alternatives_and_op_classes() -> None:
    from opforge.opset.relu import Relu

    x = param("x")
    model = Model([relu(x, "r"), Node.create(TestNeg, [x], name="n"), add(x, x, "a")])

    def roots(pat: PatternNode) -> list[str]:
        return [m.root.node.name for m in find_matches(model, pat)]

    assert roots(p.op(["Relu", "TestNeg"], p.any_input())) == ["r", "n"]
    assert roots(p.op([Relu, TestNeg], p.any_input())) == ["r", "n"]
    assert roots(p.op(UnaryElementwise)) == ["r", "n"]  # an Op class matches its subclasses
    assert roots(p.any_of(p.op("TestNeg"), p.op("Add", p.any_input(), p.any_input()))) == ["n", "a"]
    with pytest.raises(PatternError, match="at least one op type"):
        p.op([])
    with pytest.raises(PatternError, match="pattern nodes"):
        p.op("Add", "x")  # type: ignore[arg-type]


def test_commutative_match() -> None:
    x = param("x")
    model = Model([add(const(np.ones((2, 3)), "c"), x, "const_first")])
    pat = p.op("Add", p.capture("x", p.any_input(predicate=lambda o: o.node.type_name == "Parameter")),
               p.capture("c", p.constant()))
    (m,) = find_matches(model, pat)
    assert m["x"].node.name == "x" and m["c"].node.name == "c"
    assert find_matches(model, p.op("Add", p.any_input(), p.constant(), commutative=False)) == []

    # A test-only binary op is not commutative unless the pattern or the op class says so.
    class Pair(Op):
        type_name = "Pair"
        version = "test_ext"
        min_inputs = max_inputs = 2

        @classmethod
        def infer(cls, ctx: InferContext) -> list[TensorSpec]:
            return [TensorSpec(ctx.input_type(1), ctx.input_shape(1))]

    class SymPair(Pair):
        type_name = "SymPair"
        commutative = True

    model2 = Model([Node.create(Pair, [const(np.ones((2, 3)), "k"), x], name="pair"),
                    Node.create(SymPair, [const(np.ones((2, 3)), "k2"), x], name="sym")])
    any_pair = p.op([Pair], p.any_input(), p.constant())
    assert [m.root.node.name for m in find_matches(model2, any_pair)] == ["sym"]
    forced = p.op([Pair], p.any_input(), p.constant(), commutative=True)
    assert [m.root.node.name for m in find_matches(model2, forced)] == ["pair", "sym"]


def test_commutative_alternative_is_offered_when_callback_declines() -> None:
    a = const(np.ones((2, 3)), "a")
    b = const(np.full((2, 3), 2.0), "b")
    model = Model([add(a, b, "s")])
    offers: list[tuple[str, str]] = []

    class TakeSecond(MatcherPass):
        name: ClassVar[str] = "take_second"

        def pattern(self) -> PatternNode:
            return p.op("Add", p.capture("l", p.constant()), p.capture("r", p.constant()))

        def callback(self, match: Match, model: Model) -> bool:
            offers.append((match.node("l").name, match.node("r").name))
            return match.node("l").name == "b"

    assert TakeSecond().apply(model) is True
    assert offers == [("a", "b"), ("b", "a")]


def test_multiple_non_overlapping_matches_and_chained_rewrites() -> None:
    x = param("x")
    r1 = relu(add(x, const(np.ones((2, 3)), "b1"), "add1"), "relu1")
    r2 = relu(add(r1, const(np.ones((2, 3)), "b2"), "add2"), "relu2")
    r3 = relu(add(x, const(np.ones((2, 3)), "b3"), "add3"), "relu3")
    model = Model([r2, r3])
    xs = np.linspace(-3, 3, 6, dtype=np.float32).reshape(2, 3)
    expected = evaluate_model(model, [xs])

    assert FuseAddRelu().run(model) == 3
    assert [n.name for n in model.get_ordered_ops() if n.type_name == "AddRelu"] \
        == ["relu1/fused", "relu2/fused", "relu3/fused"]
    assert "Add" not in types_of(model) and "Relu" not in types_of(model)
    assert model.node("relu2/fused").inputs[0].node.name == "relu1/fused"
    for got, want in zip(evaluate_model(model, [xs]), expected):
        np.testing.assert_array_equal(got, want)


def test_overlapping_candidates_are_not_matched_twice() -> None:
    # Add(Add(x, c), c) -> Add(x, c + c) on a chain: after the first rewrite the next Add sees
    # the new node, and the replaced interior node is never offered again.
    class FoldAddChain(MatcherPass):
        name: ClassVar[str] = "fold_add_chain"

        def pattern(self) -> PatternNode:
            inner = p.op("Add", p.capture("x"), p.capture("c1", p.constant()), predicate=p.has_single_consumer)
            return p.op("Add", inner, p.capture("c2", p.constant()))

        def callback(self, match: Match, model: Model) -> bool:
            c = const(match.value("c1") + match.value("c2"), f"{match.root.node.name}/c")
            match.replace_root(add(match["x"], c, f"{match.root.node.name}/folded"))
            return True

    x = param("x")
    node: Value = x
    for i in range(4):
        node = add(node, const(np.full((2, 3), float(i + 1)), f"c{i}"), f"a{i}")
    model = Model([node])
    roots: list[str] = []
    orig = FoldAddChain.callback

    def spy(self: FoldAddChain, match: Match, model: Model) -> bool:
        roots.append(match.root.node.name)
        return orig(self, match, model)

    FoldAddChain.callback = spy  # type: ignore[method-assign]
    try:
        assert FoldAddChain().run(model) == 3
    finally:
        FoldAddChain.callback = orig  # type: ignore[method-assign]
    assert roots == ["a1", "a2", "a3"]
    assert types_of(model) == ["Parameter", "Constant", "Add", "Result"]
    np.testing.assert_array_equal(model.output(0).node.inputs[1].node.constant_value(),
                                  np.full((2, 3), 10.0, np.float32))


def test_no_match_leaves_the_model_unchanged() -> None:
    x = param("x")
    model = Model([relu(x, "r")])
    before = layout(model)
    assert FuseAddRelu().apply(model) is False
    assert layout(model) == before


def test_pattern_must_return_a_pattern_node() -> None:
    class Broken(MatcherPass):
        name: ClassVar[str] = "broken"

        def pattern(self) -> PatternNode:
            return "Relu"  # type: ignore[return-value]

        def callback(self, match: Match, model: Model) -> bool:
            return False

    with pytest.raises(PatternError, match=r"'broken'.*pattern node"):
        Broken().apply(relu_add_model())


# ============================================================================ GraphRewrite
class DropAddZero(MatcherPass):
    name: ClassVar[str] = "drop_add_zero"

    def pattern(self) -> PatternNode:
        return p.op("Add", p.capture("x"), p.constant(value=0))

    def callback(self, match: Match, model: Model) -> bool:
        match.replace_root(match["x"])
        return True


class MergeReluRelu(MatcherPass):
    name: ClassVar[str] = "merge_relu_relu"

    def pattern(self) -> PatternNode:
        return p.op("Relu", p.capture("inner", p.op("Relu")))

    def callback(self, match: Match, model: Model) -> bool:
        match.replace_root(match["inner"])
        return True


def test_graph_rewrite_runs_to_a_fixed_point() -> None:
    x = param("x")
    zero = const(np.zeros((2, 3)), "zero")
    r = relu(add(relu(add(relu(x, "r1"), zero, "z1"), "r2"), zero, "z2"), "r3")
    r.output(0).set_names(["y"])
    model = Model([r])

    calls: list[str] = []

    class Counting(MergeReluRelu):
        def apply(self, model: Model) -> bool:
            calls.append(self.name)
            return super().apply(model)

    # MergeReluRelu only finds Relu(Relu) after DropAddZero has run: it needs a second round.
    rewrite = GraphRewrite(Counting(), DropAddZero())
    assert rewrite.apply(model) is True
    assert layout(model) == [("x", "Parameter"), ("r1", "Relu"), ("r3/result", "Result")]
    assert model.output(0).names == ["y"]
    assert len(calls) == 3  # change, change, nothing
    assert rewrite.apply(model) is False


def test_graph_rewrite_reports_non_convergence() -> None:
    class SwapAdd(MatcherPass):
        name: ClassVar[str] = "swap_add"

        def pattern(self) -> PatternNode:
            return p.op("Add", p.capture("a"), p.capture("b"), commutative=False)

        def callback(self, match: Match, model: Model) -> bool:
            match.replace_root(add(match["b"], match["a"]))
            return True

    class Flip(GraphRewrite):
        name: ClassVar[str] = "flip_rewrite"

    model = Model([add(param("x"), param("y"))])
    rewrite = Flip(SwapAdd(), DropAddZero(), max_iterations=5)
    with pytest.raises(TransformationError, match=r"'flip_rewrite'.*5 iterations.*'swap_add'") as err:
        rewrite.apply(model)
    assert "drop_add_zero" not in str(err.value)
    with pytest.raises(PatternError):
        GraphRewrite(max_iterations=0)
    with pytest.raises(PatternError, match="MatcherPass"):
        GraphRewrite(ConstantFolding())  # type: ignore[arg-type]


def test_graph_rewrite_add_and_empty() -> None:
    rw = GraphRewrite()
    model = relu_add_model()
    assert rw.apply(model) is False
    rw.add(FuseAddRelu())
    assert rw.apply(model) is True
    assert "AddRelu" in types_of(model)


# ============================================================================ registration and order
def test_transformation_registered_through_a_plugin_module() -> None:
    mod = types.ModuleType("opforge_test_transformation_plugin")

    @opforge.hookimpl
    def opforge_register_transformations(register: Any) -> None:
        register(FuseAddRelu())

    mod.opforge_register_transformations = opforge_register_transformations  # type: ignore[attr-defined]
    ps = PluginSystem(autoload=False)
    assert ps.register_module(mod, PluginInfo("t")) is True
    assert isinstance(ps.transformations.lookup("fuse_add_relu"), FuseAddRelu)
    assert ps.provides("t")["transformations"] == ["fuse_add_relu"]
    reg = ps.transformations.registration("fuse_add_relu")
    assert reg is not None and reg.plugin == PluginInfo("t")

    model = relu_add_model()
    changed = run_transformations(model, [t for _, t in ps.transformations.items()])
    assert changed == ["fuse_add_relu"]
    assert "AddRelu" in types_of(model)


def test_run_transformations_orders_by_stage_order_name() -> None:
    ran: list[str] = []

    def make(name_: str, stage_: str, order_: int, changes: bool) -> Transformation:
        class T(Transformation):
            name: ClassVar[str] = name_
            stage: ClassVar[str] = stage_
            order: ClassVar[int] = order_

            def apply(self, model: Model) -> bool:
                ran.append(self.name)
                return changes

        return T()

    passes = [
        make("back_a", "back", 1, True),
        make("mid_b", "middle", 5, False),
        make("mid_a", "middle", 5, True),
        make("front_late", "front", 200, False),
        make("front_early", "front", 0, True),
        make("mid_first", "middle", 1, False),
    ]
    expected = ["front_early", "front_late", "mid_first", "mid_a", "mid_b", "back_a"]
    model = relu_add_model()
    assert run_transformations(model, passes) == ["front_early", "mid_a", "back_a"]
    assert ran == expected
    ran.clear()
    run_transformations(model, list(reversed(passes)))
    assert ran == expected


def test_outputs_are_hashable_ports() -> None:
    # The matcher keys bindings by port: two Output objects for one port must be equal.
    x = param("x")
    assert Output(x, 0) == x.output(0) and len({Output(x, 0), x.output(0)}) == 1
