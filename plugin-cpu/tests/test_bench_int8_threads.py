"""benchmarks/bench_int8_threads.py, the int8 1-vs-2-thread profiler: its QDQ chains run every
convolution on int8 bytes, the profile rows are mapped to the chain's convolutions at both
thread counts, and the two thread counts give the same bytes (what the timing relies on).
The timing itself is exercised by running the tool (kernel-library.md, 'int8 at 2 threads')."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import numpy as np
import opforge
from cpu_testing import load_module

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_int8_threads.py"


def _load() -> ModuleType:
    return load_module(SCRIPT)


def _compiled_rows(path: Path, x: np.ndarray, threads: int) -> tuple[np.ndarray, list[tuple[str, str, list[str]]]]:
    core = opforge.Core()
    req = core.compile_model(core.read_model(str(path)), "CPU", {
        "INFERENCE_NUM_THREADS": threads, "ENABLE_PROFILING": True, "INFERENCE_PRECISION_HINT": "f32"},
    ).create_infer_request()
    out = np.asarray(req.infer({"x": x})[0])
    rows = [(r.node_type, r.node_name, list(r.extra.get("fused_names", []))) for r in req.get_profiling_info()
            if r.status == "EXECUTED"]
    return out, rows


def test_chain_convolutions_run_int8_and_agree_across_threads(tmp_path: Path) -> None:
    tool = _load()
    path = tmp_path / "chain.onnx"
    feeds = tool.make_chain(path, 32, 9, 3)
    one, rows = _compiled_rows(path, feeds["x"], 1)
    two, _ = _compiled_rows(path, feeds["x"], 2)
    convs = {tool.conv_key([name, *fused]): node_type for node_type, name, fused in rows
             if tool.conv_key([name, *fused])}
    assert convs == {f"Conv.{i}": "QuantizedConvolution" for i in range(tool.DEPTH)}
    # integer accumulation and one requantization per element: the split cannot change a byte
    np.testing.assert_array_equal(one, two)
    assert np.unique(one).size > 8  # the chain's output is not saturated into a constant


def test_child_reports_every_convolution_at_both_thread_counts(tmp_path: Path) -> None:
    tool = _load()
    path = tmp_path / "chain.onnx"
    feeds_path = tmp_path / "chain.npz"
    np.savez(feeds_path, **tool.make_chain(path, 32, 9, 1))
    result = tool.child("opforge", str(path), str(feeds_path), 3)
    for threads in (1, 2):
        assert sorted(result["conv"][threads]) == [f"Conv.{i}" for i in range(tool.DEPTH)]
        assert all(ms > 0 for ms in result["conv"][threads].values())
        assert result["total"][threads] >= sum(result["conv"][threads].values())
    assert result["sleeps"] >= 0


def test_conv_key_reads_exporter_names() -> None:
    tool = _load()
    assert tool.conv_key(["p2o.relu.3_QuantizeLinear", "Conv.12/Convolution", "Conv.12/Add"]) == "Conv.12"
    assert tool.conv_key(["Conv.7/WithoutBiases"]) == "Conv.7"
    assert tool.conv_key(["Conv.7"]) == "Conv.7"
    assert tool.conv_key(["MaxPool.1", "Concat.3_QuantizeLinear"]) is None
