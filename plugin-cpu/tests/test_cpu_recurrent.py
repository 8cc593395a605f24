"""The CPU device's recurrent sequences (RNNSequence, GRUSequence, LSTMSequence) against the
reference, on both of its implementations: oneDNN's RNN primitives (f32, default activations, no
clip, constant weights, full sequences, a batch above 4) and the GEMM path for everything else
(clip, other activations, per-batch sequence lengths, weights computed at run time, f64), whose
recurrence is PanelGemv (one direction at a time) for f32 with constant R and batch 1 (2 when
bidirectional), and oneDNN matmuls otherwise. Each test also checks which implementation ran, so that a change in the
choice cannot hide a path untested."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cpu_testing import check, single
from opforge.graph import Model

B, T, IN, H = 3, 7, 5, 6
#: the smallest batch that takes oneDNN's RNN primitive in either direction count
PRIM_B = 5
#: bf16 PanelGemv against the f32 reference (R, the state and X rounded to bf16: 2^-9 relative each)
ATOL_BF16 = 6e-3
GATES = {"RNNSequence": 1, "GRUSequence": 3, "LSTMSequence": 4}
DEFAULT_ACTS = {"RNNSequence": ["tanh"], "GRUSequence": ["sigmoid", "tanh"], "LSTMSequence": ["sigmoid", "tanh", "tanh"]}


def inputs(op: str, dirs: int, lengths: list[int], seed: int, lbr: bool = False, dtype: Any = np.float32,
           batch: int = B, seq: int = T, hidden: int = H) -> list[np.ndarray]:
    """X, initial state(s), lengths, W, R, B with seeded random values (weights small enough that
    the gates do not saturate, so a wrong gate order or bias shows)."""
    rng = np.random.default_rng(seed)
    g = GATES[op]

    def u(*shape: int, s: float = 1.0) -> np.ndarray:
        return rng.uniform(-s, s, size=shape).astype(dtype)

    ins = [u(batch, seq, IN), u(batch, dirs, hidden, s=0.5)]
    if op == "LSTMSequence":
        ins.append(u(batch, dirs, hidden, s=0.5))
    ins += [np.array(lengths, np.int32), u(dirs, g * hidden, IN, s=0.6), u(dirs, g * hidden, hidden, s=0.6),
            u(dirs, (4 if lbr else g) * hidden, s=0.6)]
    return ins


def weight_indices(op: str) -> list[int]:
    s = 2 if op == "LSTMSequence" else 1
    return [2 + s, 3 + s, 4 + s]


def run(core: Any, op: str, ins: list[np.ndarray], const_idx: list[int], rtol: float = 1e-4, atol: float = 1e-5,
        threads: int = 2, **attrs: Any) -> str:
    """Checks the node against the reference; returns the implementation the CPU device ran."""
    model, feeds = single(op, ins, {i: ins[i] for i in const_idx}, **attrs)
    config = {"INFERENCE_NUM_THREADS": threads}
    check(core, model, feeds, rtol=rtol, atol=atol, config=config)
    return impl_of(core, model, op, config)


def impl_of(core: Any, model: Model, op: str, config: dict[str, Any]) -> str:
    (prog,) = core.compile_model(model, "CPU", config)._executable.programs().values()
    (impl,) = [s["impl"] for s in prog.program.steps() if s["type"] == op]
    return str(impl)


def lengths_const(op: str) -> int:
    return 2 if op == "LSTMSequence" else 1


CELLS = [("RNNSequence", False), ("GRUSequence", False), ("GRUSequence", True), ("LSTMSequence", False)]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize(("op", "lbr"), CELLS)
def test_onednn_primitive_path(core: Any, op: str, lbr: bool, direction: str, threads: int) -> None:
    # bidirectional at 2 threads: one primitive per direction, the two on their own threads
    dirs = 2 if direction == "bidirectional" else 1
    # a batch of 4 or less takes the GEMM path (faster there)
    batch = PRIM_B
    ins = inputs(op, dirs, [T] * batch, seed=len(op) + 10 * lbr + len(direction), lbr=lbr, batch=batch)
    attrs: dict[str, Any] = {"hidden_size": H, "direction": direction}
    if op == "GRUSequence":
        attrs["linear_before_reset"] = lbr
    impl = run(core, op, ins, [1 + lengths_const(op), *weight_indices(op)], threads=threads, **attrs)
    assert impl.startswith("onednn_rnn"), impl
    assert impl.endswith("+per_direction_threads") == (dirs == 2 and threads == 2), impl


@pytest.mark.parametrize("act", ["relu", "sigmoid"])
def test_vanilla_rnn_other_activations_on_onednn(core: Any, act: str) -> None:
    ins = inputs("RNNSequence", 2, [T] * PRIM_B, seed=3, batch=PRIM_B)
    impl = run(core, "RNNSequence", ins, [2, 3, 4, 5], hidden_size=H, direction="bidirectional", activations=[act])
    assert impl.startswith("onednn_rnn"), impl


@pytest.mark.parametrize(("op", "lbr"), CELLS)
def test_lengths_at_run_time(core: Any, op: str, lbr: bool) -> None:
    # lengths fed per request: full ones run the primitive, shorter ones (and an empty sequence)
    # the GEMM path the kernel carries; both must match the reference in every output
    attrs: dict[str, Any] = {"hidden_size": H, "direction": "bidirectional"}
    if op == "GRUSequence":
        attrs["linear_before_reset"] = lbr
    for lengths in ([T] * PRIM_B, [T, 0, 3, T, 2], [1, T, T, T, T]):
        ins = inputs(op, 2, lengths, seed=sum(lengths), lbr=lbr, batch=PRIM_B)
        impl = run(core, op, ins, weight_indices(op), **attrs)
        assert impl.startswith("onednn_rnn"), impl


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize(("op", "lbr"), CELLS)
def test_gemm_path_short_constant_lengths(core: Any, op: str, lbr: bool, direction: str) -> None:
    dirs = 2 if direction == "bidirectional" else 1
    ins = inputs(op, dirs, [T, 2, 0], seed=7, lbr=lbr)
    attrs: dict[str, Any] = {"hidden_size": H, "direction": direction}
    if op == "GRUSequence":
        attrs["linear_before_reset"] = lbr
    impl = run(core, op, ins, [1 + lengths_const(op), *weight_indices(op)], **attrs)
    assert impl == "rnn_gemm:onednn_matmul", impl


def gemv_batches() -> list[tuple[str, int]]:
    return [("forward", 1), ("reverse", 1), ("bidirectional", 1), ("bidirectional", 2)]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("direction", "batch"), gemv_batches())
@pytest.mark.parametrize(("op", "lbr"), CELLS)
def test_panel_gemv_path(core: Any, op: str, lbr: bool, direction: str, batch: int, threads: int) -> None:
    # batch 1 (2 when bidirectional), constant R: the recurrence as PanelGemv, one direction at a
    # time (side by side at 2 threads when bidirectional); full lengths, then shorter ones (an
    # empty sequence at batch 2), both constant and fed per request
    dirs = 2 if direction == "bidirectional" else 1
    attrs: dict[str, Any] = {"hidden_size": H, "direction": direction}
    if op == "GRUSequence":
        attrs["linear_before_reset"] = lbr
    seed = len(op) + 10 * lbr + len(direction) + batch
    for lengths in ([T] * batch, [4, 0][:batch]):
        ins = inputs(op, dirs, lengths, seed=seed, lbr=lbr, batch=batch)
        for consts in (weight_indices(op), [1 + lengths_const(op), *weight_indices(op)]):
            impl = run(core, op, ins, consts, threads=threads, **attrs)
            assert impl.startswith("rnn_gemm:panel_gemv_"), impl


@pytest.mark.parametrize(("op", "hidden", "inp"), [("LSTMSequence", 37, 3), ("GRUSequence", 70, 9),
                                                  ("RNNSequence", 1, 2), ("LSTMSequence", 16, 1)])
def test_panel_gemv_odd_widths(core: Any, op: str, hidden: int, inp: int) -> None:
    # panels of 32 or 64 gate columns: an odd hidden size (odd K, a partial last panel), a
    # GRU's candidate product of its own width (70), a single-column RNN, an exact panel; one
    # row per product and two
    lbr = False
    rng = np.random.default_rng(hidden)
    g = GATES[op]
    for batch in (1, 2):
        s = 1.0 / np.sqrt(hidden)
        ins = [rng.uniform(-1, 1, (batch, T, inp)).astype(np.float32),
               rng.uniform(-0.5, 0.5, (batch, 2, hidden)).astype(np.float32)]
        if op == "LSTMSequence":
            ins.append(rng.uniform(-0.5, 0.5, (batch, 2, hidden)).astype(np.float32))
        ins += [np.array([T] * batch, np.int32), rng.uniform(-s, s, (2, g * hidden, inp)).astype(np.float32),
                rng.uniform(-s, s, (2, g * hidden, hidden)).astype(np.float32),
                rng.uniform(-s, s, (2, (4 if lbr else g) * hidden)).astype(np.float32)]
        impl = run(core, op, ins, [1 + lengths_const(op), *weight_indices(op)], hidden_size=hidden,
                   direction="bidirectional")
        assert impl.startswith("rnn_gemm:panel_gemv_"), impl


#: runs the PanelGemv tests of this file under another ISA (ONEDNN_MAX_CPU_ISA caps the one
#: PanelGemv picks, as it caps oneDNN's); prints the implementation name last
ISA_SCRIPT = """
import sys
import opforge
from cpu_testing import make_plugins
import test_cpu_recurrent as t
core = opforge.Core(plugins=make_plugins())
for op, lbr in t.CELLS:
    t.test_panel_gemv_path(core, op, lbr, "bidirectional", 2, 2)
    t.test_panel_gemv_path(core, op, lbr, "reverse", 1, 1)
