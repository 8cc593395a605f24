"""The executor: fusions, memory plan, threads and streams, dynamic shapes, profiling, errors."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import opforge
import pytest
from cpu_testing import check, const, make_plugins, param, rand
from opforge.errors import InferenceInputError, InputTypeError, KernelError
from opforge.graph import Model


def conv_block(residual: bool = True, act: str = "Relu") -> tuple[Model, list[np.ndarray]]:
    x = param("x", [1, 8, 10, 10])
    w = const(rand((8, 8, 3, 3), seed=1) * 0.2)
    conv = opforge.op("Convolution", x, w, strides=[1, 1], pads_begin=[1, 1], pads_end=[1, 1], dilations=[1, 1],
                      name="conv")
    g, b, m, v = (const(rand((8,), seed=s, low=0.5, high=1.5)) for s in range(2, 6))
    bn = opforge.op("BatchNormInference", conv, g, b, m, v, epsilon=1e-5, name="bn")
    y = opforge.op("Add", bn, x, name="residual") if residual else bn
    y = opforge.op(act, y, name="act") if act == "Relu" else opforge.op("Clamp", y, min=0.0, max=6.0, name="act")
    return Model([y], [x], name="block"), [rand((1, 8, 10, 10), seed=7)]


@pytest.mark.parametrize("residual", [True, False])
@pytest.mark.parametrize("act", ["Relu", "Clamp"])
def test_conv_fusion_matches_reference(core: Any, residual: bool, act: str) -> None:
    model, feeds = conv_block(residual, act)
    check(core, model, feeds, rtol=1e-4, atol=1e-4)
    compiled = core.compile_model(model, "CPU")
    steps = compiled._executable.programs()[((1, 8, 10, 10),)].program.steps()
    kernels = [s for s in steps if s["type"] != "Reorder"]
    # conv + BN (folded) + residual add + activation: one oneDNN primitive
    assert len(kernels) == 1, steps
    assert set(kernels[0]["fused_names"]) >= {"conv", "act"}


def test_fused_equals_unfused(core: Any) -> None:
    model, feeds = conv_block(True, "Relu")
    fused = core.compile_model(model, "CPU")(feeds)[0]
    # The same graph with a second reader of the conv output cannot fuse: compare both paths.
    x = model.parameters[0]
    act = model.results[0].inputs[0].node
    extra = opforge.op("Multiply", act.inputs[0].node.inputs[0], const(np.float32(0)), name="probe")
    unfused_model = Model([act, extra], [x], name="unfused")
    unfused = core.compile_model(unfused_model, "CPU")(feeds)[0]
    np.testing.assert_allclose(fused, unfused, rtol=1e-5, atol=1e-5)


def gelu_mlp() -> tuple[Model, list[np.ndarray]]:
    x = param("x", [4, 16])
    h = opforge.op("MatMul", x, const(rand((16, 32), seed=1) * 0.3), name="fc1")
    h = opforge.op("Add", h, const(rand((32,), seed=2)), name="bias1")
    # The exporters' erf GELU: x * 0.5 * (1 + erf(x / sqrt(2)))
    e = opforge.op("Erf", opforge.op("Divide", h, const(np.float32(1.4142135)), name="div"), name="erf")
    e = opforge.op("Add", e, const(np.float32(1.0)), name="one")
    g = opforge.op("Multiply", opforge.op("Multiply", h, e, name="mul"), const(np.float32(0.5)), name="half")
    y = opforge.op("MatMul", g, const(rand((32, 16), seed=3) * 0.3), name="fc2")
    y = opforge.op("Add", y, x, name="residual")
    return Model([y], [x], name="mlp"), [rand((4, 16), seed=4)]


def test_matmul_gelu_fusion(core: Any) -> None:
    model, feeds = gelu_mlp()
    check(core, model, feeds, rtol=1e-4, atol=1e-4)
    steps = core.compile_model(model, "CPU")._executable.programs()[((4, 16),)].program.steps()
    assert [s["type"] for s in steps] == ["MatMul", "MatMul"], steps


def test_layer_norm_fusion(core: Any) -> None:
    x = param("x", [2, 5, 8])
    ax = const(np.array([-1], np.int64), np.int64)
    mvn = opforge.op("MVN", x, ax, normalize_variance=True, eps=1e-5, eps_mode="inside_sqrt", name="mvn")
    y = opforge.op("Add", opforge.op("Multiply", mvn, const(rand((8,), seed=1))), const(rand((8,), seed=2)))
    model = Model([y], [x])
    check(core, model, [rand((2, 5, 8))], rtol=1e-5, atol=1e-5)
    steps = core.compile_model(model, "CPU")._executable.programs()[((2, 5, 8),)].program.steps()
    assert len(steps) == 1 and steps[0]["impl"].startswith("layer_norm")


def test_memory_plan_reuses_buffers(core: Any) -> None:
    x = param("x", [64, 64])
    y = x
    for i in range(12):
        y = opforge.op("Relu" if i % 2 else "Sigmoid", opforge.op("Add", y, const(np.float32(0.1))))
    model = Model([y], [x])
    compiled = core.compile_model(model, "CPU")
    plan = compiled._executable.programs()[((64, 64),)].program.memory_plan()
    # 25 tensors of 16 KiB; in-place element-wise ops need only a couple of buffers.
    assert plan["arena_bytes"] <= 3 * 64 * 64 * 4, plan
    check(core, model, [rand((64, 64))])


def test_concurrent_requests_equal_serial() -> None:
    core = opforge.Core(make_plugins())
    model, _ = gelu_mlp()
    compiled = core.compile_model(model, "CPU", {"NUM_STREAMS": 4, "INFERENCE_NUM_THREADS": 1})
    inputs = [rand((4, 16), seed=s) for s in range(8)]
    serial = [compiled.create_infer_request().infer([a])[0].copy() for a in inputs]
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        req = compiled.create_infer_request()
        try:
            for _ in range(50):
                out = req.infer([inputs[i]])[0]
                np.testing.assert_array_equal(out, serial[i])
        except BaseException as err:  # noqa: BLE001 - reported by the main thread
            errors.append(err)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_bad_inputs_give_core_errors(core: Any) -> None:
    model, feeds = gelu_mlp()
    compiled = core.compile_model(model, "CPU")
    with pytest.raises(InferenceInputError, match="wrong shape"):
        compiled([rand((4, 15))])
    with pytest.raises(InputTypeError, match="element type"):
        compiled([feeds[0].astype(np.float64)])


def test_kernel_error_names_the_node(core: Any) -> None:
    x = param("x", [3], "i64")
    data = const(rand((4, 2)), name="table")
    g = opforge.op("Gather", data, x, const(np.array(0, np.int64), np.int64), name="lookup")
    compiled = core.compile_model(Model([g], [x]), "CPU")
    with pytest.raises(KernelError, match=r"node 'lookup' \(Gather\).*index 9 is out of range"):
        compiled([np.array([0, 9, 1], np.int64)])


def test_dynamic_shapes_replan_per_shape(core: Any) -> None:
    x = param("x", [None, 16])
    w = const(rand((16, 8), seed=1))
    y = opforge.op("Relu", opforge.op("MatMul", x, w))
    model = Model([y], [x])
    compiled = core.compile_model(model, "CPU")
    for n in (1, 5, 1, 3):
        a = rand((n, 16), seed=n)
        np.testing.assert_allclose(compiled([a])[0], np.maximum(a @ w.attrs.value, 0), rtol=1e-5, atol=1e-5)
    assert sorted(k[0][0] for k in compiled._executable.programs()) == [1, 3, 5]


def test_profiling_counters(core: Any) -> None:
    model, feeds = conv_block()
    compiled = core.compile_model(model, "CPU", {"ENABLE_PROFILING": True})
    req = compiled.create_infer_request()
    req.infer(feeds)
    rows = req.get_profiling_info()
    assert rows and all(r["real_time_ms"] >= 0 for r in rows)
    assert any("conv" in r["fused_names"] for r in rows)


def test_threads_property(core: Any) -> None:
    model, feeds = gelu_mlp()
    for n in (1, 2):
        compiled = core.compile_model(model, "CPU", {"INFERENCE_NUM_THREADS": n})
        assert compiled.get_property("INFERENCE_NUM_THREADS") == n
        check(core, model, feeds, rtol=1e-4, atol=1e-4, config={"INFERENCE_NUM_THREADS": n})


def test_query_model_is_exact(core: Any) -> None:
    model, _ = conv_block()
    supported = core.query_model(model, "CPU")
    assert set(supported) == {n.name for n in model.get_ordered_ops()}


def test_steady_state_allocates_nothing(core: Any) -> None:
    model, feeds = conv_block()
    compiled = core.compile_model(model, "CPU")
    req = compiled.create_infer_request()

    def rss_kib() -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4

    for _ in range(200):
        req.infer(feeds)
    before = rss_kib()
    for _ in range(2000):
        req.infer(feeds)
    assert rss_kib() - before < 2048, "RSS grew by more than 2 MiB over 2000 inferences"


def test_program_cache_is_lru_and_bounded(core: Any) -> None:
    from opforge.planning import PLAN_CACHE_SIZE

    p = param("x", [None, 4])
    model = Model([opforge.op("Relu", p).output(0)], [p])
    compiled = core.compile_model(model, "CPU")
    ex = compiled._executable
    assert ex.plans.capacity == PLAN_CACHE_SIZE
    ex.plans.capacity = 3
    request = compiled.create_infer_request()
    for n in (1, 2, 3, 1, 4, 5):  # 1 is used again before 4 arrives, so 2 and 3 are the ones dropped
        x = rand((n, 4), seed=n)
        (y,) = request.infer([x]).to_tuple()
        np.testing.assert_array_equal(y, np.maximum(x, 0))
    assert [k[0][0] for k in ex.programs()] == [1, 4, 5]
    assert [k[0][0] for k in request._state.plan_keys()] == [1, 4, 5]  # per-request states: same bound
    # A dropped shape comes back: planned again, same results.
    x = rand((2, 4), seed=9)
    np.testing.assert_array_equal(compiled([x]).to_tuple()[0], np.maximum(x, 0))
    assert len(ex.programs()) == 3


def test_decomposed_layer_norm_becomes_mvn(core: Any) -> None:
    """d = x - mean(x); y = d * (1 / sqrt(mean(d * d) + eps)) * g + b (as exporters write it) -> one MVN step."""
    x = param("x", [2, 5, 8])
    ax = const(np.array([-1], np.int64), np.int64)
    mean = opforge.op("ReduceMean", x, ax, keep_dims=True)
    d = opforge.op("Subtract", x, mean)
    var = opforge.op("ReduceMean", opforge.op("Multiply", d, d), ax, keep_dims=True)
    s = opforge.op("Sqrt", opforge.op("Add", var, const(np.array(1e-5, np.float32))))
    r = opforge.op("Divide", const(np.array(1.0, np.float32)), s)
    y = opforge.op("Multiply", d, r)
    y = opforge.op("Add", opforge.op("Multiply", y, const(rand((8,), seed=1))), const(rand((8,), seed=2)))
    model = Model([y], [x])
    check(core, model, [rand((2, 5, 8))], rtol=1e-5, atol=1e-5)
    steps = core.compile_model(model, "CPU")._executable.programs()[((2, 5, 8),)].program.steps()
    assert [s["type"] for s in steps] == ["MVN"], steps


def test_packed_weights_are_released_and_dynamic_replan_still_works(core: Any) -> None:
    """Weights every reader packed are dropped after compiling (C++ and the kept graph), yet a
    dynamic model planned again for a new input shape still reads the original weights."""
    from cpu_testing import evaluate_model
    from opforge.graph import WEIGHTS_RELEASED as RELEASED_KEY

    def block(batch: int | None) -> Model:
        x = param("x", [batch, 8, None if batch is None else 10, None if batch is None else 10])
        w = const(rand((8, 8, 3, 3), seed=1) * 0.2)
        conv = opforge.op("Convolution", x, w, strides=[1, 1], pads_begin=[1, 1], pads_end=[1, 1],
                          dilations=[1, 1], name="conv")
        g, b, m, v = (const(rand((8,), seed=s, low=0.5, high=1.5)) for s in range(2, 6))
        bn = opforge.op("BatchNormInference", conv, g, b, m, v, epsilon=1e-5, name="bn")
        return Model([opforge.op("Relu", bn, name="act")], [x], name="block")

    # Static: the program released the folded weights; the runtime graph keeps a stand-in.
    static = block(1)
    compiled = core.compile_model(static, "CPU")
    feed = rand((1, 8, 10, 10), seed=7)
    np.testing.assert_allclose(compiled([feed])[0], evaluate_model(static, [feed])[0], rtol=1e-4, atol=1e-4)
    (prog,) = compiled._executable.programs().values()
    assert prog.program.released()
    assert prog.model.rt_info.get(RELEASED_KEY)
    # ... and the compiled model's own graph drops them too (planned once: never read again),
    # the weights BatchNorm folding replaced included; small constants stay.
    kept = compiled._executable.model
    assert kept.rt_info.get(RELEASED_KEY)
    released = {n.name for n in kept.get_ordered_ops() if n.rt_info.get(RELEASED_KEY)}
    conv_w = compiled._executable.model.results[0].inputs[0].node.inputs[0].node.inputs[0].node.inputs[1].node
    assert conv_w.name in released and not any(conv_w.attrs.value.strides)  # a zero-byte stand-in
    # The caller's model is untouched.
    assert not static.rt_info.get(RELEASED_KEY)
    assert all(not n.rt_info.get(RELEASED_KEY) for n in static.get_ordered_ops())
    np.testing.assert_allclose(compiled([feed])[0], evaluate_model(static, [feed])[0], rtol=1e-4, atol=1e-4)

    # Dynamic: each shape is planned from the unspecialized model, whose weights stay.
    dynamic = block(None)
    compiled = core.compile_model(dynamic, "CPU")
    for n, hw in ((1, 10), (3, 6), (1, 10), (2, 12)):
        a = rand((n, 8, hw, hw), seed=n + hw)
        np.testing.assert_allclose(compiled([a])[0], evaluate_model(dynamic, [a])[0], rtol=1e-4, atol=1e-4)
    programs = compiled._executable.programs()
    assert len(programs) == 3
    assert all(p.program.released() for p in programs.values())
    assert not compiled._executable.model.rt_info.get(RELEASED_KEY)
