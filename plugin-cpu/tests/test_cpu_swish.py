"""SiLU on CPU: Multiply(x, Sigmoid(x)) becomes Swish (core's FuseSwish, a CPU planning pass),
which a convolution before it applies as a oneDNN post-op (eltwise_swish, alpha = beta = 1); a
standalone Swish runs oneDNN's eltwise in whatever layout its input has, so a blocked tensor
between two convolutions is not reordered to plain and back."""

from __future__ import annotations

from typing import Any

import numpy as np
import opforge
from cpu_testing import const, param
from opforge.graph import Model, Node
from opforge.reference import evaluate_model


def conv(x: Any, cin: int, cout: int, seed: int, name: str, group: bool = False) -> Node:
    rng = np.random.default_rng(seed)
    if group:
        w = const(rng.standard_normal((cout, 1, 1, 3, 3)) * 0.3)
        return opforge.op("GroupConvolution", x, w, strides=[1, 1], pads_begin=[1, 1], pads_end=[1, 1],
                          dilations=[1, 1], name=name)
    w = const(rng.standard_normal((cout, cin, 3, 3)) * (2.0 / (cin * 9)) ** 0.5)
    return opforge.op("Convolution", x, w, strides=[1, 1], pads_begin=[1, 1], pads_end=[1, 1],
                      dilations=[1, 1], name=name)


def silu(x: Any, name: str, sigmoid_first: bool = False) -> Node:
    s = opforge.op("Sigmoid", x, name=f"{name}/sigmoid")
    return opforge.op("Multiply", *((s, x) if sigmoid_first else (x, s)), name=name)


def profile(core: opforge.Core, model: Model, feeds: list[np.ndarray]) -> tuple[list[np.ndarray], list[Any]]:
    compiled = core.compile_model(model, "CPU", {"ENABLE_PROFILING": True})
    req = compiled.create_infer_request()
    res = req.infer({i: f for i, f in enumerate(feeds)})
    outs = [np.asarray(res[i]) for i in range(len(model.outputs))]
    return outs, list(req.get_profiling_info())


def executed(rows: list[Any]) -> list[str]:
    return [r.node_type for r in rows if r.status == "EXECUTED"]


def test_silu_after_a_convolution_is_its_post_op(core: opforge.Core) -> None:
    x = param("x", (1, 8, 12, 12))
    c1 = conv(x, 8, 16, 0, "conv1")
    a1 = silu(c1, "silu1")
    c2 = conv(a1, 16, 16, 1, "conv2")
    a2 = silu(c2, "silu2", sigmoid_first=True)
    model = Model([a2])
    feeds = [np.random.default_rng(2).standard_normal((1, 8, 12, 12)).astype(np.float32) * 3]
    (want,) = evaluate_model(model, feeds)
    (got,), rows = profile(core, model, feeds)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    ran = executed(rows)
    assert "Sigmoid" not in ran and "Multiply" not in ran and "Swish" not in ran, ran
    assert ran.count("Convolution") == 2
    # each convolution's row is named after the last node it absorbed: the Swish made from silu<i>
    fused = {r.node_name: r.extra.get("fused_into") for r in rows if r.status == "OPTIMIZED_OUT"}
    assert fused == {"conv1": "silu1", "conv2": "silu2"}, fused


def test_standalone_swish_keeps_the_blocked_layout_between_convolutions(core: opforge.Core) -> None:
    # the depthwise output has two readers, so the Swish cannot be its post-op: it runs on its
    # own, on the blocked tensor, and the next convolution reads its output as it is
    x = param("x", (1, 16, 14, 14))
    dw = conv(x, 16, 16, 3, "dw", group=True)
    act = silu(dw, "act")
    pw = conv(act, 16, 16, 4, "pw")
    side = conv(dw, 16, 16, 5, "side")
    out = opforge.op("Add", pw, side, name="sum")
    model = Model([out])
    feeds = [np.random.default_rng(6).standard_normal((1, 16, 14, 14)).astype(np.float32)]
    (want,) = evaluate_model(model, feeds)
    (got,), rows = profile(core, model, feeds)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    ran = executed(rows)
    assert ran.count("Swish") == 1 and "Sigmoid" not in ran and "Multiply" not in ran, ran
    (swish,) = [r for r in rows if r.node_type == "Swish" and r.status == "EXECUTED"]
    assert swish.exec_type != "swish", "ran the scalar loop, not oneDNN's eltwise"
    # only the one reorder the plain model output needs, none around the Swish
    assert ran.count("Reorder") <= 1, ran


def test_swish_with_beta_is_not_a_post_op_and_stays_right(core: opforge.Core) -> None:
    # a beta other than 1 (constant, or fed: a value input, constant in each plan) is an input,
    # which a post-op (built from attributes) cannot see: fusing it would compute beta = 1
    x = param("x", (1, 8, 10, 10))
    c = conv(x, 8, 8, 7, "conv")
    sw = opforge.op("Swish", c, const(np.float32(0.75)), name="swish")
    beta = param("beta", ())
    sw2 = opforge.op("Swish", conv(sw, 8, 8, 8, "conv2"), beta, name="swish2")
    model = Model([sw2])
    feeds = [np.random.default_rng(9).standard_normal((1, 8, 10, 10)).astype(np.float32),
             np.array(1.25, np.float32)]
    (want,) = evaluate_model(model, feeds)
    (got,), rows = profile(core, model, feeds)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    assert executed(rows).count("Swish") == 2