for case in [("LSTMSequence", 37, 3), ("GRUSequence", 70, 9), ("RNNSequence", 1, 2)]:
    t.test_panel_gemv_odd_widths(core, *case)
ins = t.inputs("LSTMSequence", 2, [t.T], seed=1, batch=1)
print(t.run(core, "LSTMSequence", ins, t.weight_indices("LSTMSequence"), hidden_size=t.H, direction="bidirectional"))
"""


@pytest.mark.parametrize(("isa", "kernel"), [("AVX2", "avx2"), ("SSE41", "x86-64")])
def test_panel_gemv_other_isas(isa: str, kernel: str) -> None:
    # the AVX2 kernel (panels of 32) and the baseline one (GCC's generic vectors), on this host
    here = str(Path(__file__).resolve().parent)
    env = {**os.environ, "ONEDNN_MAX_CPU_ISA": isa, "PYTHONPATH": os.pathsep.join([here, os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", ISA_SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == f"rnn_gemm:panel_gemv_{kernel}", proc.stdout


@pytest.mark.parametrize(("direction", "batch"), gemv_batches())
@pytest.mark.parametrize(("op", "lbr"), CELLS)
def test_panel_gemv_bf16_hint(core: Any, op: str, lbr: bool, direction: str, batch: int) -> None:
    # INFERENCE_PRECISION_HINT=bf16: R (and each step's state) rounded to bf16, f32 sums; within
    # bf16's rounding of the f32 reference, and not the f32 result (so bf16 did run)
    import opforge_cpu._core as cpu_core

    if not cpu_core.native_bf16():
        pytest.skip("no bf16 dot products on this host")
    dirs = 2 if direction == "bidirectional" else 1
    attrs: dict[str, Any] = {"hidden_size": 37, "direction": direction}
    if op == "GRUSequence":
        attrs["linear_before_reset"] = lbr
    ins = inputs(op, dirs, [T, 3][:batch], seed=41 + batch, lbr=lbr, batch=batch, hidden=37)
    # R scaled to a spectral radius below 1 (about 0.5), as a trained network's: with the
    # helper's, the vanilla RNN's map is expanding (radius ~2) and grows a bf16 rounding
    # difference step by step
    ins[weight_indices(op)[1]] *= 0.25
    model, feeds = single(op, ins, {i: ins[i] for i in [1 + lengths_const(op), *weight_indices(op)]}, **attrs)
    config = {"INFERENCE_PRECISION_HINT": "bf16"}
    assert impl_of(core, model, op, config) == "rnn_gemm:panel_gemv_avx512_bf16"
    got = check(core, model, feeds, rtol=0, atol=ATOL_BF16, config=config)
    exact = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})(feeds).to_tuple()
    assert not np.array_equal(got[0], exact[0])


@pytest.mark.parametrize("batch", [1, 4, 5])
def test_one_direction_small_batch_takes_gemm_path(core: Any, batch: int) -> None:
    ins = inputs("GRUSequence", 1, [T] * batch, seed=31, lbr=True, batch=batch)
    impl = run(core, "GRUSequence", ins, [2, 3, 4, 5], hidden_size=H, linear_before_reset=True)
    assert impl.startswith("rnn_gemm" if batch <= 4 else "onednn_rnn"), impl


@pytest.mark.parametrize(("op", "lbr"), CELLS)
def test_gemm_path_clip_and_activations(core: Any, op: str, lbr: bool) -> None:
    acts = {"RNNSequence": ["relu"], "GRUSequence": ["sigmoid", "relu"],
            "LSTMSequence": ["tanh", "sigmoid", "relu"]}[op]
    ins = inputs(op, 2, [T] * B, seed=11, lbr=lbr)
    ins[0] = ins[0] * 3  # larger pre-activations, so that the clip bites
    attrs: dict[str, Any] = {"hidden_size": H, "direction": "bidirectional", "clip": 0.9, "activations": acts}
    if op == "GRUSequence":
        attrs["linear_before_reset"] = lbr
    impl = run(core, op, ins, [1 + lengths_const(op), *weight_indices(op)], **attrs)
    assert impl == "rnn_gemm:onednn_matmul", impl
    # batch 1: the same with PanelGemv for the recurrence
    ins = inputs(op, 2, [T], seed=12, lbr=lbr, batch=1)
    ins[0] = ins[0] * 3
    impl = run(core, op, ins, [1 + lengths_const(op), *weight_indices(op)], **attrs)
    assert impl.startswith("rnn_gemm:panel_gemv_"), impl


@pytest.mark.parametrize(("op", "lbr"), CELLS)
def test_gemm_path_weights_at_run_time(core: Any, op: str, lbr: bool) -> None:
    ins = inputs(op, 2, [T, 4, T], seed=13, lbr=lbr)
    attrs: dict[str, Any] = {"hidden_size": H, "direction": "bidirectional"}
    if op == "GRUSequence":
        attrs["linear_before_reset"] = lbr
    impl = run(core, op, ins, [], **attrs)
    assert impl == "rnn_gemm:onednn_matmul", impl


@pytest.mark.parametrize(("op", "lbr"), CELLS)
def test_f64(core: Any, op: str, lbr: bool) -> None:
    ins = inputs(op, 2, [T, 3, T], seed=17, lbr=lbr, dtype=np.float64)
    attrs: dict[str, Any] = {"hidden_size": H, "direction": "bidirectional"}
    if op == "GRUSequence":
        attrs["linear_before_reset"] = lbr
    impl = run(core, op, ins, weight_indices(op), rtol=1e-10, atol=1e-12, **attrs)
    assert impl == "rnn_gemm:f64", impl


@pytest.mark.parametrize("op", ["GRUSequence", "LSTMSequence"])
def test_longer_sequence_wider_state(core: Any, op: str) -> None:
    # enough steps and width for f32 rounding to accumulate; every path stays close to the f64 reference
    ins = inputs(op, 2, [40] * PRIM_B, seed=19, batch=PRIM_B, seq=40, hidden=48)
    consts = [1 + lengths_const(op), *weight_indices(op)]
    impl = run(core, op, ins, consts, rtol=1e-4, atol=1e-4, hidden_size=48, direction="bidirectional")
    assert impl.startswith("onednn_rnn"), impl
    ins[1 + lengths_const(op)] = np.array([40, 33, 40, 1, 40], np.int32)
    impl = run(core, op, ins, consts, rtol=1e-4, atol=1e-4, hidden_size=48, direction="bidirectional")
    assert impl == "rnn_gemm:onednn_matmul", impl
    ins = inputs(op, 2, [40, 33], seed=20, batch=2, seq=40, hidden=48)
    impl = run(core, op, ins, consts, rtol=1e-4, atol=1e-4, hidden_size=48, direction="bidirectional")
    assert impl.startswith("rnn_gemm:panel_gemv_"), impl


@pytest.mark.parametrize("batch", [2, B])
@pytest.mark.parametrize("lengths_fed", [False, True])
def test_concurrent_requests_equal_serial(core: Any, lengths_fed: bool, batch: int) -> None:
    # requests at once on one compiled bidirectional LSTM: per-request scratch and streams (the
    # per-direction threads), and, with lengths fed, the GEMM path some requests take; batch 2
    # runs PanelGemv (the directions on their own threads), batch 3 the primitive
    op = "LSTMSequence"
    base = inputs(op, 2, [T] * batch, seed=23, batch=batch)
    consts = weight_indices(op) + ([] if lengths_fed else [3])
    model, _ = single(op, base, {i: base[i] for i in consts}, hidden_size=H, direction="bidirectional")
    compiled = core.compile_model(model, "CPU", {"NUM_STREAMS": 4, "INFERENCE_NUM_THREADS": 2})
    feeds = []
    for k in range(4):
        lengths = [T] * batch
        if lengths_fed:
            lengths[1] = T - k
        ins = inputs(op, 2, lengths, seed=30 + k, batch=batch)
        feeds.append([ins[i] for i in range(len(ins)) if i not in consts])
    serial = [[o.copy() for o in compiled.create_infer_request().infer(f).to_tuple()] for f in feeds]
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        req = compiled.create_infer_request()
        try:
            for _ in range(20):
                for got, want in zip(req.infer(feeds[i]).to_tuple(), serial[i]):
                    np.testing.assert_array_equal(got, want)
        except BaseException as err:  # noqa: BLE001 - reported by the main thread
            errors.append(err)

    workers = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    assert not errors, errors[0]


@pytest.mark.parametrize("lengths", [[3] * 64, [3, 1] * 32])
def test_wide_step_threads(core: Any, lengths: list[int]) -> None:
    # batch 64, hidden 512: a step wide enough (134 MFLOP) for the recurrence to use 2 threads,
    # in the primitive (full lengths) and in the GEMM path's per-step products (short ones)
    op = "LSTMSequence"
    ins = inputs(op, 1, lengths, seed=29, batch=64, seq=3, hidden=512)
    impl = run(core, op, ins, [3, *weight_indices(op)], atol=1e-4, hidden_size=512)
    assert impl.startswith("onednn_rnn" if min(lengths) == 3 else "rnn_gemm"), impl


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the reference's NaN arithmetic
@pytest.mark.parametrize(("op", "dirs", "batch", "clip"), [("LSTMSequence", 2, 6, 0.0), ("GRUSequence", 1, 6, 0.0),
                                                          ("GRUSequence", 1, 2, 0.0), ("LSTMSequence", 1, 2, 0.5)])
def test_nan_and_inf_inputs(core: Any, op: str, dirs: int, batch: int, clip: float) -> None:
    # a NaN and an inf in X spread through their own batch element only, as in the reference,
    # on the primitive (first two) and the GEMM path (vectorised activations, clip)
    ins = inputs(op, dirs, [T] * batch, seed=37, batch=batch)
    ins[0][0, 2, 1] = np.nan
    ins[0][1, 3, 0] = np.inf
    run(core, op, ins, [1 + lengths_const(op), *weight_indices(op)], hidden_size=H,
        direction="bidirectional" if dirs == 2 else "forward", clip=clip)
